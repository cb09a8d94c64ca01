// Reading a run directory for `pillars report`: see run.h.
#include "report/run.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "base/error.h"
#include "datasets/xz.h"
#include "engine/passes/flops.h"
#include "ght/head_metrics.h"
#include "models/transformer.h"
#include "train/checkpoint.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace pillars::report {

const char* const kFlopsMethod =
    "FLOPs per target token: count_flops (engine/passes/flops.h) of the model's forward graph without dropout "
    "(embeddings, all layers, output projection and loss; a multiply-add is 2 FLOPs) built from the checkpoint's "
    "model config at batch 1 and source and target length 32 (a language model: length 32), divided by the 32 "
    "target tokens. Decoding with cached keys and values costs less per token; this compares models, not decoders.";

namespace {

// The whole of a text file, or nothing when it cannot be opened.
std::optional<std::string> slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A JSON object file: null when the file is missing; null plus a note when it is not a JSON object.
json read_object(const fs::path& path, std::vector<std::string>& notes) {
  if (!fs::is_regular_file(path)) return nullptr;
  const std::optional<std::string> text = slurp(path);
  if (!text) {
    notes.push_back(path.filename().string() + ": cannot be read");
    return nullptr;
  }
  json j = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) {
    notes.push_back(path.filename().string() + ": not a JSON object (ignored)");
    return nullptr;
  }
  return j;
}

// The JSON objects of JSON-lines text; lines that are not objects are skipped and counted in a
// note that names `file`.
std::vector<json> parse_lines(const std::string& text, const std::string& file, std::vector<std::string>& notes) {
  std::vector<json> out;
  std::istringstream in(text);
  std::string line;
  size_t bad = 0;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    json j = json::parse(line, nullptr, false);
    if (j.is_object())
      out.push_back(std::move(j));
    else
      ++bad;
  }
  if (bad) notes.push_back(file + ": " + std::to_string(bad) + " line(s) not JSON objects, skipped");
  return out;
}

// The JSON objects of a JSON-lines file (empty when missing).
std::vector<json> read_lines(const fs::path& path, std::vector<std::string>& notes) {
  const std::optional<std::string> text = fs::is_regular_file(path) ? slurp(path) : std::nullopt;
  return text ? parse_lines(*text, path.filename().string(), notes) : std::vector<json>{};
}

// The same for a log a study may have stored compressed (datasets/xz.h: NAME.xz, then NAME).
std::vector<json> read_lines_or_xz(const fs::path& path, std::vector<std::string>& notes) {
  try {
    return parse_lines(data::xz_then_plain_text(path.string()), path.filename().string(), notes);
  } catch (const InputError& e) {
    notes.push_back(path.filename().string() + ": cannot be read (" + e.what() + ")");
    return {};
  }
}

// The last k components of a directory's path joined by '/' ("runs/a/" with k = 1: "a").
std::string path_tail(const std::string& dir, size_t k) {
  std::vector<std::string> parts;
  for (const auto& p : fs::path(dir).lexically_normal()) {
    const std::string s = p.string();
    if (!s.empty() && s != "/" && s != ".") parts.push_back(s);
  }
  std::string out;
  for (size_t i = parts.size() > k ? parts.size() - k : 0; i < parts.size(); ++i)
    out += (out.empty() ? "" : "/") + parts[i];
  return out.empty() ? dir : out;
}

// Appends (update, j[key]) to `curve` when both are numbers.
void add_point(std::vector<Point>& curve, const json& j, const char* key) {
  const std::optional<double> u = number_at(j, "update"), v = number_at(j, key);
  if (u && v) curve.push_back({*u, *v});
}

// Sorts the log's lines into curves and phase starts.
void read_log(RunData& r) {
  std::string phase;
  double last_update = 0;
  for (const json& line : r.log) {
    if (const auto u = number_at(line, "update")) last_update = *u;
    const std::string type = string_at(line, "type");
    if (type == "train") add_point(r.train_loss, line, "loss");
    if (type == "valid") {
      add_point(r.valid_loss, line, "loss");
      add_point(r.valid_ppl, line, "ppl");
      add_point(r.valid_bleu, line, "bleu");
      add_point(r.valid_rouge, line, "rouge");
    }
    const std::string p = string_at(line, "phase");
    if (!p.empty() && p != phase) {
      r.phases.push_back({last_update, p});
      phase = p;
    }
  }
}

// The evaluation file: eval_<split>.json when a split is given; otherwise the first that exists of
// eval_test.json, the config's eval.split and data.test_split, or the only eval_*.json there is.
fs::path eval_path(const fs::path& dir, const std::string& split, const json& config, std::vector<std::string>& notes) {
  auto file = [&](const std::string& s) { return dir / ("eval_" + s + ".json"); };
  if (!split.empty()) {
    if (!fs::is_regular_file(file(split))) notes.push_back("eval_" + split + ".json: not found");
    return file(split);
  }
  std::vector<std::string> splits = {"test"};
  if (config.is_object()) {
    if (config.contains("eval")) splits.push_back(string_at(config["eval"], "split"));
    if (config.contains("data")) splits.push_back(string_at(config["data"], "test_split"));
  }
  for (const std::string& s : splits)
    if (!s.empty() && fs::is_regular_file(file(s))) return file(s);
  std::vector<fs::path> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("eval_", 0) == 0 && entry.path().extension() == ".json") found.push_back(entry.path());
  }
  return found.size() == 1 ? found[0] : file("test");
}

