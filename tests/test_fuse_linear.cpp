// The linear_act op (engine/ops/linear_act.h) and the fuse_linear_activation pass
// (engine/passes/fuse_linear.h; on a step's graph, steps/pass.h):
//   - the op's forward against the unfused ops::linear + relu/gelu it replaces, and against a
//     double-precision loop; its gradients against central finite differences (tests/grad_check.h)
//     and against the unfused graph's;
//   - the pass on a small graph: which chains it fuses (and which it must leave alone), node
//     counts, and unchanged outputs and gradients after autodiff;
//   - the tiny transformer (encoder-decoder and decoder-only, ReLU and GELU): loss and every
//     parameter gradient with and without the pass, and the attention sites still pointing at
//     attention nodes.
//
// Bound for "unchanged": on the CPU the fused op runs the same GEMM call and the same per-element
// arithmetic (bias add, then the activation) as the unfused nodes, and its vjp emits the same
// backward nodes, so the values agree to rounding of a different summation order at most:
// we require |fused − unfused| ≤ 1e-6 · max|unfused| per tensor (observed: 0, bit for bit).
#include <doctest/doctest.h>

#include "skip.h"

#include <cmath>
#include <map>

#include "base/error.h"
#include "engine/executor.h"
#include "engine/op.h"
#include "engine/ops.h"
#include "engine/passes/autodiff.h"
#include "engine/passes/flops.h"
#include "engine/passes/fuse_linear.h"
#include "steps/pass.h"
#include "tests/grad_check.h"
#include "tests/test_env.h"
#include "tests/test_small_run.h"
#include "tests/tiny_step.h"
#include "train/session.h"

using namespace pillars;
using pillars::testing::check_gradients;
using pillars::testing::count_op;
using pillars::testing::evaluate;
using pillars::testing::GradCheckOptions;
using pillars::testing::gradients_of;
using pillars::testing::max_relative_difference;
using pillars::testing::random_tensor;

namespace {

constexpr double kSameBound = 1e-6; // relative to the tensor's largest magnitude (see the top comment)

ValueId fused_builder(Graph& g, const std::vector<ValueId>& in, ops::Activation act) {
  return ops::linear_act(g, in[0], in[1], in[2], act).y;
}
ValueId unfused_builder(Graph& g, const std::vector<ValueId>& in, ops::Activation act) {
  const ValueId z = ops::linear(g, in[0], in[1], in[2]);
  return act == ops::Activation::gelu ? ops::gelu(g, z) : ops::relu(g, z);
}

} // namespace

TEST_CASE("linear_act: forward equals ops::linear then relu/gelu, and a double-precision loop") {
  for (const ops::Activation act : {ops::Activation::relu, ops::Activation::gelu})
    for (const Shape& xs : {Shape{5, 7}, Shape{2, 3, 7}}) {
      const bool gelu = act == ops::Activation::gelu;
      CAPTURE(gelu);
      CAPTURE(shape_str(xs));
      const int64_t in = 7, out = 6, rows = numel(xs) / in;
      const Tensor x = random_tensor(xs, 11), w = random_tensor({out, in}, 12), b = random_tensor({out}, 13);
      const auto fused =
          evaluate([act](Graph& g, const std::vector<ValueId>& v) { return fused_builder(g, v, act); }, {x, w, b});
      const auto unfused =
          evaluate([act](Graph& g, const std::vector<ValueId>& v) { return unfused_builder(g, v, act); }, {x, w, b});
      CHECK(fused == unfused); // same GEMM call, same per-element arithmetic: bit for bit
      // pre (gelu only) is the linear layer's output.
      if (gelu) {
        const auto pre = evaluate(
            [](Graph& g, const std::vector<ValueId>& v) {
              return ops::linear_act(g, v[0], v[1], v[2], ops::Activation::gelu).pre;
            },
            {x, w, b});
        const auto lin = evaluate(
            [](Graph& g, const std::vector<ValueId>& v) { return ops::linear(g, v[0], v[1], v[2]); }, {x, w, b});
        CHECK(pre == lin);
      }
      const float *xp = x.data<float>(), *wp = w.data<float>(), *bp = b.data<float>();
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < out; ++j) {
          double z = bp[j];
          for (int64_t k = 0; k < in; ++k) z += static_cast<double>(xp[r * in + k]) * wp[j * in + k];
          const double want = gelu ? 0.5 * z * (1 + std::erf(z / std::sqrt(2.0))) : std::max(z, 0.0);
          CHECK(fused[static_cast<size_t>(r * out + j)] == doctest::Approx(want).epsilon(1e-5).scale(1.0));
        }
    }
}

