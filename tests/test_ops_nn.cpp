// The ops of engine/ops/{softmax,layernorm,embedding,dropout,cross_entropy,head_gram}.h: each against a naive double-precision reference written here, and its
// gradient against finite differences (tests/grad_check.h). Odd sizes throughout, so no kernel
// gets away with assuming multiples of a vector width.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>
#include <vector>

#include "base/error.h"
#include "engine/executor.h"
#include "engine/ops.h"
#include "kernels/cpu/vec_math.h"
#include "kernels/philox.h"
#include "tests/grad_check.h"

using namespace pillars;
using pillars::testing::check_gradients;
using pillars::testing::evaluate;
using pillars::testing::GradCheckOptions;
using pillars::testing::random_tensor;

namespace {

using Builder = pillars::testing::GraphBuilder;
constexpr float kInf = std::numeric_limits<float>::infinity();

// |got − want| ≤ atol + rtol·|want| for every element, reporting the first miss.
void check_close(const std::vector<float>& got, const std::vector<double>& want, double rtol, double atol) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::fabs(got[i] - want[i]) <= atol + rtol * std::fabs(want[i])) continue;
    FAIL_CHECK("element ", i, ": got ", got[i], ", want ", want[i]);
    return;
  }
}

std::vector<double> to_double(const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); }

// (outer, len, inner) around an axis.
struct Split {
  int64_t outer = 1, len = 1, inner = 1;
};
Split split(const Shape& s, int64_t axis) {
  Split r;
  for (int64_t i = 0; i < static_cast<int64_t>(s.size()); ++i)
    (i < axis ? r.outer : i == axis ? r.len : r.inner) *= s[i];
  return r;
}

std::vector<double> softmax_ref(const Tensor& x, int64_t axis, bool log) {
  const Split s = split(x.shape(), axis);
  const std::vector<float> v = x.to_vector();
  std::vector<double> y(v.size());
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t i = 0; i < s.inner; ++i) {
      const auto at = [&](int64_t l) { return static_cast<size_t>((o * s.len + l) * s.inner + i); };
      double m = -INFINITY, sum = 0;
      for (int64_t l = 0; l < s.len; ++l) m = std::max(m, double(v[at(l)]));
      for (int64_t l = 0; l < s.len; ++l) sum += std::exp(v[at(l)] - m);
      for (int64_t l = 0; l < s.len; ++l) y[at(l)] = log ? v[at(l)] - m - std::log(sum) : std::exp(v[at(l)] - m) / sum;
    }
  return y;
}

Tensor ids_tensor(const Shape& s, const std::vector<int32_t>& v) { return Tensor::from_i32(s, v); }

} // namespace

// ---- vec_math -------------------------------------------------------------------------------------

TEST_CASE("op: vec_math fast_exp and fast_log are within 2 ulp of the correctly rounded result") {
  const auto ulps = [](float a, float b) {
    return std::abs(int64_t(std::bit_cast<int32_t>(a)) - std::bit_cast<int32_t>(b));
  };
  int64_t worst_exp = 0, worst_log = 0;
  for (float x = -87.0f; x < 88.5f; x += 0.00731f)
    worst_exp = std::max(worst_exp, ulps(cpu::fast_exp(x), static_cast<float>(std::exp(double(x)))));
  for (float x = 1e-37f; x < 1e38f; x *= 1.0173f)
    worst_log = std::max(worst_log, ulps(cpu::fast_log(x), static_cast<float>(std::log(double(x)))));
  CHECK(worst_exp <= 2);
  CHECK(worst_log <= 2);
  CHECK(cpu::fast_exp(-kInf) == 0.0f);
  CHECK(cpu::fast_exp(-200.0f) == 0.0f);
  CHECK(cpu::fast_exp(100.0f) == kInf);
  CHECK(std::isnan(cpu::fast_exp(NAN)));
  CHECK(cpu::fast_log(0.0f) == -kInf);
  CHECK(std::isnan(cpu::fast_log(-1.0f)));
  CHECK(cpu::fast_log(kInf) == kInf);
  CHECK(cpu::fast_log(1.0f) == 0.0f);
}

// ---- softmax ----------------------------------------------------------------------------------------

