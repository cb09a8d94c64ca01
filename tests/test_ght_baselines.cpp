// The head-level baselines (ght/baselines.h) on the `tiny` config widened to 4 heads (d 32, Dh 8),
// driven through steps::Seq2SeqSteps like the trainer drives them.
//
//  * Disagreement: the regularizer the graph adds (objective − loss, and its logged term) equals λ · the
//    mean over modules of the mean pairwise cosine, computed here in float64 from the graph's own
//    V / A / O tensors over the valid positions only; its gradient (gradients with the regularizer
//    minus without) equals central finite differences of the regularizer.
//  * DropHead: the V-shaped rate, the masks' determinism, statistics and rescaling; the gates the
//    graph was fed are drophead_gates(seed, update, module, H, p(t)); a step equals the model with
//    those gates fixed; at t = ½ and in evaluation the model is unchanged.
//  * Hard-Concrete: evaluation gates against the closed form (and the evaluation graph against the
//    model with those gates fixed), the L0 term against float64, the training gates against their
//    formula, d objective / d log α against finite differences, log α = 20 ⇒ gates exactly 1.
//    DropHead and Hard-Concrete together (one head_gates pass): the graph's gate is the product.
//  * Michel importance: Σ_b |∂L_b/∂ξ_h| equals finite differences of the no-dropout, unsmoothed loss
//    on a gate parameter, summed over two batches; the per-module L2 normalization; the caller's
//    store untouched. top_k_selection: order, ties, limits.
// Tolerances: the graph runs in f32; a float64 recomputation from the same f32 tensors agrees to
// ~1e-6 relative (Approx epsilon 1e-5). Finite differences use h = 1e-2 and pass when
// |analytic − numeric| ≤ atol + 5e-3·|numeric|: on the f32 objective of ~3.5 (rounding ≈ 3e-7, over
// 2h ≈ 2e-5) atol = 3e-5, against gradients of 3e-4 … 1e-1 (observed errors ≤ 1.3e-5 and ≤ 0.05 %);
// on the regularizer alone (a scalar ~0.3) atol = 1e-6, gradients 7e-4 … 1.4e-2 (observed ≤ 8e-7).
// The model uses GELU so that the loss is smooth within the step (see Model).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <random>
#include <set>

#include "base/error.h"
#include "ght/baselines.h"
#include "ght/prune.h"
#include "models/transformer.h"
#include "steps/head_gates.h"
#include "steps/steps.h"
#include "steps/task.h"
#include "train/pass_list.h"
#include "tests/test_env.h"

using namespace pillars;
using namespace pillars::ght;

