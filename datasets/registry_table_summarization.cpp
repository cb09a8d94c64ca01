// Built-in summarization datasets: SAMSum, DialogSum, AESLC, BBC News Summary (from the mirror) and
// Debian package descriptions -> synopsis (prepared from the Debian archive with apt).
//
// The mirror's plain/ files hold one example per line with \ CR LF TAB escaped as \\ \r \n \t
// (DatasetSpec::escaped); read_field returns the original strings.
#include "datasets/registry_table.h"

namespace pillars::data::table {

DatasetSpec samsum() {
  DatasetSpec d;
  d.name = "samsum";
  d.task = Task::summarization;
  d.description = "SAMSum: messenger-style dialogues with abstractive summaries (authors' release)";
  d.sources = {"https://arxiv.org/src/1911.12237v2/anc/corpus.7z (Gliwa et al. 2019)"};
  d.license = "CC BY-NC-ND 4.0 (Samsung), non-commercial research";
  d.train = "train", d.valid = "val", d.test = "test";
  d.escaped = true;
  d.notes =
      "source = dialogue (turns separated by \\r\\n or \\n), summary = the reference, id = the example id. "
      "train has one empty dialogue (id 13828807).";
  d.files = {
      {"README.txt", 1593, 22, "9198db41144ec43302d8c3356b2c3f0583ba726985ee36a07d4e046aaabaefdf"},
      {"licence.txt", // the archive's own file name; spelling: kept
       19127, 403, "38762e3777f4ec00a6f769062a7c3f704fb78ce08303ecff88558da4c49cf9ea"},
      {"plain/test.dialogue", 445653, 819, "e51ad90578f4a8767d29c4fbdbd87330c14a0cdd0d459d936c0ca38868abfb0a"},
      {"plain/test.id", 7411, 819, "e1ccf1b3f68f89df53d3be3302a8566af8d645d9bc776cfc0b5604651cbdd644"},
      {"plain/test.summary", 89927, 819, "99d63e9f296afa2dd64988a7dedac38968bcd72ecf7f760be44177c73d03ea54"},
      {"plain/train.dialogue", 7856618, 14732, "ccb38189f11290e48cbd3b6ea3a4caea1c4ba4a514a21943b8f410bcf3fe91d0"},
      {"plain/train.id", 133548, 14732, "b317c97da9f8ccecf864a571f4cd26cf8a68be80461b98ab293b5e65acc42323"},
      {"plain/train.summary", 1637493, 14732, "61f5ff07712c39bd70d0d6abd22a6a187cdd41abe72d548c1d08e060a4de231a"},
      {"plain/val.dialogue", 425791, 818, "2644027c72524d822b237c82078fb87cd7f699d7824251f4b7031c7289694f35"},
      {"plain/val.id", 7406, 818, "4aa0316014fc68a382a817924d6307bc1bb82d4de2e553ca9bc9c000d3b5a7fb"},
      {"plain/val.summary", 90954, 818, "f45b397db44761dfe68095c2c3b394c6b1ebc62310b6bcdb348af34435963151"},
      {"test.json", 590609, 4096, "eb5ac232d04982fdf70766b10bd07223732d8de0b817a0ab2a30a79ea99a693a"},
      {"train.json", 10484215, 73661, "c0df0898ad4322462cb73959f0ca820b31c4dc27e44b1ef64fbc34f7e12f1cb5"},
      {"val.json", 571716, 4091, "f291b34ea2a851c4fd67bc9e1c05003f0dde2c2ae1a501ba733b9d97b6166349"},
  };
  for (const auto& [s, n] : {std::pair<std::string, uint64_t>{"train", 14732}, {"val", 818}, {"test", 819}})
    d.splits.push_back(split(s, n,
                             {{"source", "plain/" + s + ".dialogue"},
                              {"summary", "plain/" + s + ".summary"},
                              {"id", "plain/" + s + ".id"}}));
  d.assets = {{"json.train", "train.json"},
              {"json.val", "val.json"},
              {"json.test", "test.json"},
              {"readme", "README.txt"},
              {"licence", "licence.txt"}}; // the archive's file name; spelling: kept
  return d;
}

DatasetSpec dialogsum() {
  DatasetSpec d;
  d.name = "dialogsum";
  d.task = Task::summarization;
  d.description = "DialogSum: spoken dialogues with abstractive summaries (test: 3 references)";
  d.sources = {"https://github.com/cylnlp/dialogsum (Chen et al., Findings of ACL 2021)"};
  d.license = "CC BY-NC-SA 4.0";
  d.train = "train", d.valid = "dev", d.test = "test";
  d.escaped = true;
  d.notes =
      "source = dialogue, summary = summary (test: summary/summary2/summary3 = summary1/2/3 of the release), "
      "topic (test: topic/topic2/topic3), id = fname. train is the authors' 2021-05 first release (about 1% "
      "of dialogues may differ from today's official train by quote normalization).";
  const std::string repo =
      "https://raw.githubusercontent.com/cylnlp/dialogsum/848cc8c05e0a04def79326539de827f1b28786a0/DialogSum_Data/";
  d.files = {
      {"dialogsum.dev.jsonl", 471830, 500, "436721e0a3571eef7072964f80e042fb151d8c6178db1a688ce8f803bbf0a13f",
       repo + "dialogsum.dev.jsonl"},
      {"dialogsum.test.jsonl", 639707, 500, "6de36eca7e7b9b10975fd5ea3f47391df172d8b3c15d03d84d763cbaab015fda",
       repo + "dialogsum.test.jsonl"},
      {"dialogsum.train.jsonl", 12069751, 12460, "648981a510862da474dd94a29bc0588748297a7eaa2e3c2895f387dfad56155f"},
      {"original-2021-05/dialogsum.train.jsonl", 12070809, 12459,
       "816b335d236908c94d28171b8907e7ad362f3e387774f39f44f3cd630de938bf"},
      {"plain/dev.dialogue", 368383, 500, "a55bd707d29c23e2909cdcfaa09b1128c57e214b10245b43a08c045743623410"},
      {"plain/dev.fname", 3890, 500, "790ae30109a2f81b2a31b3584ff85c30350eb464b7c4eeb4a9c4bda1aa932441"},
      {"plain/dev.summary", 65477, 500, "bcd2a191bcb790d0605be1b7d728a8c0f9fdd63bad9177f37852f8ca342a3dd4"},
      {"plain/dev.topic", 7080, 500, "2a546098c7b674df4f04a6d7182f35630d92cf6bef2959c27b36a52049b9de37"},
      {"plain/test.dialogue", 383515, 500, "8f174043f754b7f652b98636ccdea1547b552cd75f393652b544369e0f05b0c3"},
      {"plain/test.fname", 4390, 500, "daf64bd6050b35d091a699889f57539ad3cfabd15691b49a48253f93b42f35e7"},
      {"plain/test.summary1", 58784, 500, "aedb96719001dddd47901aefd2a259def35dfaff35279d1c0368fdbbfc3bbd5f"},
      {"plain/test.summary2", 57609, 500, "fe1dfa20f45da82233165d3d8bcfeb0bc0e5387ec4b97ebc7db1650b062c8d4f"},
      {"plain/test.summary3", 56889, 500, "b4ad293ea77fa6eef111392da0c2d4d6adf46c37e1defc921d0af877a15f37ec"},
      {"plain/test.topic1", 7367, 500, "4b1e63a91c01d01f95513461f86ed602ceae66f8f31c3c7b3007cfe60cdd2135"},
      {"plain/test.topic2", 7482, 500, "f830b51374d366ffadcc84f681142b375f93057353482a219c74b3bee3e9ebcd"},
      {"plain/test.topic3", 7671, 500, "488df7109c3dbbb06e3957edd5cdaba8cfa1f6b520d1c02d7a9bef6e6fbc33a1"},
      {"plain/train.dialogue", 9317302, 12460, "941d0eea8f2eabf9a57549812f9b9666a591b6fc5bc4a5bfc009d8d6b93103c5"},
      {"plain/train.fname", 138410, 12460, "254934a56439324155b64d050571c80b9d5a6d3f2fb2339318168acacab08f59"},
      {"plain/train.summary", 1766013, 12460, "ab2018d666996a40014bfca2c97fcf072d5c1a7905fbad3af6c16a95e73c3177"},
      {"plain/train.topic", 174256, 12460, "f1af32c5135696dca6af5e8ab2609a08f283bdf0c9ec8e7bcd4cfa596f3aa893"},
  };
  for (const auto& [s, n] : {std::pair<std::string, uint64_t>{"train", 12460}, {"dev", 500}})
    d.splits.push_back(split(s, n,
                             {{"source", "plain/" + s + ".dialogue"},
                              {"summary", "plain/" + s + ".summary"},
                              {"topic", "plain/" + s + ".topic"},
                              {"id", "plain/" + s + ".fname"}}));
  d.splits.push_back(split("test", 500,
                           {{"source", "plain/test.dialogue"},
                            {"summary", "plain/test.summary1"},
                            {"summary2", "plain/test.summary2"},
                            {"summary3", "plain/test.summary3"},
                            {"topic", "plain/test.topic1"},
                            {"topic2", "plain/test.topic2"},
                            {"topic3", "plain/test.topic3"},
                            {"id", "plain/test.fname"}}));
  d.assets = {{"jsonl.train", "dialogsum.train.jsonl"},
              {"jsonl.dev", "dialogsum.dev.jsonl"},
              {"jsonl.test", "dialogsum.test.jsonl"},
              {"jsonl.train-2021-05", "original-2021-05/dialogsum.train.jsonl"}};
  return d;
}

DatasetSpec aeslc() {
  DatasetSpec d;
  d.name = "aeslc";
  d.task = Task::summarization;
  d.description = "AESLC: Enron email body -> subject line (dev/test: 3 extra human annotations)";
  d.sources = {"https://github.com/ryanzhumich/AESLC (commit 7afc087a1cc234d07121f0d4a2d87102ddceabc2)"};
  d.license = "CC BY-NC-SA 4.0";
  d.train = "train", d.valid = "dev", d.test = "test";
  d.escaped = true;
  d.notes =
      "source = email body, summary = original subject; dev/test also summary2/summary3/summary4 = the "
      "annotations ann0/ann1/ann2. id = the file name without .subject.";
  d.files = {
      {"AESLC_original.tar", 29276160, 206962, "9ec94880d0cf2faf4c13ae8fd0add7bb5fb0488ec909d21a9a69c0c37165f738"},
      {"plain/dev.ann0", 62429, 1960, "11cc9de32883ca731ed0cc969646ea1586b8378ce7c7f0e2c132a7584f8bcb55"},
      {"plain/dev.ann1", 66437, 1960, "a3d2da10c324a29462d6cbbe9f2074e5496f042b4f297079a859e308acd4f7b3"},
      {"plain/dev.ann2", 64595, 1960, "9a8183c187fafd6afa55f1b290b473d46c8558b4c25cccbc399ccba2a9151200"},
      {"plain/dev.email", 1603297, 1960, "192e6d3a04d0c71339e53fd561fbb3b554dd84284656dadee63bfd226449d979"},
      {"plain/dev.id", 37051, 1960, "373e7315e96a50f9216ab28104ac8d68273465f16251c268bee622468920ccfc"},
      {"plain/dev.subject", 55430, 1960, "7ef6872a5fa8a398d726b82169b922f0cddd1ae19ba32b53de4a4067edbb2e0a"},
      {"plain/test.ann0", 64086, 1906, "ad57a6238bbb404fb2a10a7a3ec44ff557dd67a08ce08777f5584331f1cc4a11"},
      {"plain/test.ann1", 66040, 1906, "e0feefc1ae4dd6921bb5e0630b435c1d1abaaa9d7ad7887375509bb422f52e16"},
      {"plain/test.ann2", 65340, 1906, "ae286e09bf77a5440ce34289a31e59f4a2a86e5739b879b3301520b45441cfd6"},
      {"plain/test.email", 1328442, 1906, "aa6dbbec189365850796e1e55e0f30c38a1acf7676d019c4e755bb70940b7d8a"},
      {"plain/test.id", 36049, 1906, "11e18dbec659c834589a3f693518f02de589c0644ad6dbf284c0d5cfa2891761"},
      {"plain/test.subject", 53317, 1906, "ed5107fe1db2d8a8ceade6dd2f4634f75275c3a4804425811ab5ed8af6cb199b"},
      {"plain/train.email", 11507394, 14436, "a652e46443ea25ee3a46152030143b8e20c562a3c2c08590d7c2c399dd9f93e8"},
      {"plain/train.id", 273336, 14436, "59249946ef99dd1b03bdf8b5594b8c3df285c26c91184c052bc04e2f34506bda"},
      {"plain/train.subject", 392592, 14436, "68868fee93360f780936c64bbda8969034d8e16afbbb245d95dbcc6f5d02b8b5"},
  };
  d.splits.push_back(split(
      "train", 14436, {{"source", "plain/train.email"}, {"summary", "plain/train.subject"}, {"id", "plain/train.id"}}));
  for (const auto& [s, n] : {std::pair<std::string, uint64_t>{"dev", 1960}, {"test", 1906}})
    d.splits.push_back(split(s, n,
                             {{"source", "plain/" + s + ".email"},
                              {"summary", "plain/" + s + ".subject"},
                              {"summary2", "plain/" + s + ".ann0"},
                              {"summary3", "plain/" + s + ".ann1"},
                              {"summary4", "plain/" + s + ".ann2"},
                              {"id", "plain/" + s + ".id"}}));
  d.assets = {{"original", "AESLC_original.tar"}};
  return d;
}

DatasetSpec bbc_news_summary() {
  DatasetSpec d;
  d.name = "bbc-news-summary";
  d.task = Task::summarization;
  d.description = "BBC News Summary (Kaggle): 2,225 articles with extractive summaries, whitespace collapsed";
  d.sources = {"https://www.kaggle.com/datasets/pariza/bbc-news-summary (BBC corpus of Greene & Cunningham 2006)"};
  d.license = "(c) BBC; non-commercial research use";
  d.train = "train", d.valid = "valid", d.test = "test";
  // No official split. By index in the files' order (category, then file name), so every split
  // samples all five categories evenly: i % 10 == 8 valid, == 9 test, else train.
  d.notes =
      "Pillars split (no official one): example i (0-based, ids.txt order) is valid if i % 10 == 8, test if "
      "i % 10 == 9, else train. Summaries are extractive (sentences copied from the article).";
  d.files = {
      {"BBC_News_Summary_original.tar", 10700800, 23525,
       "c1088e9482fea417783440d84f6a86703c1e2741ea03b26f62e98559ce3669b8"},
      {"articles.txt", 5030422, 2225, "ff3cf7d92b77418c7e43b104d4c2e26b8f12cacac374a72bf97971c7845bc806"},
      {"ids.txt", 27718, 2225, "c4d0f8a606e7573ac0dba5c8b570e92e35c17e04734162fd304d62aafb3a57da"},
      {"summaries.txt", 2229080, 2225, "2a4dc3facf2f2e65bfc6c669ce9a78925622656e77df537f8bd9b5aa0d326c32"},
  };
  const std::vector<NamedFile> fields = {{"source", "articles.txt"}, {"summary", "summaries.txt"}, {"id", "ids.txt"}};
  d.splits = {split("train", 1781, fields, modulo(10, {0, 1, 2, 3, 4, 5, 6, 7})),
              split("valid", 222, fields, modulo(10, {8})), split("test", 222, fields, modulo(10, {9}))};
  d.assets = {{"original", "BBC_News_Summary_original.tar"}};
  return d;
}

DatasetSpec debian_synopsis() {
  DatasetSpec d;
  d.name = "debian-synopsis";
  d.task = Task::summarization;
  d.origin = Origin::prepared;
  d.description = "Debian 12 package descriptions -> one-line synopsis (main, English)";
  d.sources = {"apt: deb http://deb.debian.org/debian bookworm main (Translation-en + amd64 Packages)"};
  d.license = "each package's own (DFSG-free); descriptions are package metadata";
  d.train = "train", d.valid = "valid", d.test = "test";
  d.escaped = true;
  d.notes =
      "Built by `pillars data prepare debian-synopsis`. source = the long description (continuation lines "
      "without their leading space, ' .' lines as empty lines, joined with \\n), summary = the synopsis, "
      "id = the binary package. Records with no long description and exact duplicate (source, summary) "
      "pairs (first kept, in package order) are dropped. Split by source package (Source: of the amd64 "
      "Packages index, else the package name): md5(name) as an integer mod 100 in 0-4 -> test, 5-9 -> "
      "valid, else train. Frozen: a point release that edits descriptions changes the checksums, and "
      "prepare then fails rather than produce a different dataset under the same name.";
  // Frozen from `pillars data prepare debian-synopsis` on 2026-11-22 (Debian 12.15, InRelease of
  // 2026-07-11): 63,955 described packages, 2,470 duplicate pairs dropped, 61,485 pairs; every hash
  // cross-checked with an independent Python implementation of the rule.
  d.files = {
      {"train.id", 981137, 55101, "73a662800dee62866e3095d67d24e0d6f5281085f616f5fc76268db4957e3a20"},
      {"train.source", 20717995, 55101, "57e323c2a658c8282ee2ee54e97004b32c1097334c344f8a4952ee2e4b5cd2d2"},
      {"train.summary", 2592731, 55101, "f50f575ee8696c165c3b455c7b239c4331dcf1bf4a26cde7b473938b7c66604b"},
      {"valid.id", 55893, 3113, "523f2bb245adbc67a542e186d2718e10946ec4a01472102e45cb9353abd6ea28"},
      {"valid.source", 1131432, 3113, "b852626a9563e403e86bb0ea1c423c1e152cc4c0089bef1150b098e481ef7e33"},
      {"valid.summary", 148940, 3113, "6b6190ebddc7968bdad5b46cf689528189dbc0d78d76d19b79dfe7f443ab90b8"},
      {"test.id", 58314, 3271, "f99383b960551c4d79cad8a5f29b53850a95b9d67f35b251d7894443e1b8ec1d"},
      {"test.source", 1152646, 3271, "be5f08c875046fa71c8c5b6ef5e1209fc43fe73d823fe9657a0fac065ccbe6d7"},
      {"test.summary", 152351, 3271, "9e08d71125e646b01ea89ad96336a1049b9b8ae4d82c9c5da8f90dfd77643c5a"},
  };
  for (const auto& [s, n] : {std::pair<std::string, uint64_t>{"train", 55101}, {"valid", 3113}, {"test", 3271}})
    d.splits.push_back(split(s, n, {{"source", s + ".source"}, {"summary", s + ".summary"}, {"id", s + ".id"}}));
  return d;
}

} // namespace pillars::data::table