TEST_CASE("op: softmax and log_softmax match a double reference on every axis") {
  // Odd extents; {3, 5, 130} has inner > 64 (two column tiles); {67, 1031} exceeds the threading grain.
  for (const Shape& shape : {Shape{3, 5, 7}, Shape{3, 5, 130}, Shape{67, 1031}, Shape{1}, Shape{2, 1, 3}})
    for (int64_t axis = 0; axis < static_cast<int64_t>(shape.size()); ++axis)
      for (bool log : {false, true}) {
        CAPTURE(shape_str(shape));
        CAPTURE(axis);
        CAPTURE(log);
        const Tensor x = random_tensor(shape, 11, -6.0f, 6.0f);
        const Builder f = [&](Graph& g, const std::vector<ValueId>& in) {
          return log ? ops::log_softmax(g, in[0], axis) : ops::softmax(g, in[0], axis);
        };
        // log-softmax: x − m − log s loses ~1 ulp of |x − m| ≤ 12 in f32, hence the absolute 2e-6.
        check_close(evaluate(f, {x}), softmax_ref(x, axis, log), 2e-6, log ? 2e-6 : 1e-7);
      }
}

TEST_CASE("op: softmax of a fully masked (-inf) row is 0, log_softmax is -inf, never NaN") {
  const Tensor x = Tensor::from({2, 3}, {-kInf, -kInf, -kInf, 1.0f, -kInf, 1.0f});
  const std::vector<float> p =
      evaluate([](Graph& g, const std::vector<ValueId>& in) { return ops::softmax(g, in[0]); }, {x});
  CHECK(p == std::vector<float>{0, 0, 0, 0.5f, 0, 0.5f});
  const std::vector<float> lp =
      evaluate([](Graph& g, const std::vector<ValueId>& in) { return ops::log_softmax(g, in[0]); }, {x});
  CHECK(lp[0] == -kInf);
  CHECK(lp[4] == -kInf);
  CHECK(lp[3] == doctest::Approx(std::log(0.5)));
  // Along axis 0 (the strided path) as well.
  const std::vector<float> p0 =
      evaluate([](Graph& g, const std::vector<ValueId>& in) { return ops::softmax(g, in[0], 0); },
               {Tensor::from({2, 2}, {-kInf, 0.0f, -kInf, 0.0f})});
  CHECK(p0 == std::vector<float>{0, 0.5f, 0, 0.5f});
}

TEST_CASE("op: softmax and log_softmax gradients equal finite differences") {
  for (int64_t axis : {0, 1, 2})
    for (bool log : {false, true}) {
      CAPTURE(axis);
      CAPTURE(log);
      check_gradients(
          [&](Graph& g, const std::vector<ValueId>& in) {
            return log ? ops::log_softmax(g, in[0], axis) : ops::softmax(g, in[0], axis);
          },
          {{3, 4, 5}}, GradCheckOptions{.lo = -3.0f, .hi = 3.0f});
    }
}

// ---- layer norm ---------------------------------------------------------------------------------------

namespace {
struct LayerNormRef {
  std::vector<double> y, mean, rstd;
};
LayerNormRef layer_norm_ref(const Tensor& x, const float* gamma, const float* beta, double eps) {
  const int64_t D = x.dim(-1), N = x.numel() / D;
  const std::vector<float> v = x.to_vector();
  LayerNormRef r;
  for (int64_t n = 0; n < N; ++n) {
    double m = 0, var = 0;
    for (int64_t d = 0; d < D; ++d) m += v[n * D + d];
    m /= D;
    for (int64_t d = 0; d < D; ++d) var += (v[n * D + d] - m) * (v[n * D + d] - m);
    const double rstd = 1.0 / std::sqrt(var / D + eps);
    for (int64_t d = 0; d < D; ++d)
      r.y.push_back((v[n * D + d] - m) * rstd * (gamma ? gamma[d] : 1.0) + (beta ? beta[d] : 0.0));
    r.mean.push_back(m);
    r.rstd.push_back(rstd);
  }
  return r;
}
} // namespace