namespace {

using pillars::testing::random_sentences;

// ---- the model and a batch ------------------------------------------------------------------------

struct Model {
  TransformerConfig cfg;
  ParamStore params;
  Model() {
    cfg = transformer_config("tiny"); // 2+2 layers, FFN 32, vocab 32, dropouts 0.1
    cfg.d_model = 32;
    cfg.heads = 4;
    // GELU keeps the loss smooth for the finite differences: with ReLU, the FFN units whose input
    // crosses 0 within the step (dozens, at h = 1e-2) put errors of several percent into them.
    cfg.activation = ops::Activation::gelu;
    cfg.validate();
    init_transformer_params(cfg, params, 11);
  }
};

const std::vector<std::vector<int32_t>> kSrc = random_sentences({7, 3, 5, 6, 2, 4}, 32, 1);
const std::vector<std::vector<int32_t>> kTgt = random_sentences({4, 6, 2, 5, 7, 3}, 32, 2);
constexpr int32_t kPad = 1, kEos = 2;
constexpr float kSmoothing = 0.1f;
constexpr uint64_t kSeed = 5;

// Sentences 0, 1, 2 padded to (8, 8): rows of different lengths, so padding matters.
steps::Seq2SeqBatch small_batch() {
  steps::Batch b;
  b.indices = {0, 1, 2};
  b.Ts = 8, b.Tt = 8;
  return steps::make_seq2seq_batch(kSrc, kTgt, b, kPad, kEos);
}

std::vector<int> src_lengths(const steps::Seq2SeqBatch& b) { return {b.src_lengths.begin(), b.src_lengths.end()}; }
std::vector<int> tgt_lengths(const steps::Seq2SeqBatch& b) {
  std::vector<int> n(static_cast<size_t>(b.B), 0);
  for (int64_t r = 0; r < b.B; ++r)
    for (int64_t t = 0; t < b.Tt; ++t) n[static_cast<size_t>(r)] += b.target[static_cast<size_t>(r * b.Tt + t)] != kPad;
  return n;
}

bool is_decoder_self(const std::string& module) {
  return module.rfind("decoder.", 0) == 0 && module.find("self_attn") != std::string::npos;
}

// ---- the steps the tests drive ---------------------------------------------------------------------

// The steps of the methods of `heads` (seed: their random streams), as the trainer makes them.
steps::StepRecipes method_steps(const HeadsSettings& heads, uint64_t seed = 1) {
  train::StepContext c;
  c.label_smoothing = kSmoothing, c.heads = heads, c.seed = seed;
  return train::step_recipes(c);
}

// Keeps what the tests read back of the last run: the loss and objective, and per module (graph
// order) its V, O, A (when emitted) and gate (when gated). recipes() adds to a step a pass of the
// test's own, before autodiff (before plan_memory in evaluation), that names the values it reads;
// the gates are named by the head_gates pass; watch() reads them all after every run.
class Reader {
 public:
  steps::StepRecipes recipes(steps::StepRecipes r) const {
    for (steps::StepRecipe* recipe : {&r.train, &r.eval}) {
      auto at = recipe->passes.begin();
      while (at != recipe->passes.end() && at->name != "autodiff" && at->name != "plan_memory") ++at;
      recipe->passes.insert(at, {"test_reads", [](steps::StepGraph& s) {
                                   for (const AttentionSite& site : s.attention) {
                                     s.name("test.v." + site.module, site.v);
                                     s.name("test.out." + site.module, site.out);
                                     if (site.probs != kNoValue) s.name("test.probs." + site.module, site.probs);
                                   }
                                   s.name("test.objective", s.objective);
                                 }});
    }
    return r;
  }
  void watch(steps::ModelSteps& steps) {
    steps.set_run_watcher([this](const steps::StepRun& run) {
      last = {};
      last.sites = run.step.attention;
      last.loss = run.executor.fetch(run.step.loss).data<float>()[0];
      last.objective = run.named("test.objective").data<float>()[0];
      for (const AttentionSite& site : last.sites) {
        last.v.push_back(run.named("test.v." + site.module));
        last.out.push_back(run.named("test.out." + site.module));
        last.probs.push_back(site.probs == kNoValue ? Tensor() : run.named("test.probs." + site.module));
        last.gates.push_back(site.gate == kNoValue ? std::vector<float>{}
                                                   : run.named("head_gate." + site.module + ".xi").to_vector());
      }
    });
  }

  struct Run {
    std::vector<AttentionSite> sites;
    double loss = 0, objective = 0;
    std::vector<Tensor> v, out, probs;
    std::vector<std::vector<float>> gates; // empty for an ungated module
  };
  Run last;
};

// Steps that gate every module of training and evaluation graphs with the parameter
// "head_gate.<module>" of the store they use (so a test sets them to any value, and may change
// them between runs): a head_gates pass of the test's own in front of the plain step's passes.
steps::StepRecipes fixed_gates() {
  train::StepContext plain;
  plain.label_smoothing = kSmoothing;
  steps::StepRecipes r = train::step_recipes(plain);
  const steps::HeadGate gate = [](steps::StepGraph& s, const AttentionSite& site, size_t) {
    return s.graph.param("head_gate." + site.module, {site.heads});
  };
  for (steps::StepRecipe* recipe : {&r.train, &r.eval})
    recipe->passes.insert(recipe->passes.begin(),
                          {"head_gates", [gate](steps::StepGraph& s) { steps::gate_heads(s, {gate}); }});
  return r;
}

void set_gates(ParamStore& store, const std::map<std::string, std::vector<float>>& gates) {
  for (const auto& [module, xi] : gates) {
    const std::string name = "head_gate." + module;
    if (!store.contains(name)) store.add(name, {static_cast<int64_t>(xi.size())});
    std::copy(xi.begin(), xi.end(), store.get(name).data<float>());
  }
}

const Tensor* grad_of(std::vector<optim::ParamSlot>& slots, const std::string& name) {
  for (const optim::ParamSlot& s : slots)
    if (s.name == name) return &s.grad;
  return nullptr;
}

// Central-difference agreement: |analytic − numeric| ≤ atol + 5e-3·|numeric| (see the file comment).
void check_derivative(double analytic, double numeric, double atol, const std::string& what) {
  CAPTURE(what);
  CAPTURE(analytic);
  CAPTURE(numeric);
  CHECK(std::fabs(analytic - numeric) <= atol + 5e-3 * std::fabs(numeric));
}

// ---- float64 references -------------------------------------------------------------------------

// Mean over pairs i ≠ j of the cosine between heads' vectors e_h (each a list of doubles).
double mean_pairwise_cos(const std::vector<std::vector<double>>& e) {
  const size_t H = e.size();
  double sum = 0;
  for (size_t i = 0; i < H; ++i)
    for (size_t j = 0; j < H; ++j) {
      if (i == j) continue;
      double dot = 0, ni = 0, nj = 0;
      for (size_t k = 0; k < e[i].size(); ++k)
        dot += e[i][k] * e[j][k], ni += e[i][k] * e[i][k], nj += e[j][k] * e[j][k];
      sum += dot / std::sqrt(ni * nj);
    }
  return sum / static_cast<double>(H * (H - 1));
}

// x (B, T, H, F) → per head the valid rows t < len[b], flattened over (b, t, f).
std::vector<std::vector<double>> heads_of_bthf(const Tensor& x, const std::vector<int>& len) {
  const int64_t B = x.dim(0), T = x.dim(1), H = x.dim(2), F = x.dim(3);
  std::vector<std::vector<double>> e(static_cast<size_t>(H));
  const float* p = x.data<float>();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < len[static_cast<size_t>(b)]; ++t)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t f = 0; f < F; ++f) e[static_cast<size_t>(h)].push_back(p[((b * T + t) * H + h) * F + f]);
  return e;
}

