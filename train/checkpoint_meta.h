// What a checkpoint records besides its tensors, and its strict readers: the model's config
// ("pillars.model") and the trainer's position ("pillars.state") as JSON. A checkpoint is a file
// anyone may have edited or another program written, and `--resume` trusts the position it
// records (the kept checkpoints it names are files the trainer deletes), so these readers check
// every field like an experiment file's: type, range and, for file names, that they are the run's
// own. tests/fuzz/fuzz_checkpoint_meta.cpp feeds them arbitrary JSON.
#pragma once
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "models/transformer_config.h"

namespace pillars::train {

// Where the trainer is: enough to continue exactly (the batch order and dropout seeds are functions
// of the experiment seed, the epoch and the update number).
struct TrainerState {
  int64_t epoch = 1;          // the epoch in progress (1-based)
  int64_t batch_in_epoch = 0; // batches of `epoch` already trained
  int64_t updates = 0;        // optimizer updates so far
  double elapsed_seconds = 0; // training time so far (over all resumed sessions)
  double best_valid = 0;      // the best validation score so far (by train.best_metric)
  bool has_best = false;
  int64_t bad_validations = 0;        // consecutive validations without improvement (patience)
  int64_t last_validated_update = -1; // the update whose parameters were validated last
  bool finished = false;              // training reached a stopping rule
  std::string stop_reason;
  // The best checkpoints kept for averaging: file name → score.
  std::map<std::string, double> kept;
};

nlohmann::json to_json(const TransformerConfig& c);
// Reads a recorded model config: every field present and of its type, then
// TransformerConfig::validate(). Throws InputError naming `origin` (the file) and the field.
TransformerConfig transformer_config_from_json(const nlohmann::json& j, const std::string& origin);
nlohmann::json to_json(const TrainerState& s);
// Reads the state strictly (a checkpoint is untrusted input): integers must be JSON integers in
// range (epoch >= 1; batch_in_epoch, updates, bad_validations >= 0, at most limits::kMaxUpdates;
// last_validated_update from -1 to updates), numbers finite (elapsed_seconds >= 0), and every name
// in `kept` a kept checkpoint's (is_kept_checkpoint_name). Throws InputError naming `origin` (the
// file) and the field otherwise.
TrainerState trainer_state_from_json(const nlohmann::json& j, const std::string& origin);
// "checkpoint_e<E>_u<U>.safetensors", the names the trainer gives the best checkpoints it keeps for
// averaging: a plain file name (no folder, no "..") and none of the run's other files.
bool is_kept_checkpoint_name(const std::string& name);

} // namespace pillars::train
