// See study_file.h.
#include "study/study_file.h"

#include <filesystem>
#include <set>

#include "base/input_file.h"
#include "train/limits.h"

namespace pillars::study {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Reads one study file's fields, each checked for its type and range; every message starts
// with the file and names the field.
class Reader {
 public:
  Reader(const json& doc, std::string origin) : doc_(doc), origin_(std::move(origin)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw InputError(str_cat(origin_, ": \"", field, "\" ", what));
  }
  const json* find(const json& obj, const std::string& key) const {
    auto it = obj.find(key);
    return it == obj.end() || it->is_null() ? nullptr : &*it;
  }
  std::string string(const json& obj, const std::string& key, const std::string& field, std::string fallback,
                     bool required) const {
    const json* v = find(obj, key);
    if (!v) {
      if (required) fail(field, "is required");
      return fallback;
    }
    if (!v->is_string()) fail(field, str_cat("must be a string, got ", v->dump()));
    return v->get<std::string>();
  }
  int64_t integer(const json& obj, const std::string& key, const std::string& field, int64_t fallback, int64_t lo,
                  int64_t hi, bool required) const {
    const json* v = find(obj, key);
    if (!v) {
      if (required) fail(field, "is required");
      return fallback;
    }
    if (!v->is_number_integer() || v->get<int64_t>() < lo || v->get<int64_t>() > hi)
      fail(field, str_cat("must be an integer in [", lo, ", ", hi, "], got ", v->dump()));
    return v->get<int64_t>();
  }
  // A "set" object: {"optim.lr": 1e-3, ...} → {"optim.lr=0.001", ...} (values as JSON).
  std::vector<std::string> overrides(const json& obj, const std::string& field) const {
    const json* v = find(obj, "set");
    if (!v) return {};
    if (!v->is_object()) fail(field, str_cat("must be an object of \"key.path\": value, got ", v->dump()));
    std::vector<std::string> out;
    for (const auto& [key, value] : v->items()) {
      if (key.empty() || key.find('=') != std::string::npos) fail(field, str_cat("has a bad key \"", key, "\""));
      out.push_back(key + "=" + value.dump());
    }
    return out;
  }
  void only_keys(const json& obj, const std::string& field, const std::set<std::string>& keys) const {
    for (const auto& [key, value] : obj.items())
      if (!keys.count(key)) fail(field.empty() ? key : field + "." + key, "is not a study field");
  }

 private:
  const json& doc_;
  std::string origin_;
};

bool valid_name(const std::string& name) {
  if (name.empty() || name.size() > 64 || name == "." || name == "..") return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) return false;
  return true;
}

} // namespace

const SystemSpec& StudySpec::system(const std::string& n) const {
  for (const SystemSpec& s : systems)
    if (s.name == n) return s;
  throw InputError(str_cat(path, ": no system named \"", n, "\""));
}

std::vector<std::string> run_overrides(const StudySpec& s, const SystemSpec& sys, int64_t seed) {
  std::vector<std::string> out = sys.overrides;
  // The budget: updates alone end the run. A system that prunes fine-tunes until the same total
  // (prune.finetune_updates 0 under the continuing schedule), so every run makes `updates`.
  for (const std::string& o : {str_cat("train.max_updates=", s.updates), std::string("train.max_epochs=1000000"),
                               std::string("train.max_minutes=0"), std::string("train.patience=0")})
    out.push_back(o);
  // Fine-tuning's own limits, for a system that prunes (a system that does not keeps its prune
  // section's defaults, so its config is what a plain run of its experiment has).
  ValidationContext ctx;
  const Experiment plain = load_experiment(sys.experiment, sys.overrides, ctx);
  if (plain.prune.method != ght::PruneMethod::none)
    for (const char* o : {"prune.finetune_updates=0", "prune.finetune_epochs=1000000", "prune.finetune_minutes=0",
                          "prune.finetune_patience=0"})
      out.push_back(o);
  out.push_back(str_cat("train.device=\"", enum_name(s.device), "\""));
  // The study's precision where the experiment's differs (a CPU study of an fp32 experiment passes
  // nothing, as it always has).
  if (s.device == Device::cuda || plain.train.precision != s.precision)
    out.push_back(str_cat("train.precision=\"", enum_name(s.precision), "\""));
  out.push_back(str_cat("seed=", seed));
  return out;
}

