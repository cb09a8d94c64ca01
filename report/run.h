// Reading one run directory for `pillars report`: everything the report shows, gathered into a
// struct, with every optional input allowed to be missing or unreadable.
//
// Files read (formats in train/session.h and the code that writes them; unknown fields and line types
// are ignored):
//   log.jsonl           required: "train" and "valid" lines (curves); an optional "phase" field on
//                       any line marks where a training phase begins ("gct", "finetune", ...)
//   config.json         the resolved experiment (its "name", "task", data.test_split / eval.split)
//   head_metrics.jsonl  per-module head-diversity metrics and HUDS similarity matrices over updates
//                       (head_metrics.jsonl.xz where a study packed it)
//   votes.json          Voting-to-Stay: votes, groups and kept heads per module
//   prune.json          the pruning summary: parameters before/after, kept heads per module
//   eval_<split>.json   the final evaluation: BLEU / ROUGE / perplexity, sentences per second
//   checkpoint_*.safetensors  the model: parameters without embeddings and FLOPs per target token
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace pillars::report {

// A point of a curve: the update it was logged at and its value.
struct Point {
  double update = 0, value = 0;
};

// Where a training phase starts, from the "phase" field of log.jsonl lines.
struct PhaseStart {
  double update = 0;
  std::string phase;
};

// The model's size and cost, from one of the run's checkpoints.
struct ModelStats {
  std::optional<double> parameters;      // without embeddings (the paper's accounting)
  std::string parameters_source;         // where the number came from ("checkpoint_best.safetensors", "prune.json")
  std::optional<double> flops_per_token; // forward FLOPs per target token (see flops_method)
  std::string flops_source;              // the checkpoint whose model config was costed
};

// How FLOPs per target token are measured (shown in the report).
extern const char* const kFlopsMethod;
// The representative shape used for FLOPs: batch 1, source and target length 32.
constexpr int kFlopsBatch = 1, kFlopsLength = 32;

struct RunData {
  std::string dir;                 // as given on the command line
  std::string name;                // a short name for legends and tables (the directory's name, made unique)
  nlohmann::json config;           // config.json, or null
  std::vector<nlohmann::json> log; // the log.jsonl lines that parsed (objects only)
  std::vector<Point> train_loss;   // "train" lines
  std::vector<Point> valid_loss, valid_ppl, valid_bleu, valid_rouge; // "valid" lines
  std::vector<PhaseStart> phases;                                    // in log order
  std::vector<nlohmann::json> head_metrics;                          // head_metrics.jsonl lines of type "head_metrics"
  nlohmann::json votes, prune, eval; // votes.json, prune.json, eval_<split>.json, or null
  std::string eval_file;             // the eval file's name ("" when none)
  ModelStats model;
  std::vector<std::string> notes; // problems met while reading (shown in the report)
};

// Reads the run directory `dir`. `split` names the evaluation file (eval_<split>.json); "" means
// eval_test.json, else the split named by config.json (eval.split, then data.test_split).
// `model_stats`: also load a checkpoint to count parameters and FLOPs (the slow part).
// Throws InputError when `dir` does not exist, is not a directory, or has no log.jsonl.
RunData load_run(const std::string& dir, const std::string& split, bool model_stats = true);

// Gives each run a distinct name: the directory's last component, or more of its path when two
// runs would otherwise share one.
void assign_names(std::vector<RunData>& runs);

// The number at j[key] if it is one (not a string, not null), else nothing.
std::optional<double> number_at(const nlohmann::json& j, const char* key);

// The string at j[key] if it is one, else `fallback`.
std::string string_at(const nlohmann::json& j, const char* key, const std::string& fallback = "");

} // namespace pillars::report
