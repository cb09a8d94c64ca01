// Experiment files (train/experiment.h, train/schema.h): the ready files of experiments/ validate;
// every file of tests/experiments_broken/ fails with the message EXPECTED.json gives for it, both
// through load_experiment and through the real binary (`pillars schema --check`, exit 2); defaults,
// --set precedence, the resolved-config round trip, and the JSON Schema / Markdown table made from
// the same field table.
#include <doctest/doctest.h>

#include "skip.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>

#include <sys/stat.h>

#include "base/error.h"
#include "datasets/registry.h"
#include "train/limits.h"
#include "train/experiment.h"
#include "train/schema.h"
#include "tests/test_env.h"

using namespace pillars;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string kSource = PILLARS_SOURCE_DIR;
const std::string kBroken = kSource + "/tests/experiments_broken";
const std::string kReady = kSource + "/experiments";

// The names the dataset registry and the model configs will know (hard-coded so that these tests
// do not depend on either).
ValidationContext real_context() {
  ValidationContext ctx;
  ctx.dataset_names = {"multi30k-de-en",
                       "iwslt14-de-en",
                       "wikitext-2",
                       "wikitext-103",
                       "ptb",
                       "tinyshakespeare",
                       "samsum",
                       "dialogsum",
                       "aeslc",
                       "bbc-news-summary",
                       "sotu",
                       "debian-synopsis",
                       "iwslt14-de-en-full"}; // a user import: the full IWSLT'14 training set is not in the mirror
  ctx.model_configs = {"tiny", "small", "base", "lite1", "lite2", "lm-small", "lm-wt103", "bench"};
  // The built-in datasets' splits and fields are code (datasets/registry_table_*.cpp), not files:
  // the references a file makes into them are checked too.
  ctx.find_dataset = [](const std::string& name) -> const data::DatasetSpec* {
    for (const data::DatasetSpec& d : data::builtin_datasets())
      if (d.name == name) return &d;
    return nullptr;
  };
  return ctx;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

json read_json(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  return json::parse(in);
}

std::vector<std::string> overrides_of(const json& entry) { return entry.value("set", std::vector<std::string>{}); }

// A fresh file under the temp directory, removed at scope exit.
struct TempFile {
  std::string path;
  explicit TempFile(const std::string& text) {
    std::random_device rd;
    path = (fs::temp_directory_path() / ("pillars-exp-" + std::to_string(rd()) + ".json")).string();
    std::ofstream(path) << text;
  }
  ~TempFile() { fs::remove(path); }
};

using pillars::testing::pillars_binary;
using pillars::testing::run_pillars;
using pillars::testing::RunResult;

const json& value_at(const json& j, const std::string& dotted) {
  std::string ptr = "/" + dotted;
  std::replace(ptr.begin(), ptr.end(), '.', '/');
  return j.at(json::json_pointer(ptr));
}

const char* kMinimal =
    R"({"task": "translation", "data": {"dataset": "multi30k-de-en"}, "model": {"config": "small"}})";

} // namespace

TEST_CASE("experiment files: every broken file fails with its expected message") {
  const json expected = read_json(kBroken + "/EXPECTED.json");
  std::set<std::string> files;
  for (const auto& entry : fs::directory_iterator(kBroken))
    if (entry.path().extension() == ".json" && entry.path().filename() != "EXPECTED.json")
      files.insert(entry.path().filename().string());
  CHECK(files.size() >= 20);
  for (const auto& [name, entry] : expected.items())
    CHECK_MESSAGE(files.count(name), "EXPECTED.json lists a missing file: ", name);
  for (const std::string& name : files) {
    CAPTURE(name);
    REQUIRE_MESSAGE(expected.contains(name), "no expected message in EXPECTED.json for ", name);
    const json& entry = expected[name];
    const std::string path = kBroken + "/" + name;
    const std::string msg = error_of([&] { load_experiment(path, overrides_of(entry), real_context()); });
    CAPTURE(msg);
    CHECK(msg.rfind(path, 0) == 0); // every message names the file first
    CHECK(msg.find(entry["error"].get<std::string>()) != std::string::npos);
  }
}