TEST_CASE("op: layer_norm matches a double reference, with and without affine") {
  for (const Shape& shape : {Shape{5, 37}, Shape{2, 3, 129}, Shape{300, 257}}) {
    const int64_t D = shape.back();
    // An offset mean (|μ| ≫ σ) checks that the variance is computed stably.
    const Tensor x = random_tensor(shape, 3, 9.0f, 11.0f), gamma = random_tensor({D}, 4), beta = random_tensor({D}, 5);
    for (int affine = 0; affine < 3; ++affine) { // none, γ only, γ and β
      CAPTURE(shape_str(shape));
      CAPTURE(affine);
      const LayerNormRef ref =
          layer_norm_ref(x, affine ? gamma.data<float>() : nullptr, affine == 2 ? beta.data<float>() : nullptr, 1e-5);
      Graph g;
      const ValueId xv = g.input("x", shape), gv = g.input("g", {D}), bv = g.input("b", {D});
      const ValueId y = ops::layer_norm(g, xv, affine ? gv : kNoValue, affine == 2 ? bv : kNoValue, 1e-5f);
      const Node& node = g.producer(y);
      for (ValueId v : node.outputs) g.mark_output(v);
      Executor ex(g);
      ex.bind("x", x), ex.bind("g", gamma), ex.bind("b", beta);
      ex.run();
      check_close(ex.value(node.outputs[0]).to_vector(), ref.y, 1e-5, 2e-5);
      check_close(ex.value(node.outputs[1]).to_vector(), ref.mean, 1e-6, 0);
      check_close(ex.value(node.outputs[2]).to_vector(), ref.rstd, 1e-4, 0);
    }
  }
}

TEST_CASE("op: layer_norm gradients equal finite differences and the composed reference") {
  for (int affine = 0; affine < 3; ++affine) {
    CAPTURE(affine);
    const auto build = [affine](bool fused) {
      return [affine, fused](Graph& g, const std::vector<ValueId>& in) {
        const ValueId gamma = affine ? in[1] : kNoValue, beta = affine == 2 ? in[2] : kNoValue;
        return fused ? ops::layer_norm(g, in[0], gamma, beta, 1e-5f)
                     : ops::layer_norm_reference(g, in[0], gamma, beta, 1e-5f);
      };
    };
    const std::vector<Shape> shapes{{3, 2, 7}, {7}, {7}};
    check_gradients(build(true), shapes);
    // The fused op against the composed one: forward, and the autodiff gradients dx, dγ, dβ of the
    // same L = Σ y ∘ R (the fused backward against the chain rule through mean/sub/div/sqrt/mul/add).
    // D = 129 covers the kernels' vector bodies and tails.
    for (const Shape& xs : {Shape{3, 2, 7}, Shape{4, 3, 129}}) {
      CAPTURE(shape_str(xs));
      const int64_t D = xs.back();
      const std::vector<Tensor> in{random_tensor(xs, 1), random_tensor({D}, 2), random_tensor({D}, 3)};
      check_close(evaluate(build(true), in), to_double(evaluate(build(false), in)), 1e-5, 1e-5);
      const Tensor R = random_tensor(xs, 4);
      std::vector<int> wrt{0};
      if (affine) wrt.push_back(1);
      if (affine == 2) wrt.push_back(2);
      const auto fused = pillars::testing::gradients_of(build(true), in, R, wrt),
                 composed = pillars::testing::gradients_of(build(false), in, R, wrt);
      for (size_t k = 0; k < wrt.size(); ++k) {
        CAPTURE(wrt[k]); // 0: dx, 1: dγ, 2: dβ
        check_close(fused[k], to_double(composed[k]), 1e-4, 1e-5);
      }
    }
  }
}

// ---- embedding ----------------------------------------------------------------------------------------

TEST_CASE("op: embedding gathers rows, its gradient scatter-adds repeated ids") {
  const int64_t V = 11, D = 5;
  const Tensor table = random_tensor({V, D}, 1);
  const Tensor ids = ids_tensor({2, 3}, {4, 0, 4, 10, 4, 7});
  const Builder f = [](Graph& g, const std::vector<ValueId>& in) { return ops::embedding(g, in[0], in[1]); };
  const std::vector<float> out = evaluate(f, {table, ids});
  std::vector<double> want;
  for (int32_t id : {4, 0, 4, 10, 4, 7})
    for (int64_t d = 0; d < D; ++d) want.push_back(table.data<float>()[id * D + d]);
  check_close(out, want, 0, 0);
  check_gradients(f, {{V, D}, {}}, GradCheckOptions{.fixed = {{1, ids}}});

  // Explicitly: d table = Σ over positions of dout rows, row 4 three times, unused rows 0.
  Graph g;
  const ValueId t = g.input("t", {V, D}), i = g.input("i", {2, 3}, DType::i32);
  const ValueId loss = ops::sum_all(g, ops::embedding(g, t, i));
  const ValueId dt = autodiff(g, loss, {t})[0];
  Executor ex(g);
  ex.bind("t", table), ex.bind("i", ids);
  ex.run();
  const std::vector<float> grad = ex.value(dt).to_vector();
  for (int64_t v = 0; v < V; ++v) CHECK(grad[v * D] == (v == 4 ? 3.0f : v == 0 || v == 10 || v == 7 ? 1.0f : 0.0f));
}

