// See steps.h.
#include "train/steps.h"

#include "base/error.h"
#include "engine/passes/autodiff.h"
#include "models/fused.h"

namespace pillars::train {

namespace {

// The part of compiling that every model shares: the optional fusion, the extension's nodes, gradients (training only),
// then an executor in the shared arena with the parameters bound. C has `model` (with .graph,
// .loss and .attention), `objective`, `params`, `grads`, `executor`.
template <class C>
void compile_graph(C& c, bool train, const std::shared_ptr<SharedArena>& arena, ParamStore& store,
                   GraphExtension* extension, bool fuse_linear) {
  // First: the extension then reads the remapped attention sites, and autodiff uses linear_act's vjp.
  if (fuse_linear) fuse_linear_activation(c.model);
  c.objective = extension ? extension->extend(c.model.graph, c.model.attention, c.model.loss, train) : c.model.loss;
  if (c.objective != c.model.loss) c.model.graph.mark_output(c.objective);
  if (train) {
    c.params = c.model.graph.params();
    c.grads = autodiff(c.model.graph, c.objective, c.params);
  }
  c.executor = std::make_unique<Executor>(c.model.graph, arena->device, arena);
  if (arena->device == Device::cuda) c.executor->enable_graph_capture(true);
  c.executor->bind_params(store);
}

// Keeps the arena on the parameters' device: when the store has moved (or on first use), the
// compiled graphs of the other device are dropped and a fresh arena is made.
template <class Cache>
void follow_params(const ParamStore& store, std::shared_ptr<SharedArena>& arena, Cache& train, Cache& eval) {
  const Device d = store.device();
  if (arena && arena->device == d) return;
  train.clear();
  eval.clear();
  arena = std::make_shared<SharedArena>();
  arena->device = d;
}

float scalar_of(const Executor& ex, ValueId v) { return ex.fetch(v).data<float>()[0]; }

// After a training run: the optimiser's view of every parameter and its gradient. The gradients
// are views into the shared arena, so the slots are rebuilt every step (another shape's executor
// may have moved the arena since).
template <class C> void gather_slots(const C& c, ParamStore& store, std::vector<optim::ParamSlot>& slots) {
  slots.clear();
  for (size_t i = 0; i < c.params.size(); ++i) {
    const std::string& name = c.model.graph.producer(c.params[i]).attrs.name;
    slots.push_back({name, store.get(name), c.grads[i] == kNoValue ? Tensor() : c.executor->value(c.grads[i])});
  }
}

// Valid (non-pad) positions of each of the B rows of a right-padded (B·T) id list.
std::vector<int32_t> row_lengths(const std::vector<int32_t>& ids, int64_t B, int64_t T, int32_t pad) {
  std::vector<int32_t> n(static_cast<size_t>(B), 0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) n[static_cast<size_t>(b)] += ids[static_cast<size_t>(b * T + t)] != pad;
  return n;
}

} // namespace

Seq2SeqSteps::Seq2SeqSteps(const TransformerConfig& cfg, ParamStore& params, float label_smoothing,
                           std::shared_ptr<GraphExtension> extension)
    : cfg_(cfg), params_(params), label_smoothing_(label_smoothing), extension_(std::move(extension)) {}

Seq2SeqSteps::Compiled& Seq2SeqSteps::compiled(std::map<Shape3, std::unique_ptr<Compiled>>& cache,
                                               const Seq2SeqBatch& b, bool train) {
  follow_params(params_, arena_, train_, eval_);
  auto& slot = cache[{b.B, b.Ts, b.Tt}];
  if (!slot) {
    auto c = std::make_unique<Compiled>();
    // The dropout seed is a graph attribute (the base of its Philox stream); the executor adds a
    // per-run seed, so one graph serves every step.
    Seq2SeqOptions o;
    o.label_smoothing = train ? label_smoothing_ : 0.0f;
    o.dropout_seed = 0;
    o.train = train;
    o.attention_backend = attention_backend_;
    if (extension_) extension_->configure(o, train);
    c->model = build_seq2seq_training_graph(cfg_, b.B, b.Ts, b.Tt, o);
    compile_graph(*c, train, arena_, params_, extension_.get(), fuse_linear_);
    slot = std::move(c);
  }
  return *slot;
}

void Seq2SeqSteps::bind(Compiled& c, const Seq2SeqBatch& b, uint64_t seed, bool train) {
  Executor& ex = *c.executor;
  ex.bind(c.model.src_tokens, Tensor::from_i32({b.B, b.Ts}, b.src_tokens));
  ex.bind(c.model.src_lengths, Tensor::from_i32({b.B}, b.src_lengths));
  ex.bind(c.model.prev_output_tokens, Tensor::from_i32({b.B, b.Tt}, b.prev_output_tokens));
  ex.bind(c.model.target, Tensor::from_i32({b.B * b.Tt}, b.target));
  if (c.model.tgt_lengths != kNoValue)
    ex.bind(c.model.tgt_lengths,
            Tensor::from_i32({b.B}, row_lengths(b.target, b.B, b.Tt, static_cast<int32_t>(cfg_.pad_id))));
  if (extension_)
    extension_->bind(ex, c.model.graph, {b.target_tokens, seed, train ? update_ : 0, progress_, train});
}

float Seq2SeqSteps::train(const Seq2SeqBatch& b, uint64_t seed) {
  Compiled& c = compiled(train_, b, true);
  bind(c, b, seed, true);
  c.executor->set_seed(seed);
  c.executor->run();
  if (extension_) extension_->after_run(*c.executor, c.model.graph, {b.target_tokens, seed, update_, progress_, true});
  gather_slots(c, params_, slots_);
  return scalar_of(*c.executor, c.model.loss);
}

double Seq2SeqSteps::eval(const Seq2SeqBatch& b) {
  Compiled& c = compiled(eval_, b, false);
  bind(c, b, 0, false);
  c.executor->run();
  if (extension_) extension_->after_run(*c.executor, c.model.graph, {b.target_tokens, 0, 0, progress_, false});
  return static_cast<double>(scalar_of(*c.executor, c.model.loss)) * static_cast<double>(b.target_tokens);
}

LmSteps::LmSteps(const TransformerConfig& cfg, ParamStore& params, float label_smoothing,
                 std::shared_ptr<GraphExtension> extension)
    : cfg_(cfg), params_(params), label_smoothing_(label_smoothing), extension_(std::move(extension)) {}

LmSteps::Compiled& LmSteps::compiled(std::map<std::pair<int64_t, int64_t>, std::unique_ptr<Compiled>>& cache, int64_t B,
                                     int64_t T, bool train) {
  follow_params(params_, arena_, train_, eval_);
  auto& slot = cache[{B, T}];
  if (!slot) {
    auto c = std::make_unique<Compiled>();
    Seq2SeqOptions o;
    o.label_smoothing = train ? label_smoothing_ : 0.0f;
    o.train = train;
    o.attention_backend = attention_backend_;
    if (extension_) extension_->configure(o, train);
    c->model = build_lm_training_graph(cfg_, B, T, o);
    compile_graph(*c, train, arena_, params_, extension_.get(), fuse_linear_);
    slot = std::move(c);
  }
  return *slot;
}

int64_t LmSteps::bind(Compiled& c, int64_t B, int64_t T, const std::vector<int32_t>& tokens,
                      const std::vector<int32_t>& target, uint64_t seed, bool train) {
  Executor& ex = *c.executor;
  ex.bind(c.model.tokens, Tensor::from_i32({B, T}, tokens));
  ex.bind(c.model.target, Tensor::from_i32({B * T}, target));
  const std::vector<int32_t> lengths = row_lengths(target, B, T, static_cast<int32_t>(cfg_.pad_id));
  if (c.model.tgt_lengths != kNoValue) ex.bind(c.model.tgt_lengths, Tensor::from_i32({B}, lengths));
  int64_t n = 0;
  for (int32_t len : lengths) n += len;
  if (extension_) extension_->bind(ex, c.model.graph, {n, seed, train ? update_ : 0, progress_, train});
  return n;
}

float LmSteps::train(int64_t B, int64_t T, const std::vector<int32_t>& tokens, const std::vector<int32_t>& target,
                     uint64_t seed) {
  Compiled& c = compiled(train_, B, T, true);
  const int64_t n = bind(c, B, T, tokens, target, seed, true);
  c.executor->set_seed(seed);
  c.executor->run();
  if (extension_) extension_->after_run(*c.executor, c.model.graph, {n, seed, update_, progress_, true});
  gather_slots(c, params_, slots_);
  return scalar_of(*c.executor, c.model.loss);
}

double LmSteps::eval(int64_t B, int64_t T, const std::vector<int32_t>& tokens, const std::vector<int32_t>& target) {
  Compiled& c = compiled(eval_, B, T, false);
  const int64_t n = bind(c, B, T, tokens, target, 0, false); // the target tokens that are not padding
  c.executor->run();
  if (extension_) extension_->after_run(*c.executor, c.model.graph, {n, 0, 0, progress_, false});
  return static_cast<double>(scalar_of(*c.executor, c.model.loss)) * static_cast<double>(n);
}

} // namespace pillars::train