TEST_CASE("experiment files: the binary reports each broken file on stderr and exits with 2") {
  const std::string binary = pillars_binary();
  if (binary.empty()) {
    SKIP_TEST("the pillars binary is not built beside pillars_tests");
    return;
  }
  const json expected = read_json(kBroken + "/EXPECTED.json");
  for (const auto& [name, entry] : expected.items()) {
    // The CLI's context is default_validation_context(); a check that needs the dataset or config
    // names runs only once that knows them.
    if (entry.value("needs_context", false) && default_validation_context().dataset_names.empty()) continue;
    CAPTURE(name);
    std::vector<std::string> args = {"schema", "--check", kBroken + "/" + name};
    for (const std::string& o : overrides_of(entry)) args.insert(args.end(), {"--set", o});
    const RunResult r = run_pillars(binary, args);
    CAPTURE(r.err);
    CHECK(r.code == 2);
    CHECK(r.err.find(entry["error"].get<std::string>()) != std::string::npos);
  }
}

TEST_CASE("schema: the binary prints the schema and the field table and checks a file") {
  const std::string binary = pillars_binary();
  if (binary.empty()) {
    SKIP_TEST("the pillars binary is not built beside pillars_tests");
    return;
  }
  const std::string file = kReady + "/multi30k-de-en.json";
  const RunResult r = run_pillars(binary, {"schema", "--check", file, "--set", "optim.lr=2e-3"});
  CHECK(r.code == 0);
  CHECK(json::parse(r.out) == to_json(load_experiment(file, {"optim.lr=2e-3"})));
  const RunResult s = run_pillars(binary, {"schema"});
  CHECK(s.code == 0);
  CHECK(json::parse(s.out) == experiment_json_schema());
  const RunResult m = run_pillars(binary, {"schema", "--markdown"});
  CHECK(m.code == 0);
  CHECK(m.out == experiment_markdown());
}

TEST_CASE("experiment files: the ready files in experiments/ validate and round trip") {
  std::set<std::string> names;
  for (const auto& entry : fs::recursive_directory_iterator(kReady)) {
    if (entry.path().extension() != ".json" || entry.path().parent_path().filename() == "studies")
      continue; // study files: test_study
    const std::string path = entry.path().string();
    CAPTURE(path);
    names.insert(entry.path().filename().string());
    Experiment e;
    CHECK_NOTHROW(e = load_experiment(path, {}, real_context()));
    CHECK(e.name == entry.path().stem().string());
    CHECK(parse_experiment(to_json(e), "config.json", real_context()) == e);
  }
  for (const char* f :
       {"multi30k-de-en.json", "multi30k-de-en-cuda.json", "multi30k-de-en-long.json", "iwslt14-de-en-base.json",
        "wikitext2-lm.json", "ptb-lm.json", "samsum.json", "tinyshakespeare-lm.json"})
    CHECK_MESSAGE(names.count(f), "missing ready file experiments/", f);
  // The GHT comparison, its baselines and Table 3's ablations (experiments/ght/).
  for (const char* f : {"vanilla.json",
                        "ght.json",
                        "lite1.json",
                        "lite2.json",
                        "disagreement-subspace.json",
                        "disagreement-position.json",
                        "disagreement-output.json",
                        "michel.json",
                        "voita.json",
                        "drophead.json",
                        "ablation-no-homogenizing.json",
                        "ablation-no-diversifying.json",
                        "ablation-ps-no-homogenizing.json",
                        "ablation-ps-no-diversifying.json",
                        "ablation-v2s-at-start.json",
                        "ablation-v2s-after-plain.json",
                        "ablation-random-heads.json",
                        "ablation-random-member.json",
                        "ablation-gc-both-stages.json",
                        "ptb-ght.json",
                        "samsum-ght.json"})
    CHECK_MESSAGE(names.count(f), "missing ready file experiments/ght/", f);
  const Experiment ght_exp = load_experiment(kReady + "/ght/ght.json", {}, real_context());
  // GHT-PS with the paper's IWSLT de-en setting for it (Table 7): O, α 0.5, β 0.7; GHT: V, α 0.7, β 0.5.
  CHECK(ght_exp.heads.regularizer == ght::Regularizer::gct);
  CHECK(ght_exp.heads.feature_map == ght::FeatureMap::O);
  CHECK(ght_exp.heads.alpha == 0.5);
  CHECK(ght_exp.heads.beta == 0.7);
  CHECK(ght_exp.prune.method == ght::PruneMethod::v2s);
  CHECK(ght_exp.prune.keep == ght::KeepRule::per_group);
  const Experiment ght_full = load_experiment(kReady + "/ght/ght-full.json", {}, real_context());
  CHECK(ght_full.heads.regularizer == ght::Regularizer::gct);
  CHECK(ght_full.heads.feature_map == ght::FeatureMap::V);
  CHECK(ght_full.heads.alpha == 0.7);
  CHECK(ght_full.heads.beta == 0.5);
  CHECK(ght_full.prune.method == ght::PruneMethod::none);
  const Experiment def = load_experiment(kReady + "/multi30k-de-en.json", {}, real_context());
  CHECK(def.task == Task::translation);
  CHECK(def.data.dataset == "multi30k-de-en");
  CHECK(def.data.test_split == "test_2016_flickr");
  CHECK(def.model.config == "small");
  const Experiment iwslt = load_experiment(kReady + "/iwslt14-de-en-base.json", {}, real_context());
  CHECK(iwslt.model.config == "base");
  CHECK(iwslt.model.dropout == 0.3);
  CHECK(iwslt.optim.lr == 5e-4);
  CHECK(iwslt.optim.warmup_updates == 4000);
  CHECK(iwslt.train.label_smoothing == 0.1);
  CHECK(iwslt.optim.weight_decay == 0.0001);
  CHECK(iwslt.data.max_tokens == 4096);
  CHECK(iwslt.eval.beam == 5);
}

