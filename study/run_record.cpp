// See run_record.h.
#include "study/run_record.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/atomic_file.h"
#include "base/error.h"
#include "base/input_file.h"
#include "datasets/xz.h"
#include "train/session.h"

namespace pillars::study {

namespace fs = std::filesystem;
using nlohmann::json;

RunPaths run_paths(const std::string& study_dir, const std::string& system, int64_t seed, bool prunes) {
  RunPaths p;
  p.system = system, p.seed = seed;
  p.dir = (fs::path(study_dir) / system / str_cat("s", seed)).string();
  p.final_dir = prunes ? (fs::path(p.dir) / "pruned").string() : p.dir;
  p.record = (fs::path(p.dir) / "study_run.json").string();
  p.log = (fs::path(study_dir) / "logs" / str_cat(system, "-s", seed, ".log")).string();
  return p;
}

RunRecord read_run_record(const RunPaths& p) {
  RunRecord r;
  if (!fs::exists(fs::symlink_status(p.record))) return r;
  json j;
  try {
    j = json::parse(read_input_file(p.record, 1 << 20));
    if (!j.is_object() || !j.value("system", json()).is_string() || j["system"] != p.system ||
        !j.value("seed", json()).is_number_integer() || j["seed"] != p.seed ||
        !j.value("trained", json()).is_boolean() || !j.value("evaluated", json()).is_array() ||
        !j.value("commands", json()).is_array())
      throw InputError("not the record of this run (system, seed, trained, evaluated, commands)");
    r.trained = j["trained"].get<bool>();
    for (const json& s : j["evaluated"]) r.evaluated.insert(s.get<std::string>());
    for (const json& c : j["commands"]) r.commands.push_back(c.get<std::string>());
  } catch (const json::exception& err) {
    throw InputError(str_cat(p.record, ": ", err.what(), " (move the run folder away to run it again)"));
  } catch (const InputError& err) {
    throw InputError(str_cat(p.record, ": ", err.what(), " (move the run folder away to run it again)"));
  }
  return r;
}

void write_run_record(const RunPaths& p, const RunRecord& r) {
  const json j = {{"system", p.system},
                  {"seed", p.seed},
                  {"trained", r.trained},
                  {"evaluated", r.evaluated},
                  {"commands", r.commands}};
  io::atomic_write_file(p.record, j.dump(1) + "\n");
}

namespace {

// The keys of two JSON documents whose leaves differ, as dotted paths.
void differing_keys(const json& a, const json& b, const std::string& prefix, std::vector<std::string>& out) {
  if (a.is_object() && b.is_object()) {
    std::set<std::string> keys;
    for (const auto& [k, v] : a.items()) keys.insert(k);
    for (const auto& [k, v] : b.items()) keys.insert(k);
    for (const std::string& k : keys)
      differing_keys(a.contains(k) ? a[k] : json(), b.contains(k) ? b[k] : json(),
                     prefix.empty() ? k : prefix + "." + k, out);
  } else if (a != b) {
    out.push_back(str_cat(prefix, " (", a.dump(), " in the run, ", b.dump(), " in the study)"));
  }
}

json without_paths(json config) { // fields load_run_config does not re-check (train/session.h)
  if (config.contains("model")) config["model"]["init_from"] = nullptr;
  if (config.contains("data")) config["data"]["bpe_codes"] = nullptr;
  return config;
}

} // namespace

std::vector<std::string> config_differences(const std::string& run_dir, const Experiment& expected) {
  std::vector<std::string> diff;
  differing_keys(without_paths(to_json(train::load_run_config(run_dir))), without_paths(to_json(expected)), "", diff);
  return diff;
}

namespace {

// head_metrics.jsonl → head_metrics.jsonl.xz (pack) or back, in the run's folder and its pruned/
// folder: where the source is a plain file and the target is not there, the target is written
// atomically and read back, and only a faithful copy replaces the source.
void convert_head_metrics(const RunPaths& p, bool pack) {
  const auto read = [](const fs::path& f) {
    return f.extension() == ".xz" ? data::xz_read_file(f.string()) : read_input_file(f.string(), uint64_t{1} << 30);
  };
  const auto write = [](const fs::path& f, const std::string& text) {
    io::atomic_write_file(f.string(), f.extension() == ".xz" ? data::xz_compress(text) : text);
  };
  for (const fs::path& dir : {fs::path(p.dir), fs::path(p.dir) / "pruned"}) {
    const fs::path plain = dir / "head_metrics.jsonl", packed = dir / "head_metrics.jsonl.xz";
    const fs::path& from = pack ? plain : packed;
    const fs::path& to = pack ? packed : plain;
    if (!fs::is_regular_file(fs::symlink_status(from)) || fs::exists(fs::symlink_status(to))) continue;
    const std::string text = read(from);
    write(to, text);
    if (read(to) != text)
      throw Error(str_cat(to.string(), ": does not read back as ", from.string(), "; both are kept"));
    fs::remove(from);
  }
}

} // namespace

void compress_head_metrics(const RunPaths& p) { convert_head_metrics(p, /*pack=*/true); }

std::string continue_problem(const RunPaths& p, const Experiment& e, bool pruned_by_prune) {
  if (e.optim.schedule == Schedule::cosine || e.optim.schedule == Schedule::linear)
    return str_cat("its learning rate decays over the budget (optim.schedule \"", enum_name(e.optim.schedule),
                   "\"), so continuing it is not the run trained to the new budget");
  std::vector<fs::path> needed{fs::path(p.final_dir) / "checkpoint_last.safetensors"};
  if (!pruned_by_prune) needed.push_back(fs::path(p.dir) / "checkpoint_last.safetensors");
  for (const fs::path& f : needed)
    if (!fs::is_regular_file(fs::symlink_status(f)))
      return str_cat(f.string(), " is gone (checkpoints are not kept in the repository)");
  return "";
}

std::string reopen_run(const RunPaths& p, int64_t reached) {
  const fs::path final_dir(p.final_dir);
  const fs::path aside = final_dir / str_cat("evaluated_at_", reached);
  if (fs::is_symlink(aside) || (fs::exists(aside) && !fs::is_directory(aside)))
    throw InputError(str_cat(aside.string(), ": in the way of the evaluations at ", reached,
                             " updates (a link or a file; move it away)"));
  std::vector<fs::path> evaluations;
  for (const fs::directory_entry& f : fs::directory_iterator(final_dir))
    if (f.path().filename().string().rfind("eval_", 0) == 0 && !f.is_directory()) evaluations.push_back(f.path());
  if (!evaluations.empty()) fs::create_directory(aside);
  for (const fs::path& f : evaluations) {
    const fs::path to = aside / f.filename();
    if (fs::exists(fs::symlink_status(to)))
      throw InputError(str_cat(to.string(), ": already there; ", f.string(), " is left where it is"));
    fs::rename(f, to); // moves a link itself, never what it points to
  }
  convert_head_metrics(p, /*pack=*/false);
  return aside.string();
}

std::string phase1_dir(const RunPaths& p) { return (fs::path(p.dir) / "phase1").string(); }

namespace {

// The JSON objects of a log.jsonl (lines that are not objects skipped; none when it is missing).
std::vector<json> log_lines(const fs::path& path) {
  std::vector<json> out;
  if (!fs::is_regular_file(path)) return out;
  std::istringstream in(read_input_file(path.string(), uint64_t{1} << 30));
  for (std::string line; std::getline(in, line);)
    if (json j = json::parse(line, nullptr, false); j.is_object()) out.push_back(std::move(j));
  return out;
}

// The first "end" line's update (a pruning run's log ends its first phase with one), or −1.
int64_t first_end(const std::vector<json>& lines) {
  for (const json& l : lines)
    if (l.value("type", "") == "end" && l.value("update", json()).is_number_integer())
      return l["update"].get<int64_t>();
  return -1;
}

// (type, update) → the numbers that follow from the arithmetic alone, for the train and valid
// lines up to update `end` (not the timings).
std::map<std::pair<std::string, int64_t>, json> log_points(const std::vector<json>& lines, int64_t end) {
  std::map<std::pair<std::string, int64_t>, json> out;
  for (const json& l : lines) {
    const std::string type = l.value("type", "");
    if ((type != "train" && type != "valid") || !l.value("update", json()).is_number_integer()) continue;
    const int64_t update = l["update"].get<int64_t>();
    if (update > end) continue;
    json point = json::object();
    for (const char* key : {"loss", "lr", "gct_regularizer", "bleu"})
      if (l.contains(key)) point[key] = l[key];
    out[{type, update}] = point;
  }
  return out;
}

} // namespace

std::string first_phase_difference(const RunPaths& p) {
  const std::vector<json> source = log_lines(fs::path(p.dir) / "log.jsonl");
  const std::vector<json> again = log_lines(fs::path(phase1_dir(p)) / "log.jsonl");
  const int64_t end = first_end(source), again_end = first_end(again);
  if (end < 0) return str_cat((fs::path(p.dir) / "log.jsonl").string(), " records no end of a first phase");
  if (again_end != end) return str_cat("it ended at update ", again_end, ", the source's first phase at ", end);
  const auto want = log_points(source, end), got = log_points(again, end);
  for (const auto& [key, value] : want) {
    const auto it = got.find(key);
    if (it == got.end()) return str_cat("it has no ", key.first, " line at update ", key.second);
    if (it->second != value)
      return str_cat(key.first, " line at update ", key.second, ": ", it->second.dump(), ", the source's ",
                     value.dump());
  }
  if (got.size() != want.size())
    return str_cat("it has ", got.size(), " train and valid lines, the source ", want.size());
  return "";
}

namespace {

// The "update" of the last line of a JSON-lines log that has one (reads the last 64 KB only).
int64_t last_update_in(const fs::path& log) {
  std::ifstream in(log, std::ios::binary | std::ios::ate);
  if (!in) return 0;
  const std::streamoff size = in.tellg(), from = std::max<std::streamoff>(0, size - (64 << 10));
  in.seekg(from);
  std::string tail(static_cast<size_t>(size - from), '\0');
  in.read(tail.data(), static_cast<std::streamsize>(tail.size()));
  int64_t update = 0;
  size_t at = 0;
  while (at < tail.size()) {
    size_t end = tail.find('\n', at);
    if (end == std::string::npos) end = tail.size();
    const json line = json::parse(tail.substr(at, end - at), nullptr, /*allow_exceptions=*/false);
    if (line.is_object() && line.contains("update") && line["update"].is_number_integer())
      update = line["update"].get<int64_t>();
    at = end + 1;
  }
  return update;
}

} // namespace

int64_t latest_update(const RunPaths& p) {
  return std::max(last_update_in(fs::path(p.dir) / "log.jsonl"),
                  last_update_in(fs::path(p.dir) / "pruned" / "log.jsonl"));
}

} // namespace pillars::study