Experiment run_experiment_config(const StudySpec& s, const SystemSpec& sys, int64_t seed) {
  ValidationContext ctx = default_validation_context();
  ctx.check_memory = false;
  return load_experiment(sys.experiment, run_overrides(s, sys, seed), ctx);
}

StudySpec parse_study(const std::string& text, const std::string& origin, const std::string& dir) {
  if (const auto at = schema::json_too_deep(text, limits::kMaxJsonDepth))
    throw InputError(str_cat(origin, ":", at->line, ":", at->column, ": invalid JSON: nested more than ",
                             limits::kMaxJsonDepth, " levels deep"));
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& err) {
    throw InputError(str_cat(origin, ": invalid JSON: ", err.what()));
  }
  if (!doc.is_object()) throw InputError(str_cat(origin, ": a study file is a JSON object"));
  const Reader r(doc, origin);
  r.only_keys(doc, "",
              {"name", "description", "base", "set", "systems", "baseline", "seeds", "updates", "test_splits", "device",
               "precision", "threads", "isa"});
  auto resolve = [&](const std::string& p) {
    return fs::path(p).is_absolute() || dir.empty() ? p : (fs::path(dir) / p).lexically_normal().string();
  };

  StudySpec s;
  s.path = origin;
  s.name = r.string(doc, "name", "name", fs::path(origin).stem().string(), false);
  if (!valid_name(s.name)) r.fail("name", str_cat("must be 1-64 of A-Z a-z 0-9 . _ -, got \"", s.name, "\""));
  s.description = r.string(doc, "description", "description", "", false);
  const std::string base = r.string(doc, "base", "base", "", false);
  const std::vector<std::string> common = r.overrides(doc, "set");

  const json* systems = r.find(doc, "systems");
  if (!systems || !systems->is_array() || systems->empty()) r.fail("systems", "must be a non-empty array of systems");
  if (systems->size() > 64) r.fail("systems", str_cat("has ", systems->size(), " systems; at most 64"));
  std::set<std::string> names;
  for (size_t i = 0; i < systems->size(); ++i) {
    const json& js = (*systems)[i];
    const std::string field = str_cat("systems[", i, "]");
    if (!js.is_object()) r.fail(field, "must be an object {\"name\", \"experiment\", \"set\"}");
    r.only_keys(js, field, {"name", "experiment", "set", "description", "prune_from", "copy_from"});
    SystemSpec sys;
    sys.name = r.string(js, "name", field + ".name", "", true);
    if (!valid_name(sys.name))
      r.fail(field + ".name", str_cat("must be 1-64 of A-Z a-z 0-9 . _ -, got \"", sys.name, "\""));
    if (!names.insert(sys.name).second) r.fail(field + ".name", str_cat("\"", sys.name, "\" names two systems"));
    const std::string exp = r.string(js, "experiment", field + ".experiment", base, false);
    if (exp.empty()) r.fail(field + ".experiment", "is required when the study has no \"base\"");
    sys.experiment = resolve(exp);
    sys.overrides = common;
    for (const std::string& o : r.overrides(js, field + ".set")) sys.overrides.push_back(o);
    sys.prune_from = r.string(js, "prune_from", field + ".prune_from", "", false);
    if (!sys.prune_from.empty() && (!names.count(sys.prune_from) || sys.prune_from == sys.name))
      r.fail(field + ".prune_from", str_cat("must name an earlier system, got \"", sys.prune_from, "\""));
    sys.copy_from = r.string(js, "copy_from", field + ".copy_from", "", false);
    if (!sys.copy_from.empty() && (fs::path(sys.copy_from).is_absolute() || sys.copy_from.size() > 4096))
      r.fail(field + ".copy_from",
             str_cat("must be a folder relative to the study's folder (\"../OTHER-STUDY/SYSTEM\"), got \"",
                     sys.copy_from, "\""));
    if (!sys.copy_from.empty() && !sys.prune_from.empty())
      r.fail(field + ".copy_from", "a system copies its runs or prunes another's, not both");
    s.systems.push_back(std::move(sys));
  }
  s.baseline = r.string(doc, "baseline", "baseline", s.systems.front().name, false);
  if (!names.count(s.baseline)) r.fail("baseline", str_cat("names no system: \"", s.baseline, "\""));

  const json* seeds = r.find(doc, "seeds");
  if (!seeds || !seeds->is_array() || seeds->empty() || seeds->size() > 1000)
    r.fail("seeds", "must be an array of 1 to 1000 integers");
  std::set<int64_t> seen;
  for (size_t i = 0; i < seeds->size(); ++i) {
    const json& v = (*seeds)[i];
    if (!v.is_number_integer() || v.get<int64_t>() < 0)
      r.fail(str_cat("seeds[", i, "]"), str_cat("must be an integer >= 0, got ", v.dump()));
    if (!seen.insert(v.get<int64_t>()).second) r.fail(str_cat("seeds[", i, "]"), str_cat("repeats seed ", v.dump()));
    s.seeds.push_back(v.get<int64_t>());
  }
  s.updates = r.integer(doc, "updates", "updates", 0, 1, int64_t{1} << 40, true);
  if (const json* splits = r.find(doc, "test_splits")) {
    if (!splits->is_array()) r.fail("test_splits", "must be an array of split names");
    for (size_t i = 0; i < splits->size(); ++i) {
      const json& v = (*splits)[i];
      if (!v.is_string() || !valid_name(v.get<std::string>()))
        r.fail(str_cat("test_splits[", i, "]"), str_cat("must be a split name, got ", v.dump()));
      s.test_splits.push_back(v.get<std::string>());
    }
  }
  try {
    s.device = parse_enum<Device>(r.string(doc, "device", "device", "cpu", false), "\"device\"");
    s.precision = parse_enum<Precision>(r.string(doc, "precision", "precision", "fp32", false), "\"precision\"");
  } catch (const InputError& err) {
    throw InputError(str_cat(origin, ": ", err.what()));
  }
  s.threads = r.integer(doc, "threads", "threads", 1, 1, limits::kMaxThreads, false);
  s.isa = r.string(doc, "isa", "isa", "avx2", false);
  if (s.isa != "avx2" && s.isa != "avx512" && s.isa != "generic" && s.isa != "native")
    r.fail("isa", str_cat("must be one of avx2, avx512, generic, native; got \"", s.isa, "\""));

  // Every run's experiment must load: a study that cannot start one of its runs is refused now,
  // with the system named, not hours later.
  for (const SystemSpec& sys : s.systems) {
    try {
      const Experiment e = run_experiment_config(s, sys, s.seeds.front());
      if (e.prune.method != ght::PruneMethod::none && e.prune.finetune_schedule != ght::FinetuneSchedule::continue_)
        throw InputError(
            "\"prune.finetune_schedule\" must be \"continue\" in a study: under \"restart\" fine-tuning has a "
            "budget of its own, so the system could not make the study's updates");
      if (!sys.prune_from.empty() && e.prune.method == ght::PruneMethod::none)
        throw InputError(str_cat("\"prune_from\" needs a \"prune.method\" to prune with (it is \"none\")"));
      const data::DatasetSpec& ds = data::find_dataset(e.data.dataset);
      for (const std::string& split : s.test_splits) (void)ds.split(split);
    } catch (const InputError& err) {
      throw InputError(str_cat(origin, ": system \"", sys.name, "\": ", err.what()));
    }
  }
  return s;
}

StudySpec load_study(const std::string& path) {
  const std::string text = read_input_file(path, limits::kMaxExperimentBytes);
  return parse_study(text, path, fs::path(path).parent_path().string());
}

} // namespace pillars::study
