// Checkpoints: the model's parameters, the optimizer's state and the trainer's position, in one
// safetensors file (written atomically: a crash never leaves a partial file under the name), with a
// JSON twin beside it for people and tools (`checkpoint_last.safetensors` + `checkpoint_last.json`).
//
// Inside the safetensors file:
//   tensors      every parameter under its own name ("encoder.layers.0.fc1.weight", ...), then the
//                optimizer's state under "optimizer.<entry>" (engine/optim/optimizer.h)
//   __metadata__ "pillars.model": the TransformerConfig as JSON,
//                "pillars.state": the TrainerState as JSON
// A checkpoint without optimizer state (an averaged or pruned model) is still a checkpoint: it
// evaluates and translates, and `--resume` refuses it.
#pragma once
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/optim/optimizer.h"
#include "engine/params.h"
#include "models/transformer.h"
#include "train/checkpoint_meta.h"
#include "train/experiment.h"
#include "train/pipeline.h"

namespace pillars::train {

// Writes path (.safetensors) and its JSON twin (path with .json). optimizer may be null.
void save_checkpoint(const std::string& path, const TransformerConfig& cfg, const ParamStore& params,
                     const optim::Optimizer* optimizer, const TrainerState& state, const nlohmann::json& extra = {});

struct LoadedCheckpoint {
  TransformerConfig config;
  ParamStore params;
  optim::NamedTensors optimizer_state; // empty if the file has none
  TrainerState state;
  nlohmann::json extra;
};
// Throws InputError naming the file for anything missing or malformed, and for a checkpoint that
// does not check out: content that no longer matches its checksum (engine/io/safetensors.h), no
// checksum at all (unless allow_unchecked_checkpoints(true): a file some other tool wrote or
// rewrote cannot be told from a damaged one),
// a parameter the recorded model config does not have or lacks, one of the wrong shape or of
// another dtype than F32, or a weight or optimizer value that is NaN or infinite (naming the
// tensor and the element).
LoadedCheckpoint load_checkpoint(const std::string& path);

// `--allow-unchecked` of every command that loads checkpoints: load one that records no
// "pillars.checksum" (with a note on stderr) instead of refusing it. Process-wide, because the
// checkpoints a command reads are loaded deep inside it (a resume, model.init_from, the averaged
// best ones) and the user's answer is the same for all of them. Off by default.
void allow_unchecked_checkpoints(bool allow);

// A checkpoint used with a run directory's text pipeline must have been trained with its
// dictionary: the same size, and (for checkpoints that record it) the same words in the same
// order. Throws InputError naming the checkpoint and the run's dict.txt otherwise.
void check_vocabulary(const LoadedCheckpoint& checkpoint, const std::string& checkpoint_path,
                      const TextPipeline& pipeline, const std::string& run_dir);

// The model a checkpoint records (its "pillars.model") must be the model `expected` describes:
// the same architecture, field by field — widths, heads, layers, norm placement, activation,
// embedding sharing, vocabulary, padding id. Dropout rates are training settings and may differ;
// a pruned checkpoint (module_heads) may have fewer heads per module than `heads`, not more.
// Without this a checkpoint of the same shapes but another activation or norm placement would
// load and decode nonsense. Throws InputError naming the checkpoint, `expected_origin` (the run's
// config.json, or the experiment file) and the first field that differs, by its experiment name
// ("model.activation").
void check_model_config(const LoadedCheckpoint& checkpoint, const std::string& checkpoint_path,
                        const TransformerConfig& expected, const std::string& expected_origin);

// What a command that loads one of a run's checkpoints checks before using it (translate,
// generate, metrics, eval): check_vocabulary against the run's dict.txt, then check_model_config
// against the model of the run's config.json (`run_config`, as train::load_run_config read it).
void check_run_checkpoint(const LoadedCheckpoint& checkpoint, const std::string& checkpoint_path,
                          const TextPipeline& pipeline, const std::string& run_dir, const Experiment& run_config);

// The element-wise mean of the parameters of several checkpoints of the same model (fairseq's
// average_checkpoints.py), accumulated in double.
ParamStore average_checkpoints(const std::vector<std::string>& paths, TransformerConfig* config_out);

} // namespace pillars::train