TEST_CASE("op: embedding of a large batch is deterministic and correct (threaded scatter-add)") {
  const int64_t V = 37, D = 130, n = 4099;
  std::vector<int32_t> idv(n);
  for (int64_t k = 0; k < n; ++k) idv[k] = static_cast<int32_t>((k * 7919) % V);
  const Tensor ids = ids_tensor({n}, idv), dy = random_tensor({n, D}, 9);
  Graph g;
  const ValueId t = g.input("t", {V, D}), i = g.input("i", {n}, DType::i32), r = g.input("r", {n, D});
  const ValueId dt = autodiff(g, ops::sum_all(g, ops::mul(g, ops::embedding(g, t, i), r)), {t})[0];
  Executor ex(g);
  ex.bind("t", random_tensor({V, D}, 1)), ex.bind("i", ids), ex.bind("r", dy);
  ex.run();
  const std::vector<float> first = ex.value(dt).to_vector();
  ex.run();
  CHECK(ex.value(dt).to_vector() == first); // bitwise
  std::vector<double> want(static_cast<size_t>(V * D), 0.0);
  for (int64_t k = 0; k < n; ++k)
    for (int64_t d = 0; d < D; ++d) want[static_cast<size_t>(idv[k] * D + d)] += dy.data<float>()[k * D + d];
  check_close(first, want, 1e-5, 1e-4);
}

TEST_CASE("op: embedding rejects an id outside the vocabulary, naming the id and the size") {
  const Builder f = [](Graph& g, const std::vector<ValueId>& in) { return ops::embedding(g, in[0], in[1]); };
  CHECK_THROWS_WITH_AS(evaluate(f, {random_tensor({11, 3}, 1), ids_tensor({3}, {1, 11, 2})}),
                       doctest::Contains("id 11 at position 1 is outside the vocabulary [0, 11)"), Error);
  CHECK_THROWS_WITH_AS(evaluate(f, {random_tensor({11, 3}, 1), ids_tensor({1}, {-1})}), doctest::Contains("id -1"),
                       Error);
}

// ---- dropout, masked_fill ---------------------------------------------------------------------------

namespace {
std::vector<float> run_dropout(const Tensor& x, float p, uint64_t seed, uint64_t offset) {
  return evaluate([=](Graph& g, const std::vector<ValueId>& in) { return ops::dropout(g, in[0], p, seed, offset); },
                  {x});
}
} // namespace

TEST_CASE("op: dropout keeps element i iff philox_uniform(seed, offset, i) >= p, scaled by 1/(1-p)") {
  const int64_t n = 40003; // odd, and above the threading grain
  const float p = 0.3f;
  const Tensor x = random_tensor({n}, 2, 0.5f, 1.5f); // nonzero, so dropped ⇔ output 0
  const std::vector<float> y = run_dropout(x, p, 1234, 8);
  int64_t dropped = 0;
  for (int64_t i = 0; i < n; ++i) {
    const bool keep = philox_uniform(1234, 8, static_cast<uint64_t>(i)) >= p;
    dropped += !keep;
    if (y[i] != (keep ? x.data<float>()[i] * (1.0f / (1.0f - p)) : 0.0f)) {
      FAIL_CHECK("element ", i);
      break;
    }
  }
  // The dropped count is Binomial(n, p): within 4σ of n·p.
  const double sigma = std::sqrt(n * p * (1.0 - p));
  CHECK(std::fabs(dropped - n * p) < 4 * sigma);
  CHECK(run_dropout(x, p, 1234, 8) == y);  // same stream, same mask
  CHECK(run_dropout(x, p, 1234, 12) != y); // another offset, another mask
  CHECK(run_dropout(x, p, 99, 8) != y);    // another seed, another mask
  // An offset that is not a multiple of 4 starts mid-way through a Philox block.
  const std::vector<float> odd = run_dropout(x, p, 1234, 5);
  for (int64_t i = 0; i < 100; ++i) CHECK((odd[i] != 0.0f) == (philox_uniform(1234, 5, static_cast<uint64_t>(i)) >= p));
}