// A (B, H, Tq, Tk) → per head the valid query rows t < len[b], flattened over (b, t, key).
std::vector<std::vector<double>> heads_of_probs(const Tensor& a, const std::vector<int>& len) {
  const int64_t B = a.dim(0), H = a.dim(1), Tq = a.dim(2), Tk = a.dim(3);
  std::vector<std::vector<double>> e(static_cast<size_t>(H));
  const float* p = a.data<float>();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < len[static_cast<size_t>(b)]; ++t)
        for (int64_t k = 0; k < Tk; ++k) e[static_cast<size_t>(h)].push_back(p[((b * H + h) * Tq + t) * Tk + k]);
  return e;
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

} // namespace

// ---- 1. Disagreement ----------------------------------------------------------------------------

TEST_CASE(
    "baselines: the disagreement term equals lambda times the float64 mean pairwise cosine of the graph tensors") {
  Model m;
  const steps::Seq2SeqBatch b = small_batch();
  const std::vector<int> src = src_lengths(b), tgt = tgt_lengths(b);
  for (const Disagreement variant : {Disagreement::subspace, Disagreement::position, Disagreement::output}) {
    CAPTURE(enum_name(variant));
    const FeatureMap feature_map = feature_map_of(variant);
    Reader spy;
    steps::Seq2SeqSteps steps(
        m.cfg, m.params,
        spy.recipes(method_steps({.regularizer = Regularizer::disagreement, .disagreement = variant, .lambda = 0.7})));
    spy.watch(steps);
    const float loss = steps.train(b, kSeed);
    const Reader::Run r = spy.last;
    REQUIRE(r.sites.size() == 6);
    CHECK(r.loss == doctest::Approx(loss));

    double total = 0;
    for (size_t i = 0; i < r.sites.size(); ++i) {
      const std::string& module = r.sites[i].module;
      const std::vector<int>& queries = module.rfind("encoder.", 0) == 0 ? src : tgt;
      const std::vector<int>& keys = is_decoder_self(module) ? tgt : src;
      std::vector<std::vector<double>> e;
      if (feature_map == FeatureMap::V) e = heads_of_bthf(r.v[i], keys);
      if (feature_map == FeatureMap::O) e = heads_of_bthf(r.out[i], queries);
      if (feature_map == FeatureMap::A) {
        REQUIRE(r.probs[i].defined());
        e = heads_of_probs(r.probs[i], queries);
      }
      total += mean_pairwise_cos(e);
    }
    const double expected = total / static_cast<double>(r.sites.size()); // (1/M) Σ_m D_m
    const std::map<std::string, double> terms = steps.take_terms();
    REQUIRE(terms.contains("disagreement_mean_cosine"));
    CHECK(terms.at("disagreement_mean_cosine") == doctest::Approx(expected).epsilon(1e-5));
    CHECK(r.objective - r.loss == doctest::Approx(0.7 * expected).epsilon(1e-4));

    // Evaluation graphs carry no regularizer and ask for no feature maps.
    steps::Seq2SeqSteps plain(m.cfg, m.params, method_steps({}));
    CHECK(steps.eval(b) == plain.eval(b));
  }
  CHECK(feature_map_of(Disagreement::subspace) == FeatureMap::V); // Li et al.'s names for the maps
  CHECK(feature_map_of(Disagreement::position) == FeatureMap::A);
  CHECK(feature_map_of(Disagreement::output) == FeatureMap::O);
  CHECK_THROWS_AS(parse_enum<Disagreement>("V", "heads.disagreement"), InputError);
}

