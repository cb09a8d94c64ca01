// The compiled training and evaluation steps of the encoder-decoder, one per batch shape.
//
//   Seq2SeqSteps steps(cfg, params, label_smoothing);
//   float loss = steps.train(batch, seed);   // forward + backward: gradients in steps.slots()
//   optimizer.step(steps.slots(), lr);
//   double nll = steps.eval(batch);           // forward only, no dropout, no label smoothing
//
// A graph is built (forward, autodiff, memory plan) the first time a shape (B, Ts, Tt) is seen and
// reused after; all of them share one arena (engine/executor.h), so memory is that of the largest
// shape, not the sum. Batching (train/batching.h) keeps the number of shapes small.
//
// The steps run where the parameters are: with the ParamStore on the GPU (ParamStore::to), the
// graphs run on a CUDA executor (arena in device memory, each shape's step captured as a CUDA
// graph after its first run) and the gradients in slots() are device tensors. Moving the store
// to another device drops the compiled graphs.
//
// set_attention_backend chooses how the attention modules compute (models/transformer.h
// AttentionBackend) and set_fuse_linear_activation whether the fusion pass runs; both drop the
// compiled graphs.
#pragma once
#include <map>
#include <memory>
#include <tuple>

#include "engine/executor.h"
#include "engine/optim/optimizer.h"
#include "models/transformer.h"
#include "train/batching.h"
#include "train/extension.h"

namespace pillars::train {

class Seq2SeqSteps {
 public:
  // Keeps references to cfg and params (they must outlive this object).
  Seq2SeqSteps(const TransformerConfig& cfg, ParamStore& params, float label_smoothing,
               std::shared_ptr<GraphExtension> extension = nullptr);
  // One forward + backward on the batch with dropout seed `seed`. Returns the label-smoothed loss
  // (mean over the batch's target tokens); the gradients of that mean (plus the extension's terms)
  // are in slots() until the next call of train() or eval().
  float train(const Seq2SeqBatch& batch, uint64_t seed);
  std::vector<optim::ParamSlot>& slots() { return slots_; }
  // The summed negative log-likelihood (nats) of the batch's targets, without dropout or smoothing.
  double eval(const Seq2SeqBatch& batch);
  size_t compiled_shapes() const { return train_.size() + eval_.size(); }
  // Where training is (for extensions whose behaviour follows a schedule).
  void set_progress(int64_t update, double progress) { update_ = update, progress_ = progress; }
  void set_attention_backend(AttentionBackend b) { attention_backend_ = b, train_.clear(), eval_.clear(); }
  // Rewrite each linear → relu/gelu into one linear_act node (engine/passes/fuse_linear.h).
  void set_fuse_linear_activation(bool on) { fuse_linear_ = on, train_.clear(), eval_.clear(); }

 private:
  struct Compiled {
    Seq2SeqGraph model;
    ValueId objective = kNoValue; // the loss autodiff differentiates (model.loss + extension terms)
    std::vector<ValueId> params, grads;
    std::unique_ptr<Executor> executor;
  };
  using Shape3 = std::tuple<int64_t, int64_t, int64_t>;
  Compiled& compiled(std::map<Shape3, std::unique_ptr<Compiled>>& cache, const Seq2SeqBatch& b, bool train);
  void bind(Compiled& c, const Seq2SeqBatch& b, uint64_t seed, bool train);

  const TransformerConfig& cfg_;
  ParamStore& params_;
  float label_smoothing_;
  std::shared_ptr<GraphExtension> extension_;
  std::shared_ptr<SharedArena> arena_; // on the parameters' device (see steps.cpp: follow_params)
  std::map<Shape3, std::unique_ptr<Compiled>> train_, eval_;
  std::vector<optim::ParamSlot> slots_;
  int64_t update_ = 0;
  double progress_ = 0;
  AttentionBackend attention_backend_ = AttentionBackend::pillars;
  bool fuse_linear_ = false;
};

// The decoder-only language model's steps: batches of B blocks of T tokens (train/task.h).
class LmSteps {
 public:
  LmSteps(const TransformerConfig& cfg, ParamStore& params, float label_smoothing,
          std::shared_ptr<GraphExtension> extension = nullptr);
  // tokens, target: (B·T) ids each (target = tokens shifted by one), pad where a block is short.
  float train(int64_t B, int64_t T, const std::vector<int32_t>& tokens, const std::vector<int32_t>& target, uint64_t seed);
  std::vector<optim::ParamSlot>& slots() { return slots_; }
  double eval(int64_t B, int64_t T, const std::vector<int32_t>& tokens, const std::vector<int32_t>& target);
  void set_progress(int64_t update, double progress) { update_ = update, progress_ = progress; }
  void set_attention_backend(AttentionBackend b) { attention_backend_ = b, train_.clear(), eval_.clear(); }
  // Rewrite each linear → relu/gelu into one linear_act node (engine/passes/fuse_linear.h).
  void set_fuse_linear_activation(bool on) { fuse_linear_ = on, train_.clear(), eval_.clear(); }

 private:
  struct Compiled {
    LmGraph model;
    ValueId objective = kNoValue;
    std::vector<ValueId> params, grads;
    std::unique_ptr<Executor> executor;
  };
  // Binds one batch; returns its target tokens that are not padding.
  int64_t bind(Compiled& c, int64_t B, int64_t T, const std::vector<int32_t>& tokens, const std::vector<int32_t>& target,
               uint64_t seed, bool train);
  Compiled& compiled(std::map<std::pair<int64_t, int64_t>, std::unique_ptr<Compiled>>& cache, int64_t B, int64_t T, bool train);
  const TransformerConfig& cfg_;
  ParamStore& params_;
  float label_smoothing_;
  std::shared_ptr<GraphExtension> extension_;
  std::shared_ptr<SharedArena> arena_;
  std::map<std::pair<int64_t, int64_t>, std::unique_ptr<Compiled>> train_, eval_;
  std::vector<optim::ParamSlot> slots_;
  int64_t update_ = 0;
  double progress_ = 0;
  AttentionBackend attention_backend_ = AttentionBackend::pillars;
  bool fuse_linear_ = false;
};

} // namespace pillars::train
