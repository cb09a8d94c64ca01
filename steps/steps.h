// The compiled training and evaluation steps of the encoder-decoder, one per batch shape.
//
//   Seq2SeqSteps steps(cfg, params, label_smoothing);
//   float loss = steps.train(batch, seed);   // forward + backward: gradients in steps.slots()
//   optimizer.step(steps.slots(), lr);
//   double nll = steps.eval(batch);           // forward only, no dropout, no label smoothing
//
// A step is compiled the first time a shape (B, Ts, Tt) is seen and reused after: the model's
// forward graph, then the passes of the one list (steps/pass_list.h: the fusion, the method's
// passes, autodiff, the memory plan), then an executor; all of them share one arena (engine/executor.h), so memory is that of the largest
// shape, not the sum. Batching (steps/batching.h) keeps the number of shapes small.
//
// The steps run where the parameters are: with the ParamStore on the GPU (ParamStore::to), the
// graphs run on a CUDA executor (arena in device memory, each shape's step captured as a CUDA
// graph after its first run) and the gradients in slots() are device tensors. Moving the store
// to another device drops the compiled graphs.
//
// set_attention_backend chooses how the attention modules compute (models/transformer.h
// AttentionBackend), set_fuse_linear_activation whether the fusion pass runs and
// set_fuse_linear_cross_entropy whether the LM head fuses with its loss and
// set_bf16_saved_activations whether saved_activations runs; each drops the compiled graphs.
//
// The two model families differ in what a batch is and which graph the model builds; compiling,
// running and reading back are the same code (StepCache below).
#pragma once
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <memory>

#include "engine/executor.h"
#include "engine/optim/optimizer.h"
#include "models/transformer.h"
#include "steps/batching.h"
#include "steps/extension.h"
#include "steps/pass.h"

namespace pillars::train {

// The model builder's options for a step: dropout and label smoothing only when training, and the
// extension's requests (feature maps, target lengths, head gates).
GraphOptions step_model_options(float label_smoothing, bool train, AttentionBackend backend, const GraphExtension* extension);

// Told, while a training step's backward runs (CPU), as each parameter's gradient becomes final,
// so it can be summed over the ranks of a data-parallel job before the backward ends
// (train/gradient_buckets.h). On the GPU, where run() only queues the step, every gradient is
// reported once the whole step is queued (work queued then runs after the step, and the step keeps
// its CUDA graph), unless during_backward_on_gpu(): then each one as soon as the node that makes it
// is queued (the run is queued node by node, without a CUDA graph), so a sum started then on
// another stream runs beside the rest of the backward. For one run():
//   begin(names, tokens)  the step's parameters, in the order of slots(), and the batch's target
//                         tokens (StepInfo::target_tokens: the weight of its mean-loss gradient)
//   ready(slot, grad)     once per parameter, in the order the backward finishes them; grad is a
//                         view into the arena, valid until the next run; undefined when the
//                         parameter gets no gradient (then called after the backward)
//   after_node()          after every node of the run, ready() or not (lets communication progress)
class GradientObserver {
 public:
  virtual ~GradientObserver() = default;
  virtual void begin(const std::vector<std::string>& names, int64_t target_tokens) = 0;
  virtual void ready(size_t slot, const Tensor& grad) = 0;
  virtual void after_node() {}
  // Asked before each GPU run: report gradients node by node in this one?
  virtual bool during_backward_on_gpu() const { return false; }
};

// What both families share: the compiled steps of each batch shape (training and evaluation), on
// the parameters' device, with the extension's hooks around every run.
class StepCache {
 public:
  struct Compiled {
    StepGraph step;
    std::unique_ptr<Executor> executor;
    std::map<std::string, ValueId, std::less<>> inputs; // the graph's input leaves by name, found once
    // The input leaf `name`; has_input: whether the graph declares it (tgt_lengths only on request).
    ValueId input(std::string_view name) const;
    bool has_input(std::string_view name) const { return inputs.find(name) != inputs.end(); }
    // For a GradientObserver, built on first use: the parameters' names (slot order), and
    // (node, slot) for each gradient: the node whose run makes it final, in node order.
    std::vector<std::string> param_names;
    std::vector<std::pair<size_t, size_t>> gradient_ready;
  };
  StepCache(ParamStore& params, std::shared_ptr<GraphExtension> extension)
      : params_(params), extension_(std::move(extension)) {}
  // The compiled step of `key` (a batch shape), built by `build` (the model's forward graph as a
  // StepGraph) on first use.
  Compiled& get(const std::vector<int64_t>& key, bool train, const std::function<StepGraph()>& build);
  // Runs a bound step: the extension's bind, the executor, the extension's after_run; on a
  // training step, slots() then holds every parameter with its gradient. Returns the task loss.
  float run(Compiled& c, const StepInfo& info);
  std::vector<optim::ParamSlot>& slots() { return slots_; }
  GraphExtension* extension() const { return extension_.get(); }
  // Training runs tell `o` about each gradient as the backward finishes it (nullptr: nobody).
  void set_gradient_observer(GradientObserver* o) { observer_ = o; }
  void clear() { train_.clear(), eval_.clear(); }
  size_t size() const { return train_.size() + eval_.size(); }