TEST_CASE("baselines: the disagreement gradient equals finite differences of the regularizer") {
  Model m;
  const steps::Seq2SeqBatch b = small_batch();
  // subspace, λ = 1
  steps::Seq2SeqSteps with(m.cfg, m.params, method_steps({.regularizer = Regularizer::disagreement, .lambda = 1.0})),
      without(m.cfg, m.params, method_steps({}));
  const auto mean_cosine = [&] { return with.take_terms().at("disagreement_mean_cosine"); };
  for (const std::string name :
       {"encoder.layers.0.self_attn.v_proj.bias", "decoder.layers.1.encoder_attn.v_proj.bias"}) {
    with.train(b, kSeed);
    with.take_terms();
    const std::vector<float> g_with = grad_of(with.slots(), name)->to_vector();
    without.train(b, kSeed);
    const std::vector<float> g_without = grad_of(without.slots(), name)->to_vector();
    float* x = m.params.get(name).data<float>();
    for (size_t e = 0; e < g_with.size(); e += 5) {
      const float x0 = x[e];
      const float xp = x0 + 1e-2f, xm = x0 - 1e-2f;
      x[e] = xp;
      with.train(b, kSeed);
      const double rp = mean_cosine();
      x[e] = xm;
      with.train(b, kSeed);
      const double rm = mean_cosine();
      x[e] = x0;
      check_derivative(static_cast<double>(g_with[e]) - g_without[e], (rp - rm) / (static_cast<double>(xp) - xm), 1e-6,
                       name + " element " + std::to_string(e));
    }
  }
}

// ---- 2. DropHead --------------------------------------------------------------------------------

TEST_CASE("baselines: DropHead rate follows the V-shaped schedule and its masks are deterministic and rescaled") {
  CHECK(drophead_rate(0.3, 0.0) == doctest::Approx(0.3));
  CHECK(drophead_rate(0.3, 1.0) == doctest::Approx(0.3));
  CHECK(drophead_rate(0.3, 0.5) == 0.0);
  CHECK(drophead_rate(0.3, 0.25) == doctest::Approx(0.15));
  CHECK(drophead_rate(0.3, 0.75) == doctest::Approx(0.15));
  CHECK(drophead_rate(0.3, 2.0) == doctest::Approx(0.3)); // t clamped to [0, 1]

  const int64_t H = 4;
  CHECK(drophead_gates(9, 3, 2, H, 0.4) == drophead_gates(9, 3, 2, H, 0.4));
  int differ_update = 0, differ_module = 0, differ_seed = 0;
  int64_t zeros = 0, draws = 0;
  const double p = 0.3;
  for (int64_t update = 1; update <= 4000; ++update) {
    const std::vector<float> xi = drophead_gates(9, update, 0, H, p);
    differ_update += xi != drophead_gates(9, update + 1, 0, H, p);
    differ_module += xi != drophead_gates(9, update, 1, H, p);
    differ_seed += xi != drophead_gates(10, update, 0, H, p);
    int kept = 0;
    double sum = 0;
    for (float x : xi) {
      kept += x != 0.0f;
      sum += x;
    }
    CHECK(sum == doctest::Approx(static_cast<double>(H))); // Σ ξ = H
    if (kept == H) {
      for (float x : xi) CHECK(x == 1.0f);
    } else {
      for (float x : xi) CHECK((x == 0.0f || x == doctest::Approx(static_cast<double>(H) / kept)));
    }
    zeros += H - kept;
    draws += H;
  }
  // P(ξ_h = 0) = p − p^H (the all-dropped draws become all ones); 16000 draws: σ ≈ 0.0036.
  CHECK(static_cast<double>(zeros) / static_cast<double>(draws) == doctest::Approx(p - std::pow(p, 4)).epsilon(0.05));
  CHECK(differ_update > 2000);
  CHECK(differ_module > 2000);
  CHECK(differ_seed > 2000);
  // p = 0 keeps everything; p = 1 drops everything, which falls back to all ones.
  CHECK(drophead_gates(9, 3, 0, H, 0.0) == std::vector<float>(4, 1.0f));
  CHECK(drophead_gates(9, 3, 0, H, 1.0) == std::vector<float>(4, 1.0f));
}

