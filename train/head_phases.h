// A run with head methods (docs/METHOD.md §4–§5): the phases of one `pillars train`.
//
//   phase 1   train with the `heads` section's extension (GCT, a baseline's regulariser or gates),
//             measuring head diversity on a held-out batch into head_metrics.jsonl;
//             until the prune trigger (prune.epoch epochs, or the centroid shift below prune.rho)
//   prune     V2S: vote over the training set and keep the winners (or Michel's importance, or
//             Voita's gates); remove the other heads for real (ght/prune.h); write votes.json,
//             prune.json and checkpoint_pruned.safetensors
//   phase 2   fine-tune the pruned model in RUN/pruned/ (a run directory of its own: config,
//             log, checkpoints, evaluation) with the regulariser off, until early stopping
//
// Resuming picks up where the run stopped: phase 1 from its checkpoint_last, the prune step is
// skipped when prune.json exists, phase 2 resumes from pruned/checkpoint_last.
// Without prune.method the run is phase 1 alone (still with the extension and the metrics).
#pragma once
#include <functional>
#include <memory>
#include <string>

#include "ght/head_metrics.h"
#include "train/session.h"
#include "steps/task.h"
#include "train/trainer.h"

namespace pillars::train {

// What depends on the task (sentence pairs or a token stream).
struct TaskHooks {
  // The training task of a model, with an extension (may be null).
  std::function<std::unique_ptr<TrainingTask>(const TransformerConfig&, ParamStore&, float label_smoothing,
                                              std::shared_ptr<GraphExtension>)>
      make_task;
  // Head metrics of a model on the fixed held-out batch (empty function: no metrics).
  std::function<ght::HeadMetrics(const TransformerConfig&, ParamStore&, const ght::HeadMetricsOptions&)> measure;
};

// Runs the phases; `base` carries the decode scorers and checkpoint extras. Returns the run
// directories to evaluate, in order (run_dir, and run_dir/pruned after pruning).
// from_checkpoint (non-null): `params` is a trained model (`pillars prune --from`) that was at this
// trainer state; phase 1 is skipped.
std::vector<std::string> train_with_heads(const Experiment& e, const TransformerConfig& cfg, ParamStore& params,
                                          const TaskHooks& hooks, const TrainOptions& base,
                                          const TrainerState* from_checkpoint = nullptr);

// The subdirectory of the fine-tuning phase.
constexpr const char* kPrunedDir = "pruned";

} // namespace pillars::train