  AttentionBackend attention_backend = AttentionBackend::pillars;
  PassSettings passes; // which optional passes run (the two fusions, saved_activations)

 private:
  Compiled& compile(StepGraph step);
  void watch_gradients(Compiled& c, int64_t target_tokens);
  void report_remaining_gradients(Compiled& c);
  ParamStore& params_;
  GradientObserver* observer_ = nullptr;
  size_t next_ready_ = 0; // the next entry of gradient_ready to report in this run
  std::shared_ptr<GraphExtension> extension_;
  std::shared_ptr<SharedArena> arena_; // on the parameters' device (see steps.cpp)
  std::map<std::vector<int64_t>, std::unique_ptr<Compiled>> train_, eval_;
  std::vector<optim::ParamSlot> slots_;
};

// What the steps of both families share, and all a training loop needs of them besides one step:
// the gradients, where training is, how attention computes and whether the fusion pass runs.
class ModelSteps {
 public:
  virtual ~ModelSteps() = default;
  // Every parameter with the gradient of the last training step.
  std::vector<optim::ParamSlot>& slots() { return cache_.slots(); }
  // Where training is (for extensions whose behaviour follows a schedule).
  void set_progress(int64_t update, double progress) { update_ = update, progress_ = progress; }
  void set_attention_backend(AttentionBackend b) { cache_.attention_backend = b, cache_.clear(); }
  // Rewrite each linear → relu/gelu into one linear_act node (engine/passes/fuse_linear.h).
  void set_fuse_linear_activation(bool on) { cache_.passes.fuse_linear = on, cache_.clear(); }
  // Fuse the LM head with its cross-entropy in training steps (engine/passes/fuse_linear_cross_entropy.h).
  void set_fuse_linear_cross_entropy(bool on) { cache_.passes.fuse_cross_entropy = on, cache_.clear(); }
  // Keep the activations the backward reads in bf16 (engine/passes/saved_activations.h), or fp32.
  void set_bf16_saved_activations(bool on) { cache_.passes.bf16_saved_activations = on, cache_.clear(); }
  // See GradientObserver; the observer must outlive the training steps it watches.
  void set_gradient_observer(GradientObserver* o) { cache_.set_gradient_observer(o); }
  // The names of the passes a training step runs, in order (the run log's start record lists them).
  std::vector<std::string> training_passes() const;

 protected:
  // Keeps references to cfg and params (they must outlive this object).
  ModelSteps(const TransformerConfig& cfg, ParamStore& params, float label_smoothing, std::shared_ptr<GraphExtension> extension)
      : cfg_(cfg), label_smoothing_(label_smoothing), cache_(params, std::move(extension)) {}
  // The model builder's options of a training or evaluation step.
  GraphOptions options(bool train) const {
    return step_model_options(label_smoothing_, train, cache_.attention_backend, cache_.extension());
  }
  // What the extension is told about a run of `target_tokens` tokens.
  StepInfo info(int64_t target_tokens, uint64_t seed, bool train) const {
    return {target_tokens, train ? seed : 0, train ? update_ : 0, progress_, train};
  }

  const TransformerConfig& cfg_;
  float label_smoothing_;
  StepCache cache_;
  int64_t update_ = 0;
  double progress_ = 0;
};

class Seq2SeqSteps : public ModelSteps {
 public:
  Seq2SeqSteps(const TransformerConfig& cfg, ParamStore& params, float label_smoothing,
               std::shared_ptr<GraphExtension> extension = nullptr)
      : ModelSteps(cfg, params, label_smoothing, std::move(extension)) {}
  // One forward + backward on the batch with dropout seed `seed`. Returns the label-smoothed loss
  // (mean over the batch's target tokens); the gradients of that mean (plus the extension's terms)
  // are in slots() until the next call of train() or eval().
  float train(const Seq2SeqBatch& batch, uint64_t seed);
  // The summed negative log-likelihood (nats) of the batch's targets, without dropout or smoothing.
  double eval(const Seq2SeqBatch& batch);

 private:
  float run(const Seq2SeqBatch& b, uint64_t seed, bool train);
};

// The decoder-only language model's steps: batches of B blocks of T tokens (steps/task.h).
class LmSteps : public ModelSteps {
 public:
  LmSteps(const TransformerConfig& cfg, ParamStore& params, float label_smoothing,
          std::shared_ptr<GraphExtension> extension = nullptr)
      : ModelSteps(cfg, params, label_smoothing, std::move(extension)) {}
  // tokens, target: (B·T) ids each (target = tokens shifted by one), pad where a block is short.
  float train(int64_t B, int64_t T, const std::vector<int32_t>& tokens, const std::vector<int32_t>& target, uint64_t seed);
  double eval(int64_t B, int64_t T, const std::vector<int32_t>& tokens, const std::vector<int32_t>& target);

 private:
  // Binds and runs one batch; `tokens_out` gets its target tokens that are not padding.
  float run(int64_t B, int64_t T, const std::vector<int32_t>& tokens, const std::vector<int32_t>& target, uint64_t seed,
            bool train, int64_t& tokens_out);
};

} // namespace pillars::train