TEST_CASE("baselines: DropHead feeds the scheduled gates to training graphs and leaves evaluation alone") {
  Model m;
  const steps::Seq2SeqBatch b = small_batch();
  Reader reader;
  const Reader::Run& last = reader.last;
  steps::Seq2SeqSteps steps(m.cfg, m.params, reader.recipes(method_steps({.drophead = 0.5}, /*seed=*/21)));
  reader.watch(steps);

  // t = 0.1: p = 0.4. The gates the graph used are drophead_gates(seed, update, module, H, p).
  steps.set_progress(7, 0.1);
  const float loss = steps.train(b, kSeed);
  const Reader::Run r = last;
  REQUIRE(r.sites.size() == 6);
  int dropped = 0;
  std::map<std::string, std::vector<float>> used;
  for (size_t i = 0; i < r.sites.size(); ++i) {
    CAPTURE(r.sites[i].module);
    CHECK(r.gates[i] == drophead_gates(21, 7, i, 4, drophead_rate(0.5, 0.1)));
    for (float x : r.gates[i]) dropped += x == 0.0f;
    used[r.sites[i].module] = r.gates[i];
  }
  CHECK(dropped > 0);
  // The same step with those gates fixed: the same loss (the gates are the only change).
  ParamStore fixed_params = m.params;
  set_gates(fixed_params, used);
  steps::Seq2SeqSteps fixed(m.cfg, fixed_params, fixed_gates());
  CHECK(fixed.train(b, kSeed) == doctest::Approx(loss).epsilon(1e-6));

  // Another update draws other masks; the same update again, the same ones.
  steps.set_progress(8, 0.1);
  steps.train(b, kSeed);
  bool other = false;
  for (size_t i = 0; i < 6; ++i) other = other || last.gates[i] != r.gates[i];
  CHECK(other);
  steps.set_progress(7, 0.1);
  steps.train(b, kSeed);
  CHECK(last.gates == r.gates);

  // t = ½: p = 0, no head is dropped and the model is unchanged.
  steps::Seq2SeqSteps plain(m.cfg, m.params, method_steps({}));
  steps.set_progress(9, 0.5);
  CHECK(steps.train(b, kSeed) == plain.train(b, kSeed));
  for (const auto& xi : last.gates) CHECK(xi == std::vector<float>(4, 1.0f));

  // Evaluation: no gates at all, the same NLL as the model without DropHead.
  CHECK(steps.eval(b) == plain.eval(b));
  for (const AttentionSite& site : last.sites) CHECK(site.gate == kNoValue);
}

// ---- 3. Hard-Concrete ---------------------------------------------------------------------------

namespace {

// log α of every head: seeded values in [−3, 3].
void random_log_alpha(ParamStore& params, const TransformerConfig& cfg, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  for (const std::string& module : attention_modules(cfg)) {
    Tensor& t = params.get(log_alpha_name(module));
    for (int64_t h = 0; h < t.numel(); ++h) t.data<float>()[h] = u(rng);
  }
}

} // namespace

