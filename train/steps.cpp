// See steps.h.
#include "train/steps.h"

#include "engine/error.h"
#include "engine/passes/autodiff.h"

namespace pillars::train {

namespace {

// The part of compiling that every model shares: gradients (training only), then an executor in
// the shared arena with the parameters bound. C has `model` (with .graph and .loss), `params`,
// `grads`, `executor`.
template <class C> void compile_graph(C& c, bool train, const std::shared_ptr<SharedArena>& arena, ParamStore& store) {
  if (train) {
    c.params = c.model.graph.params();
    c.grads = autodiff(c.model.graph, c.model.loss, c.params);
  }
  c.executor = std::make_unique<Executor>(c.model.graph, arena);
  c.executor->bind_params(store);
}

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

} // namespace

Seq2SeqSteps::Seq2SeqSteps(const TransformerConfig& cfg, ParamStore& params, float label_smoothing)
    : cfg_(cfg), params_(params), label_smoothing_(label_smoothing) {}

Seq2SeqSteps::Compiled& Seq2SeqSteps::compiled(std::map<Shape3, std::unique_ptr<Compiled>>& cache,
                                               const Seq2SeqBatch& b, bool train) {
  auto& slot = cache[{b.B, b.Ts, b.Tt}];
  if (!slot) {
    auto c = std::make_unique<Compiled>();
    // The dropout seed is a graph attribute (the base of its Philox stream); the executor adds a
    // per-run seed, so one graph serves every step.
    c->model = build_seq2seq_training_graph(cfg_, b.B, b.Ts, b.Tt, train ? label_smoothing_ : 0.0f, /*dropout_seed=*/0, train);
    compile_graph(*c, train, arena_, params_);
    slot = std::move(c);
  }
  return *slot;
}

void Seq2SeqSteps::bind(Compiled& c, const Seq2SeqBatch& b) {
  Executor& ex = *c.executor;
  ex.bind(c.model.src_tokens, Tensor::from_i32({b.B, b.Ts}, b.src_tokens));
  ex.bind(c.model.src_lengths, Tensor::from_i32({b.B}, b.src_lengths));
  ex.bind(c.model.prev_output_tokens, Tensor::from_i32({b.B, b.Tt}, b.prev_output_tokens));
  ex.bind(c.model.target, Tensor::from_i32({b.B * b.Tt}, b.target));
}

float Seq2SeqSteps::train(const Seq2SeqBatch& b, uint64_t seed) {
  Compiled& c = compiled(train_, b, true);
  bind(c, b);
  c.executor->set_seed(seed);
  c.executor->run();
  gather_slots(c, params_, slots_);
  return c.executor->value(c.model.loss).data<float>()[0];
}

double Seq2SeqSteps::eval(const Seq2SeqBatch& b) {
  Compiled& c = compiled(eval_, b, false);
  bind(c, b);
  c.executor->run();
  return static_cast<double>(c.executor->value(c.model.loss).data<float>()[0]) * static_cast<double>(b.target_tokens);
}

LmSteps::LmSteps(const TransformerConfig& cfg, ParamStore& params, float label_smoothing)
    : cfg_(cfg), params_(params), label_smoothing_(label_smoothing) {}

LmSteps::Compiled& LmSteps::compiled(std::map<std::pair<int64_t, int64_t>, std::unique_ptr<Compiled>>& cache, int64_t B,
                                     int64_t T, bool train) {
  auto& slot = cache[{B, T}];
  if (!slot) {
    auto c = std::make_unique<Compiled>();
    Seq2SeqOptions o;
    o.label_smoothing = train ? label_smoothing_ : 0.0f;
    o.train = train;
    c->model = build_lm_training_graph(cfg_, B, T, o);
    compile_graph(*c, train, arena_, params_);
    slot = std::move(c);
  }
  return *slot;
}

float LmSteps::train(int64_t B, int64_t T, const std::vector<int32_t>& tokens, const std::vector<int32_t>& target,
                     uint64_t seed) {
  Compiled& c = compiled(train_, B, T, true);
  c.executor->bind(c.model.tokens, Tensor::from_i32({B, T}, tokens));
  c.executor->bind(c.model.target, Tensor::from_i32({B * T}, target));
  c.executor->set_seed(seed);
  c.executor->run();
  gather_slots(c, params_, slots_);
  return c.executor->value(c.model.loss).data<float>()[0];
}

double LmSteps::eval(int64_t B, int64_t T, const std::vector<int32_t>& tokens, const std::vector<int32_t>& target) {
  Compiled& c = compiled(eval_, B, T, false);
  c.executor->bind(c.model.tokens, Tensor::from_i32({B, T}, tokens));
  c.executor->bind(c.model.target, Tensor::from_i32({B * T}, target));
  c.executor->run();
  int64_t n = 0;
  for (int32_t t : target) n += t != static_cast<int32_t>(cfg_.pad_id);
  return static_cast<double>(c.executor->value(c.model.loss).data<float>()[0]) * static_cast<double>(n);
}

} // namespace pillars::train