TEST_CASE("experiment files: absent fields take the schema's defaults") {
  const Experiment e = parse_experiment(json::parse(kMinimal), "experiments/my-run.json");
  CHECK(e.name == "my-run");
  CHECK(e.seed == 1);
  CHECK(e.data.source == "de");
  CHECK(e.data.target == "en");
  CHECK(e.data.tokenizer == Tokenizer::moses);
  CHECK(e.data.bpe_merges == 10000);
  CHECK(!e.data.bpe_codes);
  CHECK(!e.model.d_model);
  CHECK(e.optim.optimizer == Optimizer::adam);
  CHECK(e.optim.lr == 5e-4);
  CHECK(e.optim.betas == std::array<double, 2>{0.9, 0.98});
  CHECK(e.optim.schedule == Schedule::inverse_sqrt);
  CHECK(e.train.max_epochs == 50);
  CHECK(e.train.best_metric == BestMetric::loss);
  CHECK(e.eval.checkpoint == CheckpointChoice::best);
  CHECK(e.eval.max_len_a == 1.2);
  // Every default in the table is what the struct holds.
  const json resolved = to_json(e);
  for (const schema::Field& f : experiment_fields())
    if (!f.default_value.is_null()) CHECK_MESSAGE(value_at(resolved, f.path) == f.default_value, f.path);

  SUBCASE("summarization reads the source and summary fields") {
    json j = json::parse(kMinimal);
    j["task"] = "summarization";
    j["data"]["dataset"] = "samsum";
    const Experiment s = parse_experiment(j, "s.json");
    CHECK(s.data.source == "source");
    CHECK(s.data.target == "summary");
  }
  SUBCASE("integral numbers are integers") {
    json j = json::parse(kMinimal);
    j["optim"]["warmup_updates"] = 1e3;
    CHECK(parse_experiment(j, "x.json").optim.warmup_updates == 1000);
  }
}

TEST_CASE("experiment files: the resolved config round trips") {
  json j = json::parse(kMinimal);
  j["model"]["d_model"] = 256;
  j["model"]["heads"] = 4;
  j["model"]["activation"] = "gelu";
  j["data"]["bpe_codes"] = kReady + "/README.md"; // any readable file
  j["optim"]["optimizer"] = "sgd";
  j["train"]["average_best"] = 3;
  j["eval"]["checkpoint"] = "average";
  const Experiment e = parse_experiment(j, "rt.json");
  const json resolved = to_json(e);
  CHECK(parse_experiment(resolved, "elsewhere.json") == e); // the name travels in the file
  CHECK(to_json(parse_experiment(resolved, "elsewhere.json")) == resolved);
  // The resolved config holds every field of the table, and nothing else.
  size_t leaves = 0;
  std::function<void(const json&)> count = [&](const json& v) {
    for (const auto& [k, x] : v.items()) x.is_object() ? count(x) : void(++leaves);
  };
  count(resolved);
  size_t fields = 0;
  for (const schema::Field& f : experiment_fields()) {
    CHECK_NOTHROW(value_at(resolved, f.path));
    fields += f.type != schema::Type::Section;
  }
  CHECK(leaves == fields);
}