TEST_CASE("linear_act: rejects shapes that are not x (..., in), W (out, in), b (out)") {
  Graph g;
  const ValueId x = g.input("x", {3, 4}), w = g.input("w", {5, 4}), b = g.input("b", {5}), bad_b = g.input("bb", {4});
  CHECK_THROWS_WITH_AS(ops::linear_act(g, x, w, bad_b, ops::Activation::relu), doctest::Contains("linear_act"), Error);
  CHECK_THROWS_WITH_AS(ops::linear_act(g, w, x, b, ops::Activation::relu), doctest::Contains("linear_act"), Error);
  CHECK(g.shape(ops::linear_act(g, x, w, b, ops::Activation::gelu).pre) == Shape{3, 5});
}

TEST_CASE("linear_act: gradients match central finite differences and the unfused graph's") {
  // ReLU has a kink at z = 0: a finite difference across it is wrong. Each perturbation moves a
  // z by at most h·max(1,|x|)·|w| ≤ 0.01 here (inputs in [−1, 1]), so pick the first seed whose
  // z are all at least 0.05 away from 0 (deterministic: the grad checker's own input draws).
  const Shape xs{2, 3, 4}, ws{5, 4}, bs{5};
  uint32_t seed = 1;
  for (;; ++seed) {
    REQUIRE(seed < 1000);
    const Tensor x = random_tensor(xs, seed), w = random_tensor(ws, seed + 7919u),
                 b = random_tensor(bs, seed + 2 * 7919u);
    const auto z =
        evaluate([](Graph& g, const std::vector<ValueId>& v) { return ops::linear(g, v[0], v[1], v[2]); }, {x, w, b});
    bool clear = true;
    for (float v : z) clear = clear && std::fabs(v) > 0.05f;
    if (clear) break;
  }
  for (const ops::Activation act : {ops::Activation::relu, ops::Activation::gelu}) {
    CAPTURE(act == ops::Activation::gelu);
    GradCheckOptions o;
    o.seed = seed;
    check_gradients([act](Graph& g, const std::vector<ValueId>& v) { return fused_builder(g, v, act); }, {xs, ws, bs},
                    o);
    // 2-D x: the path without the row flattening.
    check_gradients([act](Graph& g, const std::vector<ValueId>& v) { return fused_builder(g, v, act); },
                    {{6, 4}, ws, bs}, GradCheckOptions{.seed = 3, .lo = 0.1f, .hi = 1.0f}); // all z > 0: no kink
    // Against the unfused graph's gradients (same backward ops): bit for bit in practice.
    const Tensor x = random_tensor(xs, 21), w = random_tensor(ws, 22), b = random_tensor(bs, 23),
                 R = random_tensor({2, 3, 5}, 24);
    const auto fused = gradients_of([act](Graph& g, const std::vector<ValueId>& v) { return fused_builder(g, v, act); },
                                    {x, w, b}, R, {0, 1, 2});
    const auto unfused = gradients_of(
        [act](Graph& g, const std::vector<ValueId>& v) { return unfused_builder(g, v, act); }, {x, w, b}, R, {0, 1, 2});
    for (size_t k = 0; k < 3; ++k) {
      CAPTURE(k);
      CHECK(max_relative_difference(fused[k], unfused[k]) <= kSameBound);
    }
  }
  // A reader of pre gets its gradient added to the activation's.
  check_gradients(
      [](Graph& g, const std::vector<ValueId>& v) {
        const ops::LinearAct la = ops::linear_act(g, v[0], v[1], v[2], ops::Activation::gelu);
        return ops::add(g, la.y, ops::scale(g, la.pre, 0.5f));
      },
      {xs, ws, bs});
}