TEST_CASE("op: dropout backward applies the same mask and scale, p = 0 is the identity, p = 1 zeroes") {
  const Tensor x = random_tensor({7, 9}, 3, 0.5f, 1.5f);
  const Builder f = [](Graph& g, const std::vector<ValueId>& in) { return ops::dropout(g, in[0], 0.4f, 77, 16); };
  check_gradients(f, {{7, 9}}); // linear in x: the finite differences are exact up to rounding
  Graph g;
  const ValueId xv = g.input("x", {7, 9});
  const ValueId y = ops::dropout(g, xv, 0.4f, 77, 16);
  const ValueId dx = autodiff(g, ops::sum_all(g, y), {xv})[0];
  g.mark_output(y);
  Executor ex(g);
  ex.bind("x", x);
  ex.run();
  const std::vector<float> yv = ex.value(y).to_vector(), dxv = ex.value(dx).to_vector();
  for (size_t i = 0; i < yv.size(); ++i) CHECK(dxv[i] == (yv[i] != 0.0f ? 1.0f / 0.6f : 0.0f));
  CHECK(run_dropout(x, 0.0f, 1, 0) == x.to_vector());
  CHECK(run_dropout(x, 1.0f, 1, 0) == std::vector<float>(63, 0.0f));
}

TEST_CASE("op: masked_fill broadcasts the mask and blocks the gradient where it is set") {
  const Tensor x = random_tensor({2, 3, 5}, 4);
  const Tensor mask = ids_tensor({3, 1}, {1, 0, 1}); // broadcast over axes 0 and 2
  const Builder f = [](Graph& g, const std::vector<ValueId>& in) { return ops::masked_fill(g, in[0], in[1], -7.5f); };
  const std::vector<float> y = evaluate(f, {x, mask});
  for (int64_t i = 0; i < 30; ++i) {
    const bool masked = (i / 5) % 3 != 1;
    CHECK(y[i] == (masked ? -7.5f : x.data<float>()[i]));
  }
  check_gradients(f, {{2, 3, 5}, {}}, GradCheckOptions{.fixed = {{1, mask}}});
  CHECK_THROWS_AS(evaluate(f, {x, ids_tensor({2, 1}, {0, 1})}), Error); // (2, 1) does not broadcast to (2, 3, 5)
}

// ---- cross-entropy ------------------------------------------------------------------------------------

namespace {
struct CeRef {
  double loss;
  std::vector<double> grad; // d loss / d logits
};
// The textbook definition, in double: loss_n = −Σ_v q_v log softmax(x_n)_v, mean over valid rows.
CeRef cross_entropy_ref(const Tensor& logits, const std::vector<int32_t>& t, double eps, int64_t ignore) {
  const int64_t V = logits.dim(-1), N = logits.numel() / V;
  const std::vector<double> lp = softmax_ref(logits, 1, /*log=*/true);
  int64_t valid = 0;
  for (int32_t target : t) valid += target != ignore;
  CeRef r{0.0, std::vector<double>(static_cast<size_t>(N * V), 0.0)};
  for (int64_t n = 0; n < N; ++n) {
    if (t[n] == ignore) continue;
    for (int64_t v = 0; v < V; ++v) {
      const double q = (1 - eps) * (v == t[n]) + eps / V;
      r.loss -= q * lp[n * V + v] / valid;
      r.grad[n * V + v] = (std::exp(lp[n * V + v]) - q) / valid;
    }
  }
  return r;
}

struct CeRun {
  float loss;
  std::vector<float> lse, grad;
};
CeRun run_cross_entropy(const Tensor& logits, const Tensor& targets, float eps, int64_t ignore) {
  Graph g;
  const ValueId x = g.input("x", logits.shape()), t = g.input("t", targets.shape(), DType::i32);
  const ValueId loss = ops::cross_entropy(g, x, t, eps, ignore);
  const ValueId lse = g.producer(loss).outputs[1];
  g.mark_output(loss);
  g.mark_output(lse);
  const ValueId dx = autodiff(g, loss, {x})[0];
  Executor ex(g);
  ex.bind("x", logits), ex.bind("t", targets);
  ex.run();
  return CeRun{ex.value(loss).data<float>()[0], ex.value(lse).to_vector(), ex.value(dx).to_vector()};
}
} // namespace