TEST_CASE("experiment files: every enum value maps to the C++ enum and back") {
  for (const schema::Field& f : experiment_fields()) {
    if (f.type != schema::Type::Enum) continue;
    for (const std::string& v : f.allowed) {
      CAPTURE(f.path);
      CAPTURE(v);
      json j = json::parse(kMinimal);
      std::string ptr = "/" + f.path;
      std::replace(ptr.begin(), ptr.end(), '.', '/');
      j[json::json_pointer(ptr)] = v;
      if (f.path == "task" && v == "language_modeling") j["data"]["dataset"] = "ptb";
      if (f.path == "train.best_metric" && v == "rouge") j["task"] = "summarization";
      if (f.path == "eval.checkpoint" && v == "average") j["train"]["average_best"] = 2;
      if (f.path == "prune.method" && v == "gates") j["heads"]["gates"] = "hard_concrete";
      CHECK(value_at(to_json(parse_experiment(j, "e.json")), f.path) == v);
    }
  }
}

TEST_CASE("experiment files: --set overrides apply before validation and the last one wins") {
  const TempFile file(
      R"({"task": "translation", "data": {"dataset": "multi30k-de-en"}, "model": {"config": "small"}, "optim": {"lr": 0.0005}})");
  const Experiment e = load_experiment(file.path,
                                       {"optim.lr=1e-3", "model.config=base", "data.test_split=test_2017_mscoco",
                                        "optim.lr=2e-3", "name=2024", "optim.betas=[0.8, 0.9]", "model.heads=4",
                                        "model.heads=null", "train.max_minutes=90", "eval.split=test_2017_flickr"},
                                       real_context());
  CHECK(e.optim.lr == 2e-3);
  CHECK(e.model.config == "base");
  CHECK(e.data.test_split == "test_2017_mscoco");
  CHECK(e.name == "2024"); // a string field takes the text even when it parses as JSON
  CHECK(e.optim.betas == std::array<double, 2>{0.8, 0.9});
  CHECK(!e.model.heads);
  CHECK(e.train.max_minutes == 90);
  CHECK(e.eval.split == "test_2017_flickr");
  // A --set may create a whole section the file did not have.
  CHECK(load_experiment(file.path, {"train.patience=3"}).train.patience == 3);
  // The error names the --set, not the file's value, when the --set is to blame.
  const std::string msg = error_of([&] { load_experiment(file.path, {"optim.lr=-1", "seed=2"}); });
  CHECK(msg == file.path + ": --set optim.lr=-1: \"optim.lr\" must be a number > 0, got -1");
  CHECK(error_of([&] { load_experiment(file.path, {"optimm.lr=1"}); }) ==
        file.path + ": --set optimm.lr=1: unknown key \"optimm\" — did you mean \"optim\"?");
  CHECK(error_of([&] { load_experiment(file.path, {"=1"}); }).find("bad key \"\"") != std::string::npos);
}

TEST_CASE("experiment files: missing or unreadable files and wrongly shaped input") {
  const std::string missing = kBroken + "/no-such-file.json";
  CHECK(error_of([&] { load_experiment(missing); }) == missing + ": cannot read: No such file or directory");
  CHECK(error_of([&] { load_experiment(kBroken); }) ==
        kBroken + ": cannot read: it is a directory, not a regular file");
  CHECK(error_of([&] { parse_experiment(json::parse("3"), "x.json"); }) ==
        "x.json: the top level must be a JSON object, got 3 (number)");
  json j = json::parse(kMinimal);
  j["seed"] = -1;
  CHECK(error_of([&] { parse_experiment(j, "x.json"); }) == "x.json: \"seed\" must be an integer >= 0, got -1");
  j = json::parse(kMinimal);
  j["optim"] = {{"optimizer", nullptr}};
  CHECK(error_of([&] { parse_experiment(j, "x.json"); }) ==
        "x.json: \"optim.optimizer\" must be one of \"adam\", \"adamw\", \"sgd\", got null");
}

TEST_CASE("schema: nearest key and edit distance") {
  CHECK(schema::edit_distance("kitten", "sitting") == 3);
  CHECK(schema::edit_distance("trian", "train") == 1); // a transposition is one edit
  CHECK(schema::edit_distance("", "abc") == 3);
  CHECK(schema::nearest("warmup_update", {"lr", "warmup_updates", "warmup_init_lr"}) == "warmup_updates");
  CHECK(schema::nearest("multi31k", {"ptb", "multi30k-de-en"}) == "multi30k-de-en");
  CHECK(schema::nearest("zzz", {"lr", "eps"}) == "");
  CHECK(schema::nearest("xy", {"lr"}) == "");
}

