// A run with head methods (docs/METHOD.md §4–§5): the phases of one `pillars train`.
//
//   phase 1   train with the `heads` section's passes (GCT, a baseline's regularizer or gates),
//             measuring head diversity on a held-out batch into head_metrics.jsonl;
//             until the prune trigger (prune.epoch epochs, or the centroid shift below prune.rho)
//   prune     V2S: vote over the training set and keep the winners (or Michel's importance, or
//             Voita's gates); remove the other heads for real (ght/prune.h); write votes.json,
//             prune.json and checkpoint_pruned.safetensors
//   phase 2   fine-tune the pruned model in RUN/pruned/ (a run directory of its own: config,
//             log, checkpoints, evaluation) with the regularizer off
//
// How phase 2 is scheduled (prune.finetune_schedule):
//   continue (default; the authors' code trains on in one fairseq run) — phase 2 carries on phase
//     1's training: Adam's first and second moments of the kept heads (the rows of W^Q, W^K, W^V
//     and their biases, the columns of W^out, sliced as the weights are: ght/prune.h) and of every
//     other parameter, each parameter's step count t (Adam's bias correction 1 − βᵗ) and the
//     learning-rate schedule, at update u+1 after phase 1's u (no second warm-up). Update and
//     epoch numbers count on, the batch order and dropout streams are those of an unpruned run,
//     and both phases share the run's budget, as a run without pruning (vanilla) spends it:
//       updates   phase 1 stops at train.max_updates − prune.finetune_updates at the latest;
//                 phase 2 runs until train.max_updates in all, and at most prune.finetune_updates
//                 (0 = no cap of its own: phase 2 runs until train.max_updates);
//       epochs    phase 2 finishes the epoch phase 1 stopped in, then at most prune.finetune_epochs
//                 more, never past train.max_epochs;
//       prune.finetune_minutes, prune.finetune_patience   phase 2's own clock and early stopping.
//     checkpoint_pruned carries the sliced optimizer state, so a run resumed after the prune and
//     `pillars prune --from` continue from it. A trained model without optimizer state (--from an
//     averaged checkpoint) falls back to "restart", with a note.
//   restart — a fresh optimizer at a constant learning rate, the one phase 1 ended with, counted
//     from update 1, for prune.finetune_epochs / _updates / _minutes / _patience alone (0 = no limit).
//
// Resuming picks up where the run stopped: phase 1 from its checkpoint_last, the prune step is
// skipped when prune.json exists (phase 2 then starts from checkpoint_pruned), phase 2 resumes from
// pruned/checkpoint_last; a resumed run ends bit for bit where an uninterrupted one does.
// Without prune.method the run is phase 1 alone: train/session.cpp calls train_phase
// (train/trainer.h) itself.
#pragma once
#include <functional>
#include <memory>
#include <string>

#include "ght/head_metrics.h"
#include "steps/task.h"
#include "train/session.h"
#include "train/trainer.h"

namespace pillars::train {

// Runs the phases of a pruning run (prune.method set); `base` carries the decode scorers and
// checkpoint extras. Returns the run directories to evaluate, in order (run_dir, and run_dir/pruned).
// from_checkpoint (non-null): `params` is a trained model (`pillars prune --from`) that was at this
// trainer state, with this optimizer state (empty if its checkpoint has none); phase 1 is skipped.
std::vector<std::string> train_with_heads(const Experiment& e, const TransformerConfig& cfg, ParamStore& params,
                                          const RunData& data, const TrainOptions& base,
                                          const TrainingStart* from_checkpoint = nullptr);

// The subdirectory of the fine-tuning phase.
constexpr const char* kPrunedDir = "pruned";

} // namespace pillars::train