TEST_CASE("baselines: Hard-Concrete evaluation gates follow the closed form, in expected_gates and in the graph") {
  Model m;
  add_hard_concrete_parameters(m.params, m.cfg);
  const std::vector<std::string> modules = attention_modules(m.cfg);
  for (const std::string& module : modules) {
    REQUIRE(m.params.get(log_alpha_name(module)).to_vector() == std::vector<float>(4, 2.0f));
  }
  // Closed forms: σ(0)·1.2 − 0.1 = 0.5; σ(ln 3) = ¾ → 0.8; σ(−5)·1.2 − 0.1 < 0 → 0; σ(10)·1.2 − 0.1 > 1 → 1.
  const std::vector<float> chosen = {0.0f, std::log(3.0f), -5.0f, 10.0f};
  std::copy(chosen.begin(), chosen.end(), m.params.get(log_alpha_name(modules[0])).data<float>());
  const HeadScores gates = expected_gates(m.params, m.cfg);
  REQUIRE(gates.size() == modules.size());
  CHECK(gates.at(modules[0])[0] == doctest::Approx(0.5));
  CHECK(gates.at(modules[0])[1] == doctest::Approx(0.8).epsilon(1e-6));
  CHECK(gates.at(modules[0])[2] == 0.0);
  CHECK(gates.at(modules[0])[3] == 1.0);
  CHECK(gates.at(modules[1])[0] == doctest::Approx(sigmoid(2.0) * 1.2 - 0.1)); // the default start: 0.957
  // add_hard_concrete_parameters leaves existing values alone.
  add_hard_concrete_parameters(m.params, m.cfg, -7.0f);
  CHECK(m.params.get(log_alpha_name(modules[0])).data<float>()[1] == std::log(3.0f));

  // The evaluation graph uses exactly these gates.
  random_log_alpha(m.params, m.cfg, 3);
  std::copy(chosen.begin(), chosen.end(), m.params.get(log_alpha_name(modules[0])).data<float>());
  const steps::Seq2SeqBatch b = small_batch();
  Reader spy;
  steps::Seq2SeqSteps steps(m.cfg, m.params, spy.recipes(method_steps({.gates = HeadGates::hard_concrete})));
  spy.watch(steps);
  const double nll = steps.eval(b);
  std::map<std::string, std::vector<float>> as_float;
  for (const auto& [module, xi] : expected_gates(m.params, m.cfg)) as_float[module].assign(xi.begin(), xi.end());
  for (size_t i = 0; i < spy.last.sites.size(); ++i) {
    const std::vector<float>& expected = as_float.at(spy.last.sites[i].module);
    for (size_t h = 0; h < 4; ++h) CHECK(spy.last.gates[i][h] == doctest::Approx(expected[h]).epsilon(1e-6));
  }
  ParamStore fixed_params = m.params;
  set_gates(fixed_params, as_float);
  steps::Seq2SeqSteps fixed(m.cfg, fixed_params, fixed_gates());
  CHECK(nll == doctest::Approx(fixed.eval(b)).epsilon(1e-5));
}

TEST_CASE("baselines: Hard-Concrete training gates, L0 term and the gradient with respect to log alpha") {
  Model m;
  add_hard_concrete_parameters(m.params, m.cfg);
  random_log_alpha(m.params, m.cfg, 4);
  Reader spy;
  steps::Seq2SeqSteps steps(
      m.cfg, m.params, spy.recipes(method_steps({.gates = HeadGates::hard_concrete, .l0_lambda = 0.5}, /*seed=*/13)));
  spy.watch(steps);
  const steps::Seq2SeqBatch b = small_batch();
  steps.set_progress(11, 0.3);
  steps.train(b, kSeed);
  const Reader::Run r = spy.last;

  // L0 term and training gates in float64.
  const double beta = 2.0 / 3.0, shift = -beta * std::log(0.1 / 1.1);
  double open = 0;
  int64_t heads = 0, closed = 0, full = 0;
  for (size_t i = 0; i < r.sites.size(); ++i) {
    const std::vector<float> la = m.params.get(log_alpha_name(r.sites[i].module)).to_vector();
    const std::vector<float> noise = concrete_noise(13, 11, i, 4);
    CHECK(noise == concrete_noise(13, 11, i, 4));
    CHECK(noise != concrete_noise(13, 12, i, 4));
    for (size_t h = 0; h < 4; ++h) {
      open += sigmoid(la[h] + shift);
      ++heads;
      const double gate = std::clamp(sigmoid((noise[h] + la[h]) / beta) * 1.2 - 0.1, 0.0, 1.0);
      CHECK(r.gates[i][h] == doctest::Approx(gate).epsilon(1e-5));
      closed += gate == 0.0, full += gate == 1.0;
    }
  }
  CHECK(closed > 0); // the clamps are exercised
  CHECK(full > 0);
  CHECK(steps.take_terms().at("gates_open_probability") == doctest::Approx(open / heads).epsilon(1e-5));
  CHECK(r.objective - r.loss == doctest::Approx(0.5 * open / heads).epsilon(1e-4));

  // d objective / d log α against central differences of the objective (same noise: same update).
  for (const std::string& module : {attention_modules(m.cfg)[0], attention_modules(m.cfg)[4]}) {
    const std::string name = log_alpha_name(module);
    steps.train(b, kSeed);
    const std::vector<float> analytic = grad_of(steps.slots(), name)->to_vector();
    float* x = m.params.get(name).data<float>();
    for (size_t h = 0; h < 4; ++h) {
      const float x0 = x[h], xp = x0 + 1e-2f, xm = x0 - 1e-2f;
      x[h] = xp;
      steps.train(b, kSeed);
      const double op = spy.last.objective;
      x[h] = xm;
      steps.train(b, kSeed);
      const double om = spy.last.objective;
      x[h] = x0;
      check_derivative(analytic[h], (op - om) / (static_cast<double>(xp) - xm), 3e-5,
                       name + " head " + std::to_string(h));
    }
  }
}