TEST_CASE("schema: the JSON Schema describes every field and is self-consistent") {
  const json s = experiment_json_schema();
  CHECK(s["$schema"] == "https://json-schema.org/draft/2020-12/schema");
  // Only keywords of draft 2020-12 that we mean to use.
  const std::set<std::string> keywords = {
      "$schema",  "title",    "description", "type",    "properties",       "required",         "additionalProperties",
      "default",  "enum",     "minimum",     "maximum", "exclusiveMinimum", "exclusiveMaximum", "items",
      "minItems", "maxItems", "minLength",   "pattern"};
  std::function<void(const json&, const std::string&)> walk = [&](const json& node, const std::string& at) {
    CAPTURE(at);
    for (const auto& [k, v] : node.items()) CHECK_MESSAGE(keywords.count(k), "unexpected keyword ", k);
    CHECK(node.contains("type"));
    if (node["type"] == "object") {
      CHECK(node["additionalProperties"] == false);
      for (const auto& r : node.value("required", json::array()))
        CHECK(node["properties"].contains(r.get<std::string>()));
      for (const auto& [k, v] : node["properties"].items()) {
        CHECK(!v.value("description", "").empty());
        const std::string path = at.empty() ? k : at + "." + k;
        CHECK_MESSAGE(find_field(experiment_fields(), path) != nullptr, "schema property without a field: ", path);
        walk(v, path);
      }
    }
  };
  walk(s, "");
  for (const schema::Field& f : experiment_fields()) {
    CAPTURE(f.path);
    std::string ptr;
    for (size_t start = 0;;) {
      const size_t dot = f.path.find('.', start);
      ptr += "/properties/" + f.path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    REQUIRE(s.contains(json::json_pointer(ptr)));
    const json& p = s[json::json_pointer(ptr)];
    if (f.type == schema::Type::Enum) CHECK(p["enum"].size() == f.allowed.size() + (f.nullable ? 1 : 0));
    if (!f.required && f.type != schema::Type::Section && f.default_note.empty()) CHECK(p.contains("default"));
    if (f.minimum) CHECK((p.contains("minimum") || p.contains("exclusiveMinimum") || p["items"].contains("minimum")));
    // A default satisfies its own field: checked by validating a document that leaves it out
    // (done by "absent fields take the schema's defaults"), and here against the enum.
    if (f.type == schema::Type::Enum && !f.default_value.is_null())
      CHECK(std::find(f.allowed.begin(), f.allowed.end(), f.default_value.get<std::string>()) != f.allowed.end());
  }
}

TEST_CASE("schema: the Markdown table lists every field and experiments README shows it") {
  const std::string table = experiment_markdown();
  for (const schema::Field& f : experiment_fields())
    CHECK_MESSAGE(table.find("`" + f.path + "`") != std::string::npos, f.path);
  std::ifstream in(kReady + "/README.md");
  const std::string readme(std::istreambuf_iterator<char>(in), {});
  CHECK_MESSAGE(readme.find(table) != std::string::npos,
                "experiments/README.md: regenerate the field table with `pillars schema --markdown`");
}

TEST_CASE("experiment files: only regular files are read, and refused at once otherwise") {
  const fs::path dir = fs::temp_directory_path() / ("pillars-fifo-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string fifo = (dir / "exp.json").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // No writer ever opens the FIFO: a reader that blocked would hang this test.
  std::string msg = error_of([&] { load_experiment(fifo, {}); });
  CHECK(msg == fifo + ": cannot read: it is a FIFO, not a regular file");
  msg = error_of([&] { load_experiment("/dev/zero", {}); });
  CHECK(msg == "/dev/zero: cannot read: it is a character device, not a regular file");
  msg = error_of([&] { load_experiment(dir.string(), {}); });
  CHECK(msg == dir.string() + ": cannot read: it is a directory, not a regular file");
  // A path field naming a FIFO or a device: the field and the file.
  json j = json::parse(kMinimal);
  j["data"]["bpe_codes"] = fifo;
  msg = error_of([&] { parse_experiment(j, "x.json"); });
  CHECK(msg == "x.json: \"data.bpe_codes\": " + fifo + ": cannot read: it is a FIFO, not a regular file");
  j = json::parse(kMinimal);
  j["model"]["init_from"] = "/dev/zero";
  msg = error_of([&] { parse_experiment(j, "x.json"); });
  CHECK(msg == "x.json: \"model.init_from\": /dev/zero: cannot read: it is a character device, not a regular file");
  fs::remove_all(dir);
}

TEST_CASE("experiment files: nesting is bounded before the parser sees it") {
  // 100,000 levels, as the whole file and inside a field: an error naming where the bound is
  // crossed, not a stack overflow while the message is built.
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  TempFile whole(deep);
  std::string msg = error_of([&] { load_experiment(whole.path, {}); });
  CHECK(msg == whole.path + ":1:65: invalid JSON: nested more than 64 levels deep (an experiment file needs 2)");
  TempFile inside(R"({"task": "translation",
  "description": )" +
                  deep + "}");
  msg = error_of([&] { load_experiment(inside.path, {}); });
  CHECK(msg == inside.path + ":2:81: invalid JSON: nested more than 64 levels deep (an experiment file needs 2)");
  // Brackets inside strings do not count.
  TempFile quoted(
      R"({"task": "translation", "data": {"dataset": "multi30k-de-en"}, "model": {"config": "small"}, "description": ")" +
      std::string(1000, '[') + "\"}");
  CHECK_NOTHROW(load_experiment(quoted.path, {}));
  // And through --set.
  TempFile ok(kMinimal);
  msg = error_of([&] { load_experiment(ok.path, {"description=" + deep}); });
  CHECK(msg.find(ok.path + ": --set description=") == 0);
  CHECK(msg.find("\"description\": the value is nested more than 64 levels deep (at character 65)") !=
        std::string::npos);
}

