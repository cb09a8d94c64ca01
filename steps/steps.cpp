// See steps.h.
#include "steps/steps.h"

#include <algorithm>

#include "base/error.h"
#include "engine/op.h"

namespace pillars::steps {

namespace {

// Valid (non-pad) positions of each of the B rows of a right-padded (B·T) id list.
std::vector<int32_t> row_lengths(const std::vector<int32_t>& ids, int64_t B, int64_t T, int32_t pad) {
  std::vector<int32_t> n(static_cast<size_t>(B), 0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) n[static_cast<size_t>(b)] += ids[static_cast<size_t>(b * T + t)] != pad;
  return n;
}

} // namespace

// ---- StepCache ------------------------------------------------------------------------------------

StepCache::Compiled& StepCache::get(const std::vector<int64_t>& key, bool train,
                                    const std::function<StepGraph(const GraphOptions&)>& build) {
  // Keep the arena on the parameters' device: when the store has moved (or on first use), the
  // compiled steps of the other device are dropped and a fresh arena is made.
  if (!arena_ || arena_->device != params_.device()) {
    clear();
    arena_ = std::make_shared<SharedArena>();
    arena_->device = params_.device();
  }
  auto& slot = (train ? train_ : eval_)[key];
  if (!slot) {
    const StepRecipe& recipe = train ? recipes_.train : recipes_.eval;
    auto c = std::make_unique<Compiled>();
    StepGraph& s = c->step;
    s = build(recipe.options);
    s.device = arena_->device;
    run_passes(recipe.passes, s);
    c->executor = std::make_unique<Executor>(s.graph, s.device, arena_, s.memory);
    if (s.device == Device::cuda) c->executor->enable_graph_capture(true);
    c->executor->bind_params(params_);
    for (const Node& n : s.graph.nodes())
      if (n.op == &kInputOp) c->inputs.emplace(n.name, n.outputs[0]);
    slot = std::move(c);
  }
  return *slot;
}

ValueId StepCache::Compiled::input(std::string_view name) const {
  const auto it = inputs.find(name);
  PILLARS_CHECK(it != inputs.end(), "step: the graph has no input named '", name, "'");
  return it->second;
}

float StepCache::run(Compiled& c, const StepInfo& info) {
  Executor& ex = *c.executor;
  for (const auto& [name, in] : c.step.inputs) ex.bind(in.value, in.fill(info)); // e.g. 1 / target tokens
  if (info.train) ex.set_seed(info.seed);
  const bool observed = observer_ != nullptr && info.train;
  if (observed) watch_gradients(c, info.target_tokens);
  ex.run();
  if (observed) report_remaining_gradients(c);
  if (info.train)
    for (const LoggedTerm& t : c.step.terms) {
      auto& [sum, runs] = term_sums_[t.key];
      sum += static_cast<double>(ex.fetch(t.value).data<float>()[0]) / t.divide_by;
      ++runs;
    }
  if (watcher_) watcher_(StepRun{c.step, ex, info});
  if (info.train) {
    // The optimizer's view of every parameter and its gradient. The gradients are views into the
    // shared arena, so the slots are rebuilt every step (another shape's executor may have moved
    // the arena since).
    slots_.clear();
    for (size_t i = 0; i < c.step.params.size(); ++i) {
      const std::string& name = c.step.graph.producer(c.step.params[i]).name;
      slots_.push_back({name, params_.get(name), c.step.grads[i] == kNoValue ? Tensor() : ex.value(c.step.grads[i])});
    }
  }
  return ex.fetch(c.step.loss).data<float>()[0];
}

std::map<std::string, double> StepCache::take_terms() {
  std::map<std::string, double> mean;
  for (const auto& [key, sum_runs] : term_sums_) mean[key] = sum_runs.first / static_cast<double>(sum_runs.second);
  term_sums_.clear();
  return mean;
}

Tensor StepRun::named(std::string_view name) const {
  const ValueId v = step.named_value(name);
  PILLARS_CHECK(v != kNoValue, "step: no value named '", name, "' (which pass records it?)");
  return executor.fetch(v);
}

// The observer hears of each gradient right after the node that makes it final has run: that node
// is the gradient value's producer (values are written once; a view or in-place node that writes
// it comes before its final producer or is that producer).
void StepCache::watch_gradients(Compiled& c, int64_t target_tokens) {
  const Graph& g = c.step.graph;
  if (c.param_names.size() != c.step.params.size()) {
    c.param_names.clear(), c.gradient_ready.clear();
    for (size_t i = 0; i < c.step.params.size(); ++i) {
      c.param_names.push_back(g.producer(c.step.params[i]).name);
      if (c.step.grads[i] != kNoValue)
        c.gradient_ready.push_back({static_cast<size_t>(g.value(c.step.grads[i]).producer), i});
    }
    std::sort(c.gradient_ready.begin(), c.gradient_ready.end());
  }
  observer_->begin(c.param_names, target_tokens);
  Executor& ex = *c.executor;
  next_ready_ = 0;
  // A GPU run() only queues the step: unless the observer asks for them node by node (giving up the
  // step's CUDA graph for this run), every gradient is reported after it.
  if (ex.device() != Device::cpu && !observer_->during_backward_on_gpu()) return;
  ex.set_after_node([this, &c, &ex](size_t node) {
    for (; next_ready_ < c.gradient_ready.size() && c.gradient_ready[next_ready_].first <= node; ++next_ready_) {
      const size_t slot = c.gradient_ready[next_ready_].second;
      observer_->ready(slot, ex.value(c.step.grads[slot]));
    }
    observer_->after_node();
  });
}

// After the run: the gradients not reported yet (made by a node that never ran: a constant leaf),
// then those of parameters that get none.
void StepCache::report_remaining_gradients(Compiled& c) {
  Executor& ex = *c.executor;
  ex.set_after_node(nullptr);
  for (; next_ready_ < c.gradient_ready.size(); ++next_ready_) {
    const size_t slot = c.gradient_ready[next_ready_].second;
    observer_->ready(slot, ex.value(c.step.grads[slot]));
  }
  for (size_t i = 0; i < c.step.params.size(); ++i)
    if (c.step.grads[i] == kNoValue) observer_->ready(i, Tensor());
}

// ---- the encoder-decoder ------------------------------------------------------------------------

float Seq2SeqSteps::run(const Seq2SeqBatch& b, uint64_t seed, bool train) {
  StepCache::Compiled& c = cache_.get({b.B, b.Ts, b.Tt}, train, [&](const GraphOptions& o) {
    return StepGraph::of(build_seq2seq_training_graph(cfg_, b.B, b.Ts, b.Tt, o), train, Device::cpu);
  });
  Executor& ex = *c.executor;
  ex.bind(c.input("src_tokens"), Tensor::from_i32({b.B, b.Ts}, b.src_tokens));
  ex.bind(c.input("src_lengths"), Tensor::from_i32({b.B}, b.src_lengths));
  ex.bind(c.input("prev_output_tokens"), Tensor::from_i32({b.B, b.Tt}, b.prev_output_tokens));
  ex.bind(c.input("target"), Tensor::from_i32({b.B * b.Tt}, b.target));
  if (c.has_input("tgt_lengths"))
    ex.bind(c.input("tgt_lengths"),
            Tensor::from_i32({b.B}, row_lengths(b.target, b.B, b.Tt, static_cast<int32_t>(cfg_.pad_id))));
  return cache_.run(c, info(b.target_tokens, seed, train));
}

float Seq2SeqSteps::train(const Seq2SeqBatch& b, uint64_t seed) { return run(b, seed, true); }

double Seq2SeqSteps::eval(const Seq2SeqBatch& b) {
  return static_cast<double>(run(b, 0, false)) * static_cast<double>(b.target_tokens);
}

// ---- the decoder-only language model ------------------------------------------------------------

float LmSteps::run(int64_t B, int64_t T, const std::vector<int32_t>& tokens, const std::vector<int32_t>& target,
                   uint64_t seed, bool train, int64_t& tokens_out) {
  StepCache::Compiled& c = cache_.get({B, T}, train, [&](const GraphOptions& o) {
    return StepGraph::of(build_lm_training_graph(cfg_, B, T, o), train, Device::cpu);
  });
  Executor& ex = *c.executor;
  ex.bind(c.input("tokens"), Tensor::from_i32({B, T}, tokens));
  ex.bind(c.input("target"), Tensor::from_i32({B * T}, target));
  const std::vector<int32_t> lengths = row_lengths(target, B, T, static_cast<int32_t>(cfg_.pad_id));
  if (c.has_input("tgt_lengths")) ex.bind(c.input("tgt_lengths"), Tensor::from_i32({B}, lengths));
  tokens_out = 0;
  for (int32_t len : lengths) tokens_out += len;
  return cache_.run(c, info(tokens_out, seed, train));
}

float LmSteps::train(int64_t B, int64_t T, const std::vector<int32_t>& tokens, const std::vector<int32_t>& target,
                     uint64_t seed) {
  int64_t n = 0;
  return run(B, T, tokens, target, seed, true, n);
}

double LmSteps::eval(int64_t B, int64_t T, const std::vector<int32_t>& tokens, const std::vector<int32_t>& target) {
  int64_t n = 0; // the target tokens that are not padding
  const float mean = run(B, T, tokens, target, 0, false, n);
  return static_cast<double>(mean) * static_cast<double>(n);
}

std::vector<std::string> ModelSteps::training_passes() const {
  std::vector<std::string> names;
  for (const Pass& p : cache_.recipes().train.passes) names.push_back(p.name);
  return names;
}

} // namespace pillars::steps