TEST_CASE("baselines: Hard-Concrete gates that are all open leave the training loss of the model unchanged") {
  Model m;
  add_hard_concrete_parameters(m.params, m.cfg, 20.0f);
  Reader spy;
  steps::Seq2SeqSteps steps(m.cfg, m.params,
                            spy.recipes(method_steps({.gates = HeadGates::hard_concrete, .l0_lambda = 1.0}))),
      plain(m.cfg, m.params, method_steps({}));
  spy.watch(steps);
  const steps::Seq2SeqBatch b = small_batch();
  steps.set_progress(3, 0.2);
  CHECK(steps.train(b, kSeed) == doctest::Approx(plain.train(b, kSeed)).epsilon(1e-6));
  for (const auto& xi : spy.last.gates) CHECK(xi == std::vector<float>(4, 1.0f));
  CHECK(spy.last.objective - spy.last.loss == doctest::Approx(1.0).epsilon(1e-5)); // λ · P(open) ≈ λ
}

TEST_CASE("baselines: DropHead and Hard-Concrete gates together multiply") {
  Model m;
  add_hard_concrete_parameters(m.params, m.cfg);
  random_log_alpha(m.params, m.cfg, 4);
  Reader spy;
  // One seed for both streams (the experiment's): DropHead's and the noise's differ by their salts.
  steps::Seq2SeqSteps steps(
      m.cfg, m.params, spy.recipes(method_steps({.drophead = 0.5, .gates = HeadGates::hard_concrete}, /*seed=*/13)));
  spy.watch(steps);
  steps.set_progress(7, 0.0);
  steps.train(small_batch(), kSeed);
  const double beta = 2.0 / 3.0;
  for (size_t i = 0; i < spy.last.sites.size(); ++i) {
    CAPTURE(spy.last.sites[i].module);
    const std::vector<float> drop = drophead_gates(13, 7, i, 4, 0.5);
    const std::vector<float> noise = concrete_noise(13, 7, i, 4);
    const std::vector<float> la = m.params.get(log_alpha_name(spy.last.sites[i].module)).to_vector();
    for (size_t h = 0; h < 4; ++h) {
      const double concrete = std::clamp(sigmoid((noise[h] + la[h]) / beta) * 1.2 - 0.1, 0.0, 1.0);
      CHECK(spy.last.gates[i][h] == doctest::Approx(drop[h] * concrete).epsilon(1e-5));
    }
  }
}

// ---- 4. Michel importance -----------------------------------------------------------------------