TEST_CASE("experiment files: a number beyond double is an input error naming the file, the place and the field") {
  TempFile f(R"({"task": "translation", "data": {"dataset": "multi30k-de-en"}, "model": {"config": "small"},
  "optim": {"lr": 1e400}})");
  const std::string msg = error_of([&] { load_experiment(f.path, {}); });
  CHECK(msg == f.path + ":2:19: invalid JSON at \"optim.lr\": number overflow parsing '1e400'");
}

TEST_CASE("experiment files: every ready file's splits and fields exist in its dataset") {
  // real_context() knows the built-in datasets: a typo in any split or field of a ready file fails here.
  for (const auto& entry : fs::recursive_directory_iterator(kReady)) {
    if (entry.path().extension() != ".json" || entry.path().parent_path().filename() == "studies")
      continue; // study files: test_study
    CAPTURE(entry.path().string());
    CHECK_NOTHROW(load_experiment(entry.path().string(), {}, real_context()));
  }
  // The checks themselves, one per reference.
  TempFile f(kMinimal);
  CHECK(error_of([&] { load_experiment(f.path, {"data.test_split=test_2016_flikr"}, real_context()); })
            .find("\"data.test_split\": unknown split of dataset \"multi30k-de-en\": \"test_2016_flikr\" — did you "
                  "mean \"test_2016_flickr\"?") != std::string::npos);
  CHECK(error_of([&] {
          load_experiment(f.path, {"data.source=fr"}, real_context());
        }).find("\"data.source\": unknown field of split") != std::string::npos);
  CHECK(
      error_of([&] {
        load_experiment(f.path, {"task=language_modeling", "model.config=lm-small"}, real_context());
      }).find("\"data.dataset\" \"multi30k-de-en\" is a translation dataset, but \"task\" is \"language_modeling\"") !=
      std::string::npos);
}

TEST_CASE("experiment files: the model a file asks for is checked against this machine's memory") {
  TempFile f(kMinimal);
  ValidationContext ctx = real_context();
  ctx.check_memory = true;
  // Every size within its own bound, together far beyond any machine: 1024 layers of d 65536.
  const std::string msg = error_of([&] {
    load_experiment(f.path, {"model.d_model=65536", "model.heads=64", "model.enc_layers=1024", "model.dec_layers=1024"},
                    ctx);
  });
  CAPTURE(msg);
  CHECK(msg.rfind(f.path + ": ", 0) == 0);
  CHECK(msg.find("\"model\" and \"data.max_tokens\": the run needs about") != std::string::npos);
  CHECK(msg.find("available. Reduce model.d_model") != std::string::npos);
  // The ready experiments fit (this machine has 2 GiB or more).
  CHECK_NOTHROW(load_experiment(kReady + "/multi30k-de-en.json", {}, ctx));
}