namespace {

// x (2, 3, 4) → relu(linear) (5) → gelu(linear) (6) → linear (6) read twice (relu and a residual add)
// → linear (6) marked as a graph output, then relu → Σ ∘ R. Two chains are fusable, two are not.
struct SmallNet {
  Graph g;
  ValueId x, loss, kept_output;
  std::map<std::string, Tensor> params;
  SmallNet() {
    x = g.input("x", {2, 3, 4});
    uint32_t seed = 30;
    auto linear = [&](ValueId in, const std::string& name, int64_t out) {
      const int64_t d = g.shape(in).back();
      params[name + ".weight"] = random_tensor({out, d}, ++seed);
      params[name + ".bias"] = random_tensor({out}, ++seed);
      return ops::linear(g, in, g.param(name + ".weight", {out, d}), g.param(name + ".bias", {out}));
    };
    const ValueId h1 = ops::relu(g, linear(x, "fc1", 5));  // fused
    const ValueId h2 = ops::gelu(g, linear(h1, "fc2", 6)); // fused
    const ValueId l3 = linear(h2, "fc3", 6);               // two readers: left alone
    const ValueId h3 = ops::add(g, ops::relu(g, l3), l3);
    kept_output = linear(h3, "fc4", 6); // a graph output: left alone
    g.mark_output(kept_output);
    const ValueId h4 = ops::relu(g, kept_output);
    loss = ops::sum_all(g, ops::mul(g, h4, g.constant(random_tensor({2, 3, 6}, 99))));
    g.mark_output(loss);
  }
};

struct Run {
  float loss;
  std::vector<std::vector<float>> grads; // x, then the parameters in creation order
  std::vector<float> kept;
};

Run run_small(Graph& g, ValueId x, ValueId loss, ValueId kept, const std::map<std::string, Tensor>& params) {
  std::vector<ValueId> wrt{x};
  for (ValueId p : g.params()) wrt.push_back(p);
  const std::vector<ValueId> grads = autodiff(g, loss, wrt);
  Executor ex(g);
  ex.bind(x, random_tensor({2, 3, 4}, 5));
  for (ValueId p : g.params()) ex.bind(p, params.at(g.producer(p).name));
  ex.run();
  Run r{ex.value(loss).data<float>()[0], {}, ex.value(kept).to_vector()};
  for (ValueId gv : grads) {
    REQUIRE(gv != kNoValue);
    r.grads.push_back(ex.value(gv).to_vector());
  }
  return r;
}

} // namespace

TEST_CASE("fuse_linear_activation: fuses single-use linear → relu/gelu chains only, outputs and gradients unchanged") {
  SmallNet net;
  const Graph& g = net.g;
  RewrittenGraph f = fuse_linear_activation(g);
  CHECK(f.fused == 2);
  CHECK(count_op(f.graph, "linear_act") == 2);
  CHECK(count_op(f.graph, "matmul") == count_op(g, "matmul") - 2);
  CHECK(count_op(f.graph, "add") == count_op(g, "add") - 2);
  CHECK(count_op(f.graph, "relu") == count_op(g, "relu") - 1);
  CHECK(count_op(f.graph, "gelu") == 0);
  CHECK(f.graph.nodes().size() == g.nodes().size() - 4); // each chain: 3 nodes → 1
  // Names, outputs and FLOPs survive.
  CHECK(f.graph.params().size() == g.params().size());
  CHECK(f.graph.find_input("x") == f.value(net.x));
  REQUIRE(f.graph.outputs().size() == 2);
  CHECK(f.graph.outputs()[0] == f.value(net.kept_output));
  CHECK(f.graph.outputs()[1] == f.value(net.loss));
  CHECK(count_flops(f.graph).total() == doctest::Approx(count_flops(g).total()));
  CHECK(count_flops(f.graph).matmul == doctest::Approx(count_flops(g).matmul));
  // The fused chains' intermediate values are gone; every other value has a home.
  int gone = 0;
  for (ValueId v = 0; v < g.num_values(); ++v) gone += f.value(v) == kNoValue;
  CHECK(gone == 4);

  // A second application finds nothing more.
  CHECK(fuse_linear_activation(f.graph).fused == 0);

  // Loss, the kept output and every gradient (x and all parameters), with and without the pass.
  Graph unfused = net.g, fused = std::move(f.graph);
  const Run a = run_small(unfused, net.x, net.loss, net.kept_output, net.params);
  const Run b = run_small(fused, f.value(net.x), f.value(net.loss), f.value(net.kept_output), net.params);
  CHECK(b.loss == doctest::Approx(a.loss).epsilon(kSameBound));
  CHECK(max_relative_difference(b.kept, a.kept) <= kSameBound);
  REQUIRE(a.grads.size() == b.grads.size());
  for (size_t k = 0; k < a.grads.size(); ++k) {
    CAPTURE(k);
    CHECK(max_relative_difference(b.grads[k], a.grads[k]) <= kSameBound);
  }
}

