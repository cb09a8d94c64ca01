// A whole run, as `pillars train` and `pillars eval` drive it: prepare the data, build and train the
// model, evaluate the chosen checkpoint on the test split, write everything into the run directory.
//
// Run directory (runs/<experiment name> unless --out says otherwise):
//   config.json                 the resolved experiment (every default filled in)
//   pipeline.json dict.txt bpe.codes   the text pipeline (train/pipeline.h)
//   log.jsonl                   progress, validations, checkpoints (train/trainer.h)
//   checkpoint_{last,best,avg}.safetensors (+ .json twins)
//   eval_<split>.json, eval_<split>.hyp    the final evaluation: scores and hypotheses
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "decode/search.h"
#include "engine/dist/communicator.h"
#include "models/transformer.h"
#include "train/experiment.h"

namespace pillars::train {

struct SessionOptions {
  std::string run_dir; // "" = runs/<name>
  bool resume = false;
  // A run folder that holds any of a run's files (run_files_in) is refused without --resume; with
  // --overwrite its whole content is first moved aside to a new sibling folder (never deleted).
  bool overwrite = false;
  // Set by run_experiment, not by a flag: --resume of a run that saved nothing (killed before its
  // first checkpoint: only start-up files and log lines) starts it again from update 0 in place.
  bool restart_unsaved = false;
  bool quiet = false;
  bool evaluate = true; // evaluate on the test split after training
  // `pillars prune EXP --from CKPT`: start from this trained checkpoint, skip the first phase and
  // run the experiment's prune step and fine-tuning (train/head_phases.h).
  std::string prune_from;
  // The data-parallel job this process belongs to (engine/dist/communicator.h; `pillars train`
  // passes dist::world()); null: this process alone. Rank 0 makes and locks the run directory,
  // writes it and evaluates; every rank trains its share of each update (train/data_parallel.h).
  dist::Communicator* communicator = nullptr;
};

// Returns the final evaluation (empty if options.evaluate is false).
nlohmann::json run_experiment(const Experiment& e, const SessionOptions& options);

struct EvalOptions {
  std::string split;      // "" = the experiment's eval.split / test split
  std::string checkpoint; // "" = eval.checkpoint of the run's config
  std::optional<int64_t> beam, batch_sentences, max_len_b;
  std::optional<double> lenpen, max_len_a;
  // The control for "does the model read its input?": pair every target with the next example's
  // source (source i+1 for target i, the last with the first) before scoring. A model that
  // conditions on its source loses here; one that ignores it scores the same. Seq2seq tasks only;
  // the result goes to eval_<split>_shuffled.json/.hyp.
  bool shuffle_sources = false;
  bool quiet = false;
  Device device = Device::cpu;        // where the decoding runs (the parameters are copied there)
  std::optional<Precision> precision; // the decoding's matmul precision (CPU); unset: the run's eval.precision
};
// Evaluates a trained run (its directory, or one of its checkpoint files; train/evaluate.cpp):
// loss/perplexity and BLEU on the split; writes eval_<split>.json/.hyp into the run directory; returns the scores.
nlohmann::json evaluate_run(const std::string& run_dir_or_checkpoint, const EvalOptions& options);

// The beam-search settings of an experiment's `eval` section.
decode::SearchOptions search_options(const EvalSettings& ev, const TransformerConfig& cfg);

// The files directly in `dir` that only a run makes (config.json, pipeline.json, dict.txt,
// bpe.codes, log.jsonl, head_metrics.jsonl, votes.json, prune.json, importance.json, .lock,
// checkpoint_*, eval_*, the pruned/ folder, a save's temporaries), by name, sorted; empty when
// there are none or `dir` does not exist. Any one of them makes the folder (part of) a run.
std::vector<std::string> run_files_in(const std::string& dir);

// The run directory of a checkpoint path or a directory.
std::string run_dir_of(const std::string& run_dir_or_checkpoint);
// The experiment a run was trained with (its config.json), without re-checking the paths it named
// then (model.init_from, data.bpe_codes): evaluation needs neither.
Experiment load_run_config(const std::string& run_dir);
// The checkpoint file to use: `target` itself if it is a file; else the run's checkpoint_<choice>
// ("" = the run's eval.checkpoint). When the choice came from the config and its file is missing,
// falls back to checkpoint_last with a note; an explicit choice that is missing is an InputError.
std::string checkpoint_path(const std::string& target, const std::string& choice, bool quiet);

} // namespace pillars::train