TEST_CASE("op: cross_entropy matches a double reference (smoothing 0 and 0.1, ignored rows)") {
  for (const auto& [N, V] : {std::pair<int64_t, int64_t>{9, 13}, {37, 1001}}) {
    const Tensor logits = random_tensor({N, V}, 5, -4.0f, 4.0f);
    std::vector<int32_t> t(static_cast<size_t>(N));
    for (int64_t n = 0; n < N; ++n) t[n] = n % 4 == 2 ? -100 : static_cast<int32_t>((n * 31) % V);
    for (float eps : {0.0f, 0.1f}) {
      CAPTURE(N);
      CAPTURE(eps);
      const CeRef ref = cross_entropy_ref(logits, t, eps, -100);
      const CeRun got = run_cross_entropy(logits, ids_tensor({N}, t), eps, -100);
      CHECK(got.loss == doctest::Approx(ref.loss).epsilon(1e-5));
      check_close(got.grad, ref.grad, 1e-4, 1e-8);
      for (int64_t n = 0; n < N; ++n)
        if (t[n] != -100) {
          double s = 0;
          for (int64_t v = 0; v < V; ++v) s += std::exp(double(logits.data<float>()[n * V + v]));
          CHECK(got.lse[n] == doctest::Approx(std::log(s)).epsilon(1e-6));
        }
    }
  }
}

TEST_CASE("op: cross_entropy gradient equals finite differences") {
  const Tensor t = ids_tensor({5}, {3, -100, 0, 6, 3});
  for (float eps : {0.0f, 0.1f})
    check_gradients(
        [eps](Graph& g, const std::vector<ValueId>& in) { return ops::cross_entropy(g, in[0], in[1], eps); },
        {{5, 7}, {}}, GradCheckOptions{.lo = -3.0f, .hi = 3.0f, .fixed = {{1, t}}});
}

TEST_CASE("op: cross_entropy matches PyTorch (tests/golden/make_ce_reference.py)") {
  // torch 1.13.0a0: F.cross_entropy(ignore_index=-1, label_smoothing=0.1)
  const double kTorchLoss = 1.8454814677839559;
  const std::vector<double> kTorchGrad = {0.0049765789196366894,
                                          0.039215918021329663,
                                          0.096844661367891494,
                                          -0.15459684483390135,
                                          0.016178869164278679,
                                          -1.5059354216528931e-05,
                                          -0.002604123285018686,
                                          -0.10611932608311747,
                                          0.091711229131590688,
                                          0.016452896195298269,
                                          -0.00064367878931305747,
                                          -0.0026154318391243369,
                                          -0.0021968382027367727,
                                          0.0034111495874026548,
                                          0,
                                          0,
                                          0,
                                          0,
                                          0,
                                          0,
                                          0,
                                          -0.0014253933824461154,
                                          -0.0025441573269187265,
                                          0.001132254340976259,
                                          0.047291628630126564,
                                          0.14195981312959399,
                                          0.038341302270327261,
                                          -0.2247554476616592,
                                          -0.0021172981924234388,
                                          0.010234240626444258,
                                          -0.10338366609562651,
                                          0.093871055232711234,
                                          0.0049896623226508251,
                                          -0.0023604157272503635,
                                          -0.0012335781665060257,
                                          0,
                                          0,
                                          0,
                                          0,
                                          0,
                                          0,
                                          0};
  const int64_t N = 6, V = 7;
  std::vector<float> x;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t v = 0; v < V; ++v) x.push_back(static_cast<float>(2.5 * std::sin(1.3 * n + 0.7 * v + 0.1 * n * v)));
  const CeRun got = run_cross_entropy(Tensor::from({N, V}, x), ids_tensor({N}, {3, 0, -1, 6, 2, -1}), 0.1f, -1);
  CHECK(got.loss == doctest::Approx(kTorchLoss).epsilon(1e-6));
  check_close(got.grad, kTorchGrad, 1e-5, 1e-7);
}

// ---- head Gram matrix -----------------------------------------------------------------------------