TEST_CASE("baselines: Michel head importance equals finite differences on the gates, normalized per module") {
  Model m;
  steps::Seq2SeqData data;
  data.train_src = kSrc, data.train_tgt = kTgt, data.valid_src = kSrc, data.valid_tgt = kTgt;
  const int64_t max_tokens = 24; // 6 sentences of padded length 8: 2 batches of 3
  const TaskFactory factory = [&](ParamStore& params) {
    return steps::make_seq2seq_task(m.cfg, params, data, max_tokens,
                                    train::step_recipes(train::importance_context(false)));
  };
  const size_t before = m.params.size();
  ImportanceSettings s;
  s.batches = 2;
  s.seed = 3;
  const HeadImportance imp = head_importance(m.cfg, m.params, factory, s);
  CHECK(m.params.size() == before); // the caller's store is untouched
  CHECK(imp.batches == 2);
  REQUIRE(imp.raw.size() == 6);

  // The same batches; L(ξ) = the unsmoothed mean NLL without dropout (Seq2SeqSteps::eval / tokens).
  const std::vector<steps::Batch> batches = factory(m.params)->epoch(3, 1);
  REQUIRE(batches.size() == 2);
  ParamStore gated = m.params;
  std::map<std::string, std::vector<float>> ones;
  for (const std::string& module : attention_modules(m.cfg)) ones[module] = std::vector<float>(4, 1.0f);
  set_gates(gated, ones);
  steps::Seq2SeqSteps steps(m.cfg, gated, fixed_gates());
  HeadScores numeric;
  int64_t tokens = 0;
  for (const steps::Batch& batch : batches) {
    const steps::Seq2SeqBatch sb = steps::make_seq2seq_batch(kSrc, kTgt, batch, kPad, kEos);
    tokens += sb.target_tokens;
    const double n = static_cast<double>(sb.target_tokens);
    for (const std::string& module : attention_modules(m.cfg)) {
      float* xi = gated.get("head_gate." + module).data<float>();
      std::vector<double>& I = numeric[module];
      I.resize(4, 0.0);
      for (size_t h = 0; h < 4; ++h) {
        xi[h] = 1.01f;
        const double lp = steps.eval(sb) / n;
        xi[h] = 0.99f;
        const double lm = steps.eval(sb) / n;
        xi[h] = 1.0f;
        I[h] += std::fabs((lp - lm) / (static_cast<double>(1.01f) - static_cast<double>(0.99f)));
      }
    }
  }
  CHECK(imp.tokens == tokens);
  for (const auto& [module, I] : numeric) {
    double norm = 0;
    for (double x : I) norm += x * x;
    norm = std::sqrt(norm);
    for (size_t h = 0; h < 4; ++h) {
      check_derivative(imp.raw.at(module)[h], I[h], 3e-5, module + " head " + std::to_string(h));
      CHECK(imp.normalized.at(module)[h] == doctest::Approx(I[h] / norm).epsilon(2e-2));
      CHECK(imp.normalized.at(module)[h] ==
            doctest::Approx(imp.raw.at(module)[h] /
                            std::sqrt(std::inner_product(imp.raw.at(module).begin(), imp.raw.at(module).end(),
                                                         imp.raw.at(module).begin(), 0.0))));
    }
  }

  // Pruning by importance: 2 heads kept in every module.
  const PrunedModel pruned = prune_heads(m.cfg, m.params, top_k_selection(imp.normalized, 2));
  for (const std::string& module : attention_modules(m.cfg)) CHECK(pruned.cfg.heads_of(module) == 2);
}

// ---- 5. Selection -------------------------------------------------------------------------------

TEST_CASE("baselines: top_k_selection keeps the highest scores, ties to the lower index, indices ascending") {
  const HeadScores scores = {
      {"a", {0.1, 0.5, 0.5, 0.2}}, {"b", {1.0, 1.0, 1.0, 1.0}}, {"c", {3.0, 1.0}}, {"d", {0.0, 2.0, -1.0, 2.5}}};
  const HeadSelection k1 = top_k_selection(scores, 1);
  CHECK(k1.at("a") == std::vector<int>{1});
  CHECK(k1.at("b") == std::vector<int>{0});
  CHECK(k1.at("c") == std::vector<int>{0});
  CHECK(k1.at("d") == std::vector<int>{3});
  const HeadSelection k2 = top_k_selection(scores, 2);
  CHECK(k2.at("a") == std::vector<int>{1, 2});
  CHECK(k2.at("b") == std::vector<int>{0, 1});
  CHECK(k2.at("c") == std::vector<int>{0, 1});
  CHECK(k2.at("d") == std::vector<int>{1, 3}); // ascending, not by score
  const HeadSelection k3 = top_k_selection(scores, 3);
  CHECK(k3.at("a") == std::vector<int>{1, 2, 3});
  CHECK(k3.at("d") == std::vector<int>{0, 1, 3});
  CHECK(top_k_selection(scores, 10).at("b") == std::vector<int>{0, 1, 2, 3});
  CHECK(top_k_selection(scores, 10).at("c") == std::vector<int>{0, 1});
  CHECK_THROWS_AS(top_k_selection(scores, 0), InputError);
}