namespace {

struct ModelRun {
  float loss;
  std::map<std::string, std::vector<float>> grads;
};

template <class M, class Bind>
ModelRun run_model(M& m, ParamStore& store, Bind bind) {
  m.graph.mark_output(m.loss);
  const std::vector<ValueId> params = m.graph.params();
  const std::vector<ValueId> grads = autodiff(m.graph, m.loss, params);
  Executor ex(m.graph);
  ex.bind_params(store);
  bind(ex);
  ex.set_seed(17); // dropout on: both graphs draw the same masks (same params, same run seed)
  ex.run();
  const ValueId loss = m.loss;
  ModelRun r{ex.value(loss).data<float>()[0], {}};
  for (size_t i = 0; i < params.size(); ++i)
    if (grads[i] != kNoValue) r.grads[ex.graph().producer(params[i]).name] = ex.value(grads[i]).to_vector();
  return r;
}

void compare(const ModelRun& fused, const ModelRun& unfused) {
  CHECK(fused.loss == doctest::Approx(unfused.loss).epsilon(kSameBound));
  REQUIRE(fused.grads.size() == unfused.grads.size());
  double worst = 0;
  for (const auto& [name, g] : unfused.grads) {
    CAPTURE(name);
    REQUIRE(fused.grads.count(name) == 1);
    const double d = max_relative_difference(fused.grads.at(name), g);
    worst = std::max(worst, d);
    CHECK(d <= kSameBound);
  }
  MESSAGE("loss ", unfused.loss, " vs ", fused.loss, "; largest relative gradient difference over ",
          unfused.grads.size(), " parameters: ", worst);
}

// The pass on a step's graph, as the pass list runs it; returns the chains fused.
int fuse(steps::StepGraph& s) {
  RewrittenGraph f = fuse_linear_activation(s.graph);
  const int fused = f.fused;
  s.replace_graph(std::move(f.graph), f.value_map, f.node_map);
  return fused;
}

template <class M>
void check_sites(const M& m) {
  for (const AttentionSite& s : m.attention) {
    CAPTURE(s.module);
    REQUIRE(s.node >= 0);
    const Node& n = m.graph.node(s.node);
    CHECK(std::string(n.op->name) == "attention");
    CHECK(n.outputs[0] == s.out);
    CHECK(n.inputs[0] == s.q);
    CHECK(n.inputs[1] == s.k);
    CHECK(n.inputs[2] == s.v);
  }
}

} // namespace

TEST_CASE("fuse_linear_activation: the tiny transformer's loss and every gradient are unchanged") {
  for (const ops::Activation act : {ops::Activation::relu, ops::Activation::gelu}) {
    CAPTURE(enum_name(act));
    TransformerConfig cfg = transformer_config("tiny");
    cfg.activation = act;
    ParamStore store;
    init_transformer_params(cfg, store, 7);
    const auto bind = [](Executor& ex) {
      ex.bind("src_tokens", Tensor::from_i32({3, 6}, {4, 5, 6, 7, 8, 9, 10, 11, 12, 2, 1, 1, 13, 14, 15, 16, 17, 2}));
      ex.bind("src_lengths", Tensor::from_i32({3}, {6, 4, 6}));
      ex.bind("prev_output_tokens", Tensor::from_i32({3, 5}, {2, 4, 5, 6, 7, 2, 8, 9, 1, 1, 2, 10, 11, 12, 13}));
      ex.bind("target", Tensor::from_i32({15}, {4, 5, 6, 7, 2, 8, 9, 2, 1, 1, 10, 11, 12, 13, 2}));
    };
    GraphOptions o;
    o.label_smoothing = 0.1f;
    o.dropout_seed = 99;
    o.attention_probs = true; // sites with A too
    Seq2SeqGraph plain = build_seq2seq_training_graph(cfg, 3, 6, 5, o);
    steps::StepGraph fused = steps::StepGraph::of(build_seq2seq_training_graph(cfg, 3, 6, 5, o), true, Device::cpu);
    const size_t nodes_before = fused.graph.nodes().size();
    CHECK(fuse(fused) == cfg.enc_layers + cfg.dec_layers); // every FFN's fc1 → activation
    CHECK(fused.graph.nodes().size() == nodes_before - 2 * static_cast<size_t>(cfg.enc_layers + cfg.dec_layers));
    REQUIRE(fused.attention.size() == plain.attention.size());
    check_sites(fused);
    for (size_t i = 0; i < fused.attention.size(); ++i)
      CHECK(fused.graph.shape(fused.attention[i].probs) == plain.graph.shape(plain.attention[i].probs));
    CHECK(fused.graph.shape(fused.logits) == plain.graph.shape(plain.logits));
    compare(run_model(fused, store, bind), run_model(plain, store, bind));
  }
}

