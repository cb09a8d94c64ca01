// The training loop, for every task (steps/task.h: translation, summarization, language modeling).
//
//   PreparedSeq2Seq p = prepare_seq2seq(experiment, run_dir, /*verbose=*/true);    // train/prepare.h
//   TrainerOutcome r = train_seq2seq(experiment, cfg, params, p.data, {.run_dir = dir, .resume = false});
//
// One epoch = the task's batches in the epoch's seeded order. Per batch: forward and
// backward (steps/steps.h), optional gradient clipping, one optimizer update at the schedule's
// learning rate (update_freq > 1 accumulates several batches, weighted by their target tokens,
// before each update). Every `validate_every` epochs: validation loss and perplexity, and BLEU when
// the caller passes a decoder for it; the best validation so far (train.best_metric) is kept as
// checkpoint_best, the last state as checkpoint_last, the `keep_best` best as checkpoint_eE_uU for
// averaging. Stopping rules: max_epochs, max_updates, max_minutes, patience. A NaN/inf loss stops
// with an error and leaves the last good checkpoint in place.
//
// Determinism: the batch order is a function of (seed, epoch) and every dropout mask of (seed,
// update), so the same experiment gives the same losses, and `resume` (which restores parameters,
// optimizer state and position from checkpoint_last) continues the uninterrupted run exactly.
//
// Output in run_dir: log.jsonl (one JSON object per progress line, validation and checkpoint) and
// the checkpoints; progress lines on stderr.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/dist/communicator.h"
#include "engine/params.h"
#include "models/transformer.h"
#include "train/checkpoint.h"
#include "train/experiment.h"
#include "steps/task.h"
#include "train/pass_list.h"

namespace pillars::train {

struct ValidScores {
  double loss = 0;             // mean NLL per target token (nats)
  double ppl = 0;              // exp(loss)
  std::optional<double> bleu;  // when a BLEU scorer was given
  std::optional<double> rouge; // when a ROUGE scorer was given
};

// Extra validation metrics computed by decoding (BLEU, ROUGE): given the current model, returns
// the named score ("bleu" or "rouge") on the validation set.
using DecodeScorer = std::function<double(const TransformerConfig&, const ParamStore&)>;

// Where a new session starts when it continues another's training instead of beginning it (it is
// not a --resume: its run directory may be new): the trainer's position (update count, epoch, batch
// in the epoch; the rest of the state as the caller sets it) and the optimizer's state (empty: a
// fresh optimizer). Phase 2 of a pruning run under prune.finetune_schedule "continue" starts from
// phase 1's end so (train/head_phases.h).
struct TrainingStart {
  TrainerState state;
  optim::NamedTensors optimizer_state;
};

struct TrainOptions {
  std::string run_dir;
  bool resume = false;
  bool quiet = false;              // no progress lines (tests)
  DecodeScorer valid_bleu;         // optional
  DecodeScorer valid_rouge;        // optional
  nlohmann::json checkpoint_extra; // stored in every checkpoint (dictionary, tokenizer, ...)
  std::string phase;               // "" or the phase of a pruning run ("train", "finetune"; train/head_phases.h),
                                   // written into every log line
  // A session that is not resumed starts here instead of at update 0 with a fresh optimizer.
  std::optional<TrainingStart> start;
  // The budget the learning-rate schedule is planned over (cosine and linear reach their end at
  // its planned number of updates); unset: this session's own e.train. The two phases of a pruning
  // run under "continue" plan over the whole run's budget, so phase 2 continues phase 1's schedule.
  std::optional<TrainSettings> schedule_budget;
  // Called after every update (e.g. to measure head metrics every N updates).
  std::function<void(const TrainerState&)> after_update;
  // Called after every validation; a non-empty return value stops training with that reason
  // (e.g. V2S's trigger "centroid shift below rho").
  std::function<std::string(const TrainerState&, const ValidScores&)> after_validation;
  // The data-parallel job's ranks (train/data_parallel.h); null: this process alone. Rank 0 alone
  // writes run_dir, prints, validates and calls after_update and after_validation.
  dist::Communicator* communicator = nullptr;
  // train.precision bf16 on the CPU: each update rounds every weight to bf16 once (true), or every
  // product rounds its own (false; the same bits, for tests to compare). train/device_scope.h.
  bool bf16_weight_cache = true;
};

struct TrainerOutcome {
  TrainerState state;
  std::vector<float> losses; // the training loss of every update of this session, in order
  std::optional<ValidScores> last_valid;
};

// Trains `params` (the model of cfg) on the task.
TrainerOutcome train_model(const Experiment& e, const TransformerConfig& cfg, ParamStore& params,
                           steps::TrainingTask& task, const TrainOptions& options);
// The run's data: sentence pairs or a token stream (exactly one of the two), which the phases
// build their tasks and the held-out batch of the head metrics from.
struct RunData {
  const steps::Seq2SeqData* pairs = nullptr;
  const steps::LmData* stream = nullptr;
};

// The training task of a model on the run's data, its steps made for context `c` (train/pass_list.h).
std::unique_ptr<steps::TrainingTask> make_task(const Experiment& e, const TransformerConfig& cfg, ParamStore& params,
                                               const RunData& data, const StepContext& c);

// One phase of training: the method's parameters, the task of context `c`, the head metrics of
// heads.metrics (with the shift trigger when asked) into to.run_dir/head_metrics.jsonl, and the
// trainer under the limits of `limits` (e, or a phase's cut of it). A run without pruning is this
// phase alone, with step_context(e).
TrainerOutcome train_phase(const Experiment& e, const Experiment& limits, const TransformerConfig& cfg,
                           ParamStore& params, const RunData& data, const StepContext& c, TrainOptions to,
                           bool shift_trigger = false);

// train_model of sentence pairs and of a language model's token streams, with the experiment's step
// settings but not its `heads` methods (train_phase, above, is the run's training).
TrainerOutcome train_seq2seq(const Experiment& e, const TransformerConfig& cfg, ParamStore& params,
                             const steps::Seq2SeqData& data, const TrainOptions& options);
TrainerOutcome train_lm(const Experiment& e, const TransformerConfig& cfg, ParamStore& params,
                        const steps::LmData& data, const TrainOptions& options);

} // namespace pillars::train