// Forward FLOPs per target token of a model config (kFlopsMethod).
double flops_per_token(const TransformerConfig& cfg) {
  GraphOptions options;
  options.train = false;
  if (cfg.decoder_only)
    return count_flops(build_lm_training_graph(cfg, kFlopsBatch, kFlopsLength, options).graph).total() /
           (kFlopsBatch * kFlopsLength);
  return count_flops(build_seq2seq_training_graph(cfg, kFlopsBatch, kFlopsLength, kFlopsLength, options).graph)
             .total() /
         (kFlopsBatch * kFlopsLength);
}

// Parameters and FLOPs. Parameters: the evaluated checkpoint's, else prune.json's
// params_after_no_embeddings, else those of checkpoint_best / _avg / _last (the first that loads).
// FLOPs: from the model config of the first checkpoint that loads, in the same order.
void read_model(RunData& r, const fs::path& dir) {
  std::vector<fs::path> candidates;
  bool first_is_eval = false;
  if (const std::string c = string_at(r.eval, "checkpoint"); !c.empty()) {
    // Recorded relative to the run folder (an absolute path in records written before): the run's
    // own file first, so that a moved or copied run reads its own checkpoint.
    const fs::path own = dir / fs::path(c).filename();
    const fs::path p = fs::path(c).is_relative() || fs::is_regular_file(own) ? own : fs::path(c);
    if (fs::is_regular_file(p)) candidates.push_back(p), first_is_eval = true;
  }
  for (const char* name : {"checkpoint_best.safetensors", "checkpoint_avg.safetensors", "checkpoint_last.safetensors"})
    if (fs::is_regular_file(dir / name)) candidates.push_back(dir / name);
  for (size_t i = 0; i < candidates.size(); ++i) {
    try {
      const train::LoadedCheckpoint c = train::load_checkpoint(candidates[i].string());
      const std::string name = candidates[i].filename().string();
      const std::optional<double> pruned = number_at(r.prune, "params_after_no_embeddings");
      if ((i == 0 && first_is_eval) || !pruned) {
        r.model.parameters = static_cast<double>(count_parameters(c.params, /*include_embeddings=*/false));
        r.model.parameters_source = name;
      } else {
        r.model.parameters = pruned;
        r.model.parameters_source = "prune.json";
      }
      r.model.flops_per_token = flops_per_token(c.config);
      r.model.flops_source = name;
      return;
    } catch (const std::exception& e) {
      r.notes.push_back(candidates[i].filename().string() + ": not usable (" + e.what() + ")");
    }
  }
  if (const std::optional<double> pruned = number_at(r.prune, "params_after_no_embeddings")) {
    r.model.parameters = pruned;
    r.model.parameters_source = "prune.json";
  }
}

} // namespace

std::optional<double> number_at(const json& j, const char* key) {
  if (!j.is_object()) return std::nullopt;
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

std::string string_at(const json& j, const char* key, const std::string& fallback) {
  if (!j.is_object()) return fallback;
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
}

RunData load_run(const std::string& dir_name, const std::string& split, bool model_stats) {
  const fs::path dir(dir_name);
  if (!fs::exists(dir)) throw InputError("report: run directory '" + dir_name + "' does not exist");
  if (!fs::is_directory(dir)) throw InputError("report: '" + dir_name + "' is not a directory");
  if (!fs::is_regular_file(dir / "log.jsonl"))
    throw InputError("report: run directory '" + dir_name + "' has no log.jsonl");
  RunData r;
  r.dir = dir_name;
  r.name = path_tail(dir_name, 1);
  r.config = read_object(dir / "config.json", r.notes);
  r.log = read_lines(dir / "log.jsonl", r.notes);
  for (json& line : r.log) ght::read_legacy_keys(line);
  read_log(r);
  for (json& line : read_lines_or_xz(dir / "head_metrics.jsonl", r.notes))
    if (string_at(line, "type", "head_metrics") == "head_metrics" && line.contains("modules") &&
        line["modules"].is_array()) {
      for (json& m : line["modules"]) {
        ght::read_legacy_keys(m);
        if (m.is_object()) m.erase("pairs");
      } // the pairwise matrices are not shown: do not keep them
      r.head_metrics.push_back(std::move(line));
    }
  r.votes = read_object(dir / "votes.json", r.notes);
  r.prune = read_object(dir / "prune.json", r.notes);
  const fs::path eval = eval_path(dir, split, r.config, r.notes);
  r.eval = read_object(eval, r.notes);
  if (!r.eval.is_null()) r.eval_file = eval.filename().string();
  if (model_stats) read_model(r, dir);
  return r;
}

void assign_names(std::vector<RunData>& runs) {
  // The last k components of each directory's path, for the smallest k that makes them distinct.
  for (size_t k = 1; k <= 16; ++k) {
    std::map<std::string, int> seen;
    for (RunData& r : runs) seen[r.name = path_tail(r.dir, k)]++;
    if (seen.size() == runs.size()) return;
  }
  for (size_t i = 0; i < runs.size(); ++i) {
    std::string numbered = "#";
    numbered.append(std::to_string(i + 1)).append(" ").append(runs[i].name);
    runs[i].name = numbered;
  }
}

} // namespace pillars::report