TEST_CASE("fuse_linear_activation: a decoder-only tiny language model is unchanged too") {
  TransformerConfig cfg = transformer_config("tiny");
  cfg.decoder_only = true;
  cfg.enc_layers = 0;
  cfg.activation = ops::Activation::gelu;
  ParamStore store;
  init_transformer_params(cfg, store, 3);
  const auto bind = [](Executor& ex) {
    ex.bind("tokens", Tensor::from_i32({2, 5}, {2, 4, 5, 6, 7, 2, 8, 9, 1, 1}));
    ex.bind("target", Tensor::from_i32({10}, {4, 5, 6, 7, 2, 8, 9, 2, 1, 1}));
  };
  GraphOptions o;
  o.dropout_seed = 5;
  LmGraph plain = build_lm_training_graph(cfg, 2, 5, o);
  steps::StepGraph fused = steps::StepGraph::of(build_lm_training_graph(cfg, 2, 5, o), true, Device::cpu);
  CHECK(fuse(fused) == cfg.dec_layers);
  check_sites(fused);
  compare(run_model(fused, store, bind), run_model(plain, store, bind));
}

TEST_CASE(
    "fusions before the head gates: DropHead and Hard-Concrete gates train with both fusions, with the unfused "
    "losses") {
  if (testing::sanitized_build()) {
    SKIP_TEST("under the sanitizers: two trainings compared (tests/test_env.h, sanitized_build)");
    return;
  }
  if (!testing::have_dataset("multi30k-de-en")) {
    SKIP_TEST("PILLARS_DATA does not hold multi30k-de-en");
    return;
  }
  testing::ScratchDir tmp("pillars_fused_gates_", /*own_cache=*/true);
  // DropHead's gates once bound their mask inputs by value number: when a fusion still ran after the
  // head gates pass and renumbered values, the bind failed ("value %75 is not an input or
  // parameter"). The Hard-Concrete gates find their noise by name; they are here for coverage.
  const auto losses = [&](const nlohmann::json& heads, bool fuse) {
    nlohmann::json j = testing::small_multi30k_json(5);
    j["train"] = {{"max_updates", 5},
                  {"valid_bleu", false},
                  {"log_every", 1},
                  {"keep_best", 1},
                  {"fuse_linear_activation", fuse},
                  {"fuse_linear_cross_entropy", fuse}};
    j["heads"] = heads;
    const std::string name =
        std::string(heads.contains("drophead") ? "drophead" : "gates") + (fuse ? "_fused" : "_plain");
    train::SessionOptions so;
    so.run_dir = (tmp.path / name).string(), so.quiet = true, so.evaluate = false;
    train::run_experiment(parse_experiment(j, name + ".json"), so);
    return testing::train_losses(tmp.path / name);
  };
  for (const nlohmann::json& heads : {nlohmann::json{{"drophead", 0.2}}, nlohmann::json{{"gates", "hard_concrete"}}}) {
    CAPTURE(heads.dump());
    const std::vector<double> plain = losses(heads, false), fused = losses(heads, true);
    REQUIRE(plain.size() == 5);
    REQUIRE(fused.size() == 5);
    // The trainer scheduled both fusions, before the head gates (the log's start record).
    const std::vector<std::string> passes =
        testing::train_passes(tmp.path / (std::string(heads.contains("drophead") ? "drophead" : "gates") + "_fused"));
    REQUIRE(passes.size() >= 3);
    CHECK(std::vector<std::string>(passes.begin(), passes.begin() + 3) ==
          std::vector<std::string>{"fuse_linear_activation", "fuse_linear_cross_entropy", "head_gates"});
    // One block of the fused head holds a batch here, and linear_act is bit for bit the unfused
    // chain: the same losses (see the top comment's bound).
    for (size_t i = 0; i < plain.size(); ++i) CHECK(fused[i] == doctest::Approx(plain[i]).epsilon(kSameBound));
  }
}
