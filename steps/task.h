// What the training loop trains: a task hands it batches, runs forward + backward on one, and
// measures the validation loss. Two tasks share the loop (train/trainer.h):
//
//   Seq2SeqTask  translation and summarization: sentence pairs batched by a token budget
//   LmTask       language modeling: the token stream cut into blocks of block_size tokens,
//                each block predicting the stream shifted by one (fairseq's
//                --sample-break-mode none)
#pragma once
#include <memory>
#include <utility>
#include <vector>

#include "engine/optim/optimizer.h"
#include "models/transformer.h"
#include "steps/batching.h"
#include "steps/steps.h"

namespace pillars::steps {

class TrainingTask {
 public:
  virtual ~TrainingTask() = default;
  virtual int64_t batches_per_epoch() const = 0;
  // The training batches of one epoch, in order (a function of seed and epoch only).
  virtual std::vector<Batch> epoch(uint64_t seed, int64_t epoch) const = 0;
  // Forward + backward on a training batch with dropout seed `seed`: returns the mean loss over
  // its target tokens (their number in `tokens`); the gradients are in steps().slots() until the
  // next call.
  virtual float train(const Batch& batch, uint64_t seed, int64_t& tokens) = 0;
  // Σ negative log-likelihood (nats) and the number of target tokens over the validation set.
  virtual std::pair<double, int64_t> valid_nll() = 0;
  // The same over the first `max_batches` training batches in their fixed order (0 = all), forward
  // only, without dropout: the V2S vote runs it on a task whose evaluation steps name their Gram
  // matrices, and reads them after each batch (ModelSteps::set_run_watcher).
  // Of those, only the batches j ≡ rank (mod size): a data-parallel job's ranks share them.
  virtual std::pair<double, int64_t> train_nll(int64_t max_batches, int rank = 0, int size = 1) = 0;
  // The compiled steps: the gradients of the last training step (slots()), where training is,
  // how attention computes, whether the fusion pass runs (steps/steps.h ModelSteps).
  virtual ModelSteps& steps() = 0;
};

struct Seq2SeqData {
  // Token ids, eos last.
  std::vector<std::vector<int32_t>> train_src, train_tgt, valid_src, valid_tgt;
};

struct LmData {
  std::vector<int32_t> train, valid; // the token streams: every line's ids followed by eos
};

// `recipes`: how its training and evaluation steps are made (train/pass_list.h step_recipes).
std::unique_ptr<TrainingTask> make_seq2seq_task(const TransformerConfig& cfg, ParamStore& params,
                                                const Seq2SeqData& data, int64_t max_tokens, StepRecipes recipes);
std::unique_ptr<TrainingTask> make_lm_task(const TransformerConfig& cfg, ParamStore& params, const LmData& data,
                                           int64_t block_size, int64_t max_tokens, StepRecipes recipes);

// Σ negative log-likelihood (nats) and the number of target tokens, forward only, without dropout:
// of sentence pairs batched by max_tokens, and of a token stream in blocks of T.
// max_batches > 0 stops after that many batches; of them, only the batches j ≡ rank (mod size) run.
std::pair<double, int64_t> seq2seq_nll(Seq2SeqSteps& steps, const std::vector<std::vector<int32_t>>& src,
                                       const std::vector<std::vector<int32_t>>& tgt, int64_t max_tokens, int32_t pad,
                                       int64_t max_batches = 0, int rank = 0, int size = 1);
std::pair<double, int64_t> lm_nll(LmSteps& steps, const std::vector<int32_t>& stream, int64_t T, int64_t max_tokens,
                                  int32_t pad, int64_t max_batches = 0, int rank = 0, int size = 1);

// Each block's negative log-likelihood (nats) and target tokens, in stream order, one block at a
// time (forward only, without dropout): the rows a paired bootstrap of a language model's loss
// resamples (eval_<split>.nll). Their sums are lm_nll's, up to the rounding of another batch shape.
std::vector<std::pair<double, int64_t>> lm_block_nll(LmSteps& steps, const std::vector<int32_t>& stream, int64_t T,
                                                     int32_t pad);

// The blocks of a token stream: block i is tokens [i·T, (i+1)·T) predicting [i·T + 1, (i+1)·T + 1);
// the last block is shorter (right-padded in a batch). Writes a batch's (B·T) inputs and targets.
int64_t lm_blocks(const std::vector<int32_t>& stream, int64_t T);
void make_lm_batch(const std::vector<int32_t>& stream, const Batch& batch, int32_t pad, std::vector<int32_t>& tokens,
                   std::vector<int32_t>& target);

} // namespace pillars::steps
