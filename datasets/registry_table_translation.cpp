// Built-in translation datasets: Multi30k (de-en) and IWSLT'14 (de-en, valid/test + a train sample).
#include "datasets/registry_table.h"

namespace pillars::data::table {

DatasetSpec multi30k_de_en() {
  DatasetSpec d;
  d.name = "multi30k-de-en";
  d.task = Task::translation;
  d.description = "Multi30k task 1, German-English image captions (official repo, corrected German)";
  d.sources = {"https://github.com/multi30k/dataset (commit a3d2e0d26b56f3846f66a952536ffed4e401d05a, data/task1/)"};
  d.license = "research use (Flickr30k captions, Multi30k translations)";
  d.train = "train", d.valid = "val", d.test = "test_2016_flickr";
  d.notes =
      "de/en = raw cased text (raw/), de.tok/en.tok = official Moses lowercased, normalized, "
      "tokenized text (tok/). The German val/test_2016 references are the corrected ones; "
      "torchtext-era copies differ in 61/150 German lines.";
  // raw/ is served gzipped by the official repo, tok/ as is; both pinned to the commit above.
  const std::string repo =
      "https://raw.githubusercontent.com/multi30k/dataset/a3d2e0d26b56f3846f66a952536ffed4e401d05a/data/task1/";
  d.files = {
      {"raw/test_2016_flickr.de", 70649, 1000, "4be6b5b3236b79c25475c6bb829800a7ce559e9ba7a1f6c2394fe4d40be46d16",
       repo + "raw/test_2016_flickr.de.gz"},
      {"raw/test_2016_flickr.en", 62076, 1000, "399a4382932c1aadd3ceb9bef1008d388a64c76d4ae4e9d4728c6f4301cac182",
       repo + "raw/test_2016_flickr.en.gz"},
      {"raw/test_2017_flickr.de", 64059, 1000, "c3078bc3b36808bf9d20eb2347ed6137016179ef59ec0d2b9b8ecc3fb2880081",
       repo + "raw/test_2017_flickr.de.gz"},
      {"raw/test_2017_flickr.en", 55242, 1000, "ce1450ddc5ab0834502579d77a170849952e15a2938b34cc503bdc25ebb4fb98",
       repo + "raw/test_2017_flickr.en.gz"},
      {"raw/test_2017_mscoco.de", 29906, 461, "58277df3c75f92f7145a11b910b553d1cf82c439249d4dc237c899609eafac22",
       repo + "raw/test_2017_mscoco.de.gz"},
      {"raw/test_2017_mscoco.en", 24949, 461, "43051fdfa86fd5395182e718a94ca67b1b227b9f7c79596ff0f6b813216981d2",
       repo + "raw/test_2017_mscoco.en.gz"},
      {"raw/test_2018_flickr.de", 80893, 1071, "39fcc8b3331d76fb42d648d019c6898b0d5e58baac87bc2a0bb93f44ec8db207",
       repo + "raw/test_2018_flickr.de.gz"},
      {"raw/test_2018_flickr.en", 70603, 1071, "4e585c2dd525911a6ea7730e9d0b516239af3f1b1ffae6a2130223cfb639f25e",
       repo + "raw/test_2018_flickr.en.gz"},
      {"raw/train.de", 2110398, 29000, "2c2b73fd2b548fbcde3a875e0a78d6ee94d498bfdee6bd3eae3945779e9ddf72",
       repo + "raw/train.de.gz"},
      {"raw/train.en", 1801238, 29000, "460a15fbd157e34a7a9957ee388c1ca247fe47af3ef25fb50442af6c274e0fc6",
       repo + "raw/train.en.gz"},
      {"raw/val.de", 75981, 1014, "660e09eb7e1da2f856ea13ee5ad3cf6d36b3d5b0b733c857e94c5747a3dfc660",
       repo + "raw/val.de.gz"},
      {"raw/val.en", 63297, 1014, "1f2a23d992769b5b3d209b0a10dd0b77c08cceb1f20dfb97ed0aafa49d107227",
       repo + "raw/val.en.gz"},
      {"tok/test_2016_flickr.lc.norm.tok.de", 71917, 1000,
       "c6a33d39d48f9f510de147651316cd9d918e09ad0219df734a2f16b6baccacc4",
       repo + "tok/test_2016_flickr.lc.norm.tok.de"},
      {"tok/test_2016_flickr.lc.norm.tok.en", 63307, 1000,
       "5b7f32627cf99eced828311b955dae9800bb52bc8b91cf8b6526829e605b29d2",
       repo + "tok/test_2016_flickr.lc.norm.tok.en"},
      {"tok/test_2017_flickr.lc.norm.tok.de", 65228, 1000,
       "02067e4a9402786a4fcb8c1b6f4307e4a5073ced64800abead5273b54f5f31f6",
       repo + "tok/test_2017_flickr.lc.norm.tok.de"},
      {"tok/test_2017_flickr.lc.norm.tok.en", 56123, 1000,
       "c9d1dfd7a26add989382e534af235af9f0f658b2a30e7eb0efdaf142496ee54f",
       repo + "tok/test_2017_flickr.lc.norm.tok.en"},
      {"tok/test_2017_mscoco.lc.norm.tok.de", 30464, 461,
       "e2825990b8a4e5289d2cdba801d57c187810bab9b4f5d87a30c35800a0d871b6",
       repo + "tok/test_2017_mscoco.lc.norm.tok.de"},
      {"tok/test_2017_mscoco.lc.norm.tok.en", 25380, 461,
       "fe69ae004d71c42ead0301e70c57de5b1b6b5fb7f52210d42b22801e98e656f3",
       repo + "tok/test_2017_mscoco.lc.norm.tok.en"},
      {"tok/test_2018_flickr.lc.norm.tok.de", 82274, 1071,
       "45ce6b121708adf538d3a8c71dc1acbcb1e0f2bca74ace8e58652f9ea5b96335",
       repo + "tok/test_2018_flickr.lc.norm.tok.de"},
      {"tok/test_2018_flickr.lc.norm.tok.en", 71617, 1071,
       "a66e25cbb8323d74a40873dcd222659f39e30ee7687a6ed5445833aed0673239",
       repo + "tok/test_2018_flickr.lc.norm.tok.en"},
      {"tok/train.lc.norm.tok.de", 2150008, 29000, "cb5a23529b65ec2061f1dc446192a9c37382b63cc75f81a0be59d34894b3a505",
       repo + "tok/train.lc.norm.tok.de"},
      {"tok/train.lc.norm.tok.en", 1837696, 29000, "08925f8e0572bcd5a006702fc5fe20e2d77c6917d4eebd576fc20de6693c2119",
       repo + "tok/train.lc.norm.tok.en"},
      {"tok/val.lc.norm.tok.de", 77273, 1014, "97232bd273eceb7207f689527386a97e4be2616b18ada47576bdaf96c8ae1f00",
       repo + "tok/val.lc.norm.tok.de"},
      {"tok/val.lc.norm.tok.en", 64608, 1014, "46573ce391ae227f1c72f873392436a20ef18e0a6d518098cfbd70b77c8572ec",
       repo + "tok/val.lc.norm.tok.en"},
  };
  // Every split has the same four fields; only the file stem and the size differ.
  const std::pair<const char*, uint64_t> splits[] = {{"train", 29000},           {"val", 1014},
                                                     {"test_2016_flickr", 1000}, {"test_2017_flickr", 1000},
                                                     {"test_2017_mscoco", 461},  {"test_2018_flickr", 1071}};
  for (const auto& [stem, n] : splits) {
    const std::string s = stem;
    d.splits.push_back(split(s, n,
                             {{"de", "raw/" + s + ".de"},
                              {"en", "raw/" + s + ".en"},
                              {"de.tok", "tok/" + s + ".lc.norm.tok.de"},
                              {"en.tok", "tok/" + s + ".lc.norm.tok.en"}}));
  }
  return d;
}

DatasetSpec iwslt14_de_en() {
  DatasetSpec d;
  d.name = "iwslt14-de-en";
  d.task = Task::translation;
  d.description =
      "IWSLT'14 German-English TED talks, fairseq prepare-iwslt14.sh (valid/test + 8,639-pair train sample)";
  d.sources = {
      "https://wit3.fbk.eu/archive/2014-01/texts/de/en/de-en.tgz (via fairseq examples/translation/prepare-iwslt14.sh)",
      "https://github.com/johntzwei/nmt_iwslt (commit 7750e75a0379bacdc3ad2f49da883116a69b3691, the script's output)"};
  d.license = "CC BY-NC-ND 4.0 (TED), non-commercial research";
  d.train = "train-sample", d.valid = "valid", d.test = "test";
  d.notes =
      "de/en = Moses-tokenized, lowercased text (no BPE); de.bpe/en.bpe = the same with fairseq's 10k joint "
      "BPE (asset bpe.codes). The full train split (160,239 pairs) is NOT here: train-sample is a random "
      "8,639-pair sample for smoke tests. Import a full copy with "
      "`pillars data import DIR --name iwslt14-de-en-full --source de --target en`.";
  d.split_hint =
      "The full IWSLT'14 train split is not in the mirror (train-sample is a small random sample); import "
      "your copy with `pillars data import DIR --name iwslt14-de-en-full --source de --target en`";
  const std::string repo =
      "https://raw.githubusercontent.com/johntzwei/nmt_iwslt/7750e75a0379bacdc3ad2f49da883116a69b3691/"
      "iwslt14.tokenized.de-en/";
  d.files = {
      {"bpe10k/code", 99579, 10001, "3dd02684b6693abce3ba59520425901b0b910abeec2ae6b15cc62e458441d503", repo + "code"},
      {"bpe10k/test.de", 806780, 6750, "0bca28e500495a4a9694ae134b0ae35526a280cb0966abbcf3c9af3edc3dfe10",
       repo + "10k_bpe/test.de"},
      {"bpe10k/test.en", 714609, 6750, "c2951533a0b03557599978ea1726c440bdbb8210454d1e9ef3b87c2b6228ac43",
       repo + "10k_bpe/test.en"},
      {"bpe10k/valid.de", 910989, 7283, "27660c689b99b54f0f858775527ff351c520f7581be90aac84b6d16f14624c9e",
       repo + "10k_bpe/valid.de"},
      {"bpe10k/valid.en", 813577, 7283, "1b1f2246625cc907fbd9c8195776434b24687c3fc4e068c6f3d3ec542846823f",
       repo + "10k_bpe/valid.en"},
      {"test.de", 718778, 6750, "e718c783e33160b7d72af8f733756a466e0d0c016eff8ab624c1b0d1d01cbbdf",
       repo + "tmp/test.de"},
      {"test.en", 657543, 6750, "4b127beb9050511a3e6209cd837ff36f623a3a423666b32aba6e208b7330cf4c",
       repo + "tmp/test.en"},
      // Derived (BPE removed, two samples joined, duplicates dropped): no URL serves these bytes.
      {"train-sample/train-sample.de", 968759, 8639,
       "94977e238e842a22b09852d86984897cf0df4ebed71bc7f73d7762a157c3611d"},
      {"train-sample/train-sample.en", 894673, 8639,
       "ec3359454e1b88c99a80201da0e5475a7cad851f04a1effe2e99f14cf70e6588"},
      {"valid.de", 806361, 7283, "3f051579c9d8c7281a6ea8c72ad4ae09dbaa9bb24dfd41166f2c3a3df7cd940a",
       repo + "tmp/valid.de"},
      {"valid.en", 744235, 7283, "e6d7317a9772cd1ed970910c611e9e7dada1f34439269b44a9d801334bff948d",
       repo + "tmp/valid.en"},
  };
  d.splits = {
      split("valid", 7283,
            {{"de", "valid.de"}, {"en", "valid.en"}, {"de.bpe", "bpe10k/valid.de"}, {"en.bpe", "bpe10k/valid.en"}}),
      split("test", 6750,
            {{"de", "test.de"}, {"en", "test.en"}, {"de.bpe", "bpe10k/test.de"}, {"en.bpe", "bpe10k/test.en"}}),
      split("train-sample", 8639, {{"de", "train-sample/train-sample.de"}, {"en", "train-sample/train-sample.en"}}),
  };
  d.assets = {{"bpe.codes", "bpe10k/code"}};
  return d;
}

} // namespace pillars::data::table
