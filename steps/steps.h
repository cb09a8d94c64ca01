// The compiled training and evaluation steps of the encoder-decoder, one per batch shape.
//
//   Seq2SeqSteps steps(cfg, params, step_recipes(context));   // train/pass_list.h
//   float loss = steps.train(batch, seed);   // forward + backward: gradients in steps.slots()
//   optimizer.step(steps.slots(), lr);
//   double nll = steps.eval(batch);           // forward only, no dropout, no label smoothing
//
// A step is compiled the first time a shape (B, Ts, Tt) is seen and reused after: the model's
// forward graph (built with the recipe's GraphOptions), then the recipe's passes (the fusions, the
// method's passes, autodiff, the memory plan), then an executor; all of them share one arena
// (engine/executor.h), so memory is that of the largest shape, not the sum. Batching
// (steps/batching.h) keeps the number of shapes small.
//
// Around every run the cache does what the passes recorded in the StepGraph (steps/pass.h): it
// binds each run-time input to its fill(StepInfo), and after the run adds the logged terms to the
// sums take_terms() averages, and shows the named values to a watcher (set_run_watcher).
//
// The steps run where the parameters are: with the ParamStore on the GPU (ParamStore::to), the
// graphs run on a CUDA executor (arena in device memory, each shape's step captured as a CUDA
// graph after its first run) and the gradients in slots() are device tensors. Moving the store
// to another device drops the compiled graphs.
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
#include "steps/pass.h"

namespace pillars::steps {

// How one kind of step is made: the model builder's options and the passes that rewrite its graph.
struct StepRecipe {
  GraphOptions options;
  PassList passes;
};
// A model's two kinds of step (train/pass_list.h makes them from the experiment's settings).
struct StepRecipes {
  StepRecipe train, eval;
};

// One finished run, as a watcher sees it: the step and its executor, until the next run.
struct StepRun {
  const StepGraph& step;
  const Executor& executor;
  const StepInfo& info;
  // The value a pass named (StepGraph::name); throws when the step has none of that name.
  Tensor named(std::string_view name) const;
};

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
// the parameters' device, with the recorded inputs, terms and named values handled around every run.
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
  StepCache(ParamStore& params, StepRecipes recipes) : params_(params), recipes_(std::move(recipes)) {}
  // The compiled step of `key` (a batch shape), built by `build` (the model's forward graph, from
  // the recipe's options, as a StepGraph) on first use.
  Compiled& get(const std::vector<int64_t>& key, bool train,
                const std::function<StepGraph(const GraphOptions&)>& build);
  // Runs a bound step: binds the run-time inputs, runs the executor, adds up the logged terms and
  // calls the watcher; on a training step, slots() then holds every parameter with its gradient.
  // Returns the task loss.
  float run(Compiled& c, const StepInfo& info);
  std::vector<optim::ParamSlot>& slots() { return slots_; }
  const StepRecipes& recipes() const { return recipes_; }
  // Training runs tell `o` about each gradient as the backward finishes it (nullptr: nobody).
  void set_gradient_observer(GradientObserver* o) { observer_ = o; }
  void set_run_watcher(std::function<void(const StepRun&)> w) { watcher_ = std::move(w); }
  // Each logged term averaged over the training runs since the last call (empty: none ran).
  std::map<std::string, double> take_terms();
  void clear() { train_.clear(), eval_.clear(); }
  size_t size() const { return train_.size() + eval_.size(); }

 private:
  void watch_gradients(Compiled& c, int64_t target_tokens);
  void report_remaining_gradients(Compiled& c);
  ParamStore& params_;
  StepRecipes recipes_;
  GradientObserver* observer_ = nullptr;
  std::function<void(const StepRun&)> watcher_;
  size_t next_ready_ = 0; // the next entry of gradient_ready to report in this run
  std::map<std::string, std::pair<double, int64_t>> term_sums_; // key → (Σ value / divide_by, runs)
  std::shared_ptr<SharedArena> arena_;                          // on the parameters' device (see steps.cpp)
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
  // Where training is (the StepInfo the run-time inputs are filled from).
  void set_progress(int64_t update, double progress) { update_ = update, progress_ = progress; }
  // See GradientObserver; the observer must outlive the training steps it watches.
  void set_gradient_observer(GradientObserver* o) { cache_.set_gradient_observer(o); }
  // Called after every run with its named values (the V2S vote reads its Gram matrices so).
  void set_run_watcher(std::function<void(const StepRun&)> w) { cache_.set_run_watcher(std::move(w)); }
  // The logged terms of the passes, averaged over the training runs since the last call.
  std::map<std::string, double> take_terms() { return cache_.take_terms(); }
  // The names of the passes a training step runs, in order (the run log's start record lists them).
  std::vector<std::string> training_passes() const;

 protected:
  // Keeps references to cfg and params (they must outlive this object).
  ModelSteps(const TransformerConfig& cfg, ParamStore& params, StepRecipes recipes)
      : cfg_(cfg), cache_(params, std::move(recipes)) {}
  // What the run-time inputs are filled from.
  StepInfo info(int64_t target_tokens, uint64_t seed, bool train) const {
    return {target_tokens, train ? seed : 0, train ? update_ : 0, progress_, train};
  }

  const TransformerConfig& cfg_;
  StepCache cache_;
  int64_t update_ = 0;
  double progress_ = 0;
};

class Seq2SeqSteps : public ModelSteps {
 public:
  Seq2SeqSteps(const TransformerConfig& cfg, ParamStore& params, StepRecipes recipes)
      : ModelSteps(cfg, params, std::move(recipes)) {}
  // One forward + backward on the batch with dropout seed `seed`. Returns the label-smoothed loss
  // (mean over the batch's target tokens); the gradients of that mean (plus the method's terms)
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
  LmSteps(const TransformerConfig& cfg, ParamStore& params, StepRecipes recipes)
      : ModelSteps(cfg, params, std::move(recipes)) {}
  // tokens, target: (B·T) ids each (target = tokens shifted by one), pad where a block is short.
  float train(int64_t B, int64_t T, const std::vector<int32_t>& tokens, const std::vector<int32_t>& target,
              uint64_t seed);
  double eval(int64_t B, int64_t T, const std::vector<int32_t>& tokens, const std::vector<int32_t>& target);

 private:
  // Binds and runs one batch; `tokens_out` gets its target tokens that are not padding.
  float run(int64_t B, int64_t T, const std::vector<int32_t>& tokens, const std::vector<int32_t>& target, uint64_t seed,
            bool train, int64_t& tokens_out);
};

} // namespace pillars::steps