namespace {
// G[i, j] by explicitly flattening each head's valid features into one vector.
std::vector<double> head_gram_ref(const Tensor& x, const std::vector<int32_t>& lengths) {
  const int64_t B = x.dim(0), T = x.dim(1), H = x.dim(2), D = x.dim(3);
  std::vector<std::vector<double>> e(static_cast<size_t>(H));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < (lengths.empty() ? T : lengths[b]); ++t)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t d = 0; d < D; ++d) e[h].push_back(x.data<float>()[((b * T + t) * H + h) * D + d]);
  std::vector<double> G;
  for (int64_t i = 0; i < H; ++i)
    for (int64_t j = 0; j < H; ++j) G.push_back(std::inner_product(e[i].begin(), e[i].end(), e[j].begin(), 0.0));
  return G;
}

// d L / d x of L = Σ_ij R[i, j] G[i, j], in double: G[i, j] = Σ x[., i, .] x[., j, .] over the valid
// positions, so x[b, t, i, d] enters G[i, j] and G[j, i] (twice G[i, i]) with x[b, t, j, d]:
//   dx[b, t, i, d] = Σ_j (R[i, j] + R[j, i]) · x[b, t, j, d] for t < len_b, 0 on padding.
std::vector<double> head_gram_grad_ref(const Tensor& x, const std::vector<int32_t>& lengths, const Tensor& R) {
  const int64_t B = x.dim(0), T = x.dim(1), H = x.dim(2), D = x.dim(3);
  const float *xv = x.data<float>(), *rv = R.data<float>();
  std::vector<double> dx(static_cast<size_t>(x.numel()), 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < (lengths.empty() ? T : lengths[b]); ++t)
      for (int64_t i = 0; i < H; ++i)
        for (int64_t j = 0; j < H; ++j)
          for (int64_t d = 0; d < D; ++d)
            dx[((b * T + t) * H + i) * D + d] +=
                (double(rv[i * H + j]) + rv[j * H + i]) * xv[((b * T + t) * H + j) * D + d];
  return dx;
}
} // namespace

TEST_CASE("op: head_gram equals the Gram matrix of the flattened valid features, and its gradient") {
  const Shape shape{3, 7, 4, 5};
  const Tensor x = random_tensor(shape, 6);
  const Tensor lengths = ids_tensor({3}, {7, 2, 0});
  const Builder with_lengths = [](Graph& g, const std::vector<ValueId>& in) { return ops::head_gram(g, in[0], in[1]); };
  const Builder without = [](Graph& g, const std::vector<ValueId>& in) { return ops::head_gram(g, in[0]); };
  check_close(evaluate(with_lengths, {x, lengths}), head_gram_ref(x, {7, 2, 0}), 1e-5, 1e-5);
  check_close(evaluate(without, {x}), head_gram_ref(x, {}), 1e-5, 1e-5);
  check_gradients(with_lengths, {shape, {}}, GradCheckOptions{.fixed = {{1, lengths}}});
  check_gradients(without, {shape});
  // Many tokens (several chunks, threaded): still the reference.
  const Tensor big = random_tensor({5, 301, 3, 16}, 7);
  check_close(evaluate(with_lengths, {big, ids_tensor({5}, {301, 17, 150, 0, 299})}),
              head_gram_ref(big, {301, 17, 150, 0, 299}), 1e-5, 1e-4);
  // The backward against its formula, in double (with lengths, so padding gets 0; small and big).
  const Tensor R = random_tensor({4, 4}, 8), R3 = random_tensor({3, 3}, 9);
  check_close(pillars::testing::gradients_of(with_lengths, {x, lengths}, R, {0})[0],
              head_gram_grad_ref(x, {7, 2, 0}, R), 1e-4, 1e-5);
  check_close(pillars::testing::gradients_of(without, {x}, R, {0})[0], head_gram_grad_ref(x, {}, R), 1e-4, 1e-5);
  check_close(pillars::testing::gradients_of(with_lengths, {big, ids_tensor({5}, {301, 17, 150, 0, 299})}, R3, {0})[0],
              head_gram_grad_ref(big, {301, 17, 150, 0, 299}, R3), 1e-4, 1e-5);
  CHECK_THROWS_WITH_AS(evaluate(with_lengths, {x, ids_tensor({3}, {7, 8, 0})}), doctest::Contains("lengths[1] = 8"),
                       Error);
}
