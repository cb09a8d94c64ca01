// The GHT graph ops (ght/ops.h): values against float64 computations written here from the heads'
// explicit flattened feature maps (centroids as means of member vectors, cosines computed
// directly), gradients against finite differences (tests/grad_check.h) and, for the GCT loss, against
// a float64 central difference of that explicit reference.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "base/error.h"
#include "engine/executor.h"
#include "engine/ops.h"
#include "ght/kmeans.h"
#include "ght/ops.h"
#include "tests/grad_check.h"

using namespace pillars;
using pillars::testing::check_gradients;
using pillars::testing::evaluate;
using pillars::testing::GradCheckOptions;
using pillars::testing::random_tensor;

namespace {

using Builder = pillars::testing::GraphBuilder;
using Vectors = std::vector<std::vector<double>>;

Tensor i32(const Shape& s, const std::vector<int32_t>& v) { return Tensor::from_i32(s, v); }

// e_i: head i of x (B, T, H, D) flattened over the valid (b, t < len_b, d), in double.
Vectors flatten_heads(const Tensor& x, const std::vector<int32_t>& lengths) {
  const int64_t B = x.dim(0), T = x.dim(1), H = x.dim(2), D = x.dim(3);
  Vectors e(static_cast<size_t>(H));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < (lengths.empty() ? T : lengths[static_cast<size_t>(b)]); ++t)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t d = 0; d < D; ++d)
          e[static_cast<size_t>(h)].push_back(x.data<float>()[((b * T + t) * H + h) * D + d]);
  return e;
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  return std::inner_product(a.begin(), a.end(), b.begin(), 0.0);
}

// The cosine as the ops define it: a·b / sqrt(max(‖a‖²‖b‖², eps²)).
double cosine(const std::vector<double>& a, const std::vector<double>& b) {
  return dot(a, b) / std::sqrt(std::max(dot(a, a) * dot(b, b), 1e-16));
}

std::vector<double> mean_of(const Vectors& e, const std::vector<int>& labels, int c) {
  std::vector<double> mu;
  int n = 0;
  for (size_t i = 0; i < e.size(); ++i) {
    if (labels[i] != c) continue;
    if (mu.empty()) mu.assign(e[i].size(), 0.0);
    for (size_t d = 0; d < mu.size(); ++d) mu[d] += e[i][d];
    ++n;
  }
  for (double& v : mu) v /= n;
  return mu; // empty when the group has no members
}

// docs/METHOD.md §4, Eq. 4(B) from explicit vectors: R = −α·hom + β·div.
struct GctRef {
  double R, hom, div;
};
GctRef gct_reference(const Vectors& e, const std::vector<int>& labels, int C, double alpha, double beta) {
  std::vector<std::vector<double>> mu;
  for (int c = 0; c < C; ++c) mu.push_back(mean_of(e, labels, c));
  double hom = 0, div = 0;
  for (size_t i = 0; i < e.size(); ++i)
    hom += cosine(e[i], mu[static_cast<size_t>(labels[i])]) / static_cast<double>(e.size());
  int pairs = 0;
  for (int a = 0; a < C; ++a)
    for (int b = a + 1; b < C; ++b)
      if (!mu[static_cast<size_t>(a)].empty() && !mu[static_cast<size_t>(b)].empty())
        div += cosine(mu[static_cast<size_t>(a)], mu[static_cast<size_t>(b)]), ++pairs;
  if (pairs) div /= pairs;
  return {-alpha * hom + beta * div, hom, div};
}

std::vector<double> gram_of(const Vectors& e) {
  std::vector<double> G;
  for (const auto& a : e)
    for (const auto& b : e) G.push_back(dot(a, b));
  return G;
}

Tensor to_f32(const Shape& s, const std::vector<double>& v) {
  return Tensor::from(s, std::vector<float>(v.begin(), v.end()));
}
std::vector<int> to_int(const std::vector<float>& v) { return std::vector<int>(v.begin(), v.end()); }
std::vector<int32_t> to_i32(const std::vector<int>& v) { return std::vector<int32_t>(v.begin(), v.end()); }

bool close(double got, double want, double rel, double abs) {
  return std::fabs(got - want) <= abs + rel * std::fabs(want);
}

// x (B, T, H, D) → head_gram → gct_metric_loss with fixed labels; `which` picks the output.
Builder gct_of_x(int C, float alpha, float beta, int which = 0) {
  return [=](Graph& g, const std::vector<ValueId>& in) {
    const ght::GctTerms t = ght::gct_metric_loss(g, ops::head_gram(g, in[0], in[1]), in[2], C, alpha, beta);
    return which == 0 ? t.loss : which == 1 ? t.homogenization : t.diversification;
  };
}

} // namespace

// ---- huds_cluster --------------------------------------------------------------------------------

TEST_CASE("ght op: huds_cluster gives kmeans_gram of its input with seed plus the run seed") {
  const Tensor x = random_tensor({2, 5, 8, 3}, 17);
  Graph g;
  const ValueId xi = g.input("x", x.shape());
  const ValueId G = ops::head_gram(g, xi);
  const ValueId labels = ght::huds_cluster(g, G, 3, 1000);
  g.mark_output(G);
  g.mark_output(labels);
  CHECK(g.dtype(labels) == DType::i32);
  CHECK(g.shape(labels) == Shape{8});
  Executor ex(g);
  ex.bind(xi, x);
  int differs_from_seed_alone = 0;
  for (uint64_t run_seed : {0ull, 1ull, 2ull, 3ull, 4ull, 5ull, 6ull, 7ull, 8ull, 9ull, 123456789ull}) {
    ex.set_seed(run_seed);
    ex.run();
    const std::vector<float> Gf = ex.value(G).to_vector();
    const std::vector<double> Gd(Gf.begin(), Gf.end());
    const std::vector<int> got = to_int(ex.value(labels).to_vector());
    CHECK(got == ght::kmeans_gram(Gd, 8, 3, 1000 + run_seed).labels);
    differs_from_seed_alone += got != ght::kmeans_gram(Gd, 8, 3, 1000).labels ? 1 : 0;
  }
  CHECK(differs_from_seed_alone > 0); // the run seed really reaches the clustering
  Graph bad;
  CHECK_THROWS_AS(ght::huds_cluster(bad, bad.input("G", {4, 4}), 5, 0), Error);
  CHECK_THROWS_AS(ght::huds_cluster(bad, bad.input("G", {4, 3}), 2, 0), Error);
}

// ---- gct_metric_loss -----------------------------------------------------------------------------

TEST_CASE("ght op: gct_metric_loss equals a float64 computation from the explicit vectors") {
  const Shape shape{3, 6, 6, 4};
  Tensor x = random_tensor(shape, 31);
  const std::vector<int32_t> lengths{6, 2, 4};
  const Vectors e = flatten_heads(x, lengths);
  struct Case {
    int C;
    std::vector<int> labels;
  };
  const std::vector<Case> cases{{2, {0, 1, 1, 0, 1, 0}},
                                {3, {0, 2, 2, 0, 2, 0}}, // group 1 empty: one pair
                                {4, {0, 1, 2, 3, 1, 0}},
                                {1, {0, 0, 0, 0, 0, 0}},  // one group: no diversification term
                                {6, {0, 1, 2, 3, 4, 5}}}; // C = k: every head its own center
  for (const Case& c : cases)
    for (auto [alpha, beta] : {std::pair{0.7f, 0.5f}, std::pair{0.0f, 1.0f}, std::pair{1.0f, 0.0f}}) {
      const GctRef want = gct_reference(e, c.labels, c.C, alpha, beta);
      const std::vector<Tensor> in{x, i32({3}, lengths), i32({6}, to_i32(c.labels))};
      INFO("C ", c.C, ", alpha ", alpha, ", beta ", beta);
      CHECK(close(evaluate(gct_of_x(c.C, alpha, beta, 0), in)[0], want.R, 1e-5, 1e-6));
      CHECK(close(evaluate(gct_of_x(c.C, alpha, beta, 1), in)[0], want.hom, 1e-5, 1e-6));
      CHECK(close(evaluate(gct_of_x(c.C, alpha, beta, 2), in)[0], want.div, 1e-5, 1e-6));
    }
  // C = k: each head is its centroid, hom = 1 exactly in the reference; div is the mean pairwise cosine.
  CHECK(gct_reference(e, {0, 1, 2, 3, 4, 5}, 6, 1, 0).hom == doctest::Approx(1.0).epsilon(1e-12));

  // A zero head (its map all 0) has cosine 0, not NaN.
  for (int64_t t = 0; t < 3 * 6; ++t)
    for (int64_t d = 0; d < 4; ++d) x.data<float>()[(t * 6 + 2) * 4 + d] = 0.0f;
  const std::vector<Tensor> in{x, i32({3}, lengths), i32({6}, {0, 1, 1, 0, 1, 0})};
  const GctRef want = gct_reference(flatten_heads(x, lengths), {0, 1, 1, 0, 1, 0}, 2, 0.7, 0.5);
  CHECK(close(evaluate(gct_of_x(2, 0.7f, 0.5f), in)[0], want.R, 1e-5, 1e-6));
  const std::vector<float> dx =
      pillars::testing::gradients_of(gct_of_x(2, 0.7f, 0.5f), in, Tensor::full({}, 1.0f), {0})[0];
  CHECK(std::all_of(dx.begin(), dx.end(), [](float v) { return std::isfinite(v); }));

  // Fully padded batch: G = 0, R = 0 and a zero gradient, no NaN.
  const std::vector<Tensor> padded{x, i32({3}, {0, 0, 0}), i32({6}, {0, 1, 1, 0, 1, 0})};
  CHECK(evaluate(gct_of_x(2, 0.7f, 0.5f), padded)[0] == 0.0f);
  const std::vector<float> d0 =
      pillars::testing::gradients_of(gct_of_x(2, 0.7f, 0.5f), padded, Tensor::full({}, 1.0f), {0})[0];
  CHECK(std::all_of(d0.begin(), d0.end(), [](float v) { return v == 0.0f; }));

  // A label outside [0, C) is an error naming it.
  CHECK_THROWS_WITH_AS(evaluate(gct_of_x(2, 0.7f, 0.5f), {x, i32({3}, lengths), i32({6}, {0, 1, 2, 0, 1, 0})}),
                       doctest::Contains("labels[2] = 2"), Error);
}

TEST_CASE("ght op: gct_metric_loss gradient through head_gram equals finite differences, labels fixed") {
  const Shape shape{2, 5, 6, 3};
  const Tensor lengths = i32({2}, {5, 3});
  const std::vector<std::pair<int, std::vector<int32_t>>> cases{{2, {0, 1, 1, 0, 1, 0}},
                                                                {3, {0, 2, 2, 0, 2, 1}},
                                                                {3, {0, 2, 2, 0, 2, 0}},
                                                                {1, {0, 0, 0, 0, 0, 0}},
                                                                {6, {0, 1, 2, 3, 4, 5}}};
  for (const auto& [C, labels] : cases) {
    INFO("C ", C);
    const GradCheckOptions o{.seed = static_cast<uint32_t>(C), .fixed = {{1, lengths}, {2, i32({6}, labels)}}};
    for (int which : {0, 1, 2}) check_gradients(gct_of_x(C, 0.7f, 0.5f, which), {shape, {2}, {6}}, o);
  }
}

TEST_CASE("ght op: gct_metric_loss gradient equals a float64 central difference of the explicit reference") {
  // dR/dx from autodiff (f32 path: head_gram → gct_metric_loss → dG → head_gram_backward) against
  // (R(x + h) − R(x − h)) / 2h of gct_reference on the flattened heads, all in double, h = 1e-6.
  const Shape shape{2, 4, 5, 3};
  const Tensor x = random_tensor(shape, 41);
  const std::vector<int32_t> lengths{4, 3};
  const std::vector<int> labels{0, 2, 0, 1, 2};
  const float alpha = 0.7f, beta = 0.5f;
  const std::vector<float> analytic = pillars::testing::gradients_of(
      gct_of_x(3, alpha, beta), {x, i32({2}, lengths), i32({5}, to_i32(labels))}, Tensor::full({}, 1.0f), {0})[0];
  std::vector<double> numeric(analytic.size(), 0.0);
  double largest = 0;
  for (size_t k = 0; k < numeric.size(); ++k) {
    // Perturb in double: flatten, then nudge the one component x[k] maps to (if it is valid).
    const int64_t T = 4, H = 5, D = 3, b = static_cast<int64_t>(k) / (T * H * D),
                  t = (static_cast<int64_t>(k) / (H * D)) % T;
    const int64_t h_ = (static_cast<int64_t>(k) / D) % H, d = static_cast<int64_t>(k) % D;
    if (t >= lengths[static_cast<size_t>(b)]) continue; // padding: no effect
    const size_t component = static_cast<size_t>(((b == 0 ? 0 : lengths[0]) + t) * D + d);
    Vectors plus = flatten_heads(x, lengths), minus = plus;
    const double h = 1e-6;
    plus[static_cast<size_t>(h_)][component] += h, minus[static_cast<size_t>(h_)][component] -= h;
    numeric[k] =
        (gct_reference(plus, labels, 3, alpha, beta).R - gct_reference(minus, labels, 3, alpha, beta).R) / (2 * h);
    largest = std::max(largest, std::fabs(numeric[k]));
  }
  REQUIRE(largest > 0);
  for (size_t k = 0; k < numeric.size(); ++k) {
    INFO("element ", k);
    CHECK(close(analytic[k], numeric[k], 2e-4, 2e-5 * largest));
  }
}

TEST_CASE("ght op: gct_metric_loss gradient w.r.t. each entry of G, the formula as written") {
  // G = G0 + δ with G0 a valid Gram matrix and δ a small f32 input: check_gradients perturbs one
  // entry δ_ij at a time, so this checks ∂R/∂G_ij entrywise (dG is not symmetric).
  const Vectors e = flatten_heads(random_tensor({2, 4, 6, 5}, 51), {});
  const Tensor G0 = to_f32({6, 6}, gram_of(e));
  for (auto [C, labels] :
       {std::pair{2, std::vector<int32_t>{0, 1, 1, 0, 1, 0}}, std::pair{3, std::vector<int32_t>{1, 1, 0, 2, 0, 1}}}) {
    INFO("C ", C);
    for (int which : {0, 1, 2}) {
      const Builder f = [&, C = C, which](Graph& g, const std::vector<ValueId>& in) {
        const ght::GctTerms t = ght::gct_metric_loss(g, ops::add(g, g.constant(G0), in[0]), in[1], C, 0.7f, 0.5f);
        return which == 0 ? t.loss : which == 1 ? t.homogenization : t.diversification;
      };
      check_gradients(f, {{6, 6}, {6}}, GradCheckOptions{.lo = -1e-3f, .hi = 1e-3f, .fixed = {{1, i32({6}, labels)}}});
    }
  }
}

TEST_CASE("ght op: GCT with HUDS inside the checked function, well-separated heads") {
  // x = base + δ: heads {0, 3, 4} share one pattern, {1, 2, 5} another, each with a small own part,
  // so the labels cannot flip under the ±h steps of the check.
  const Shape shape{2, 6, 6, 4};
  const Tensor p0 = random_tensor({2, 6, 4}, 61), p1 = random_tensor({2, 6, 4}, 62), own = random_tensor(shape, 63);
  const int group[6] = {0, 1, 1, 0, 0, 1};
  Tensor base = Tensor::empty(shape);
  for (int64_t t = 0; t < 12; ++t)
    for (int64_t h = 0; h < 6; ++h)
      for (int64_t d = 0; d < 4; ++d)
        base.data<float>()[(t * 6 + h) * 4 + d] =
            (group[h] == 0 ? p0 : p1).data<float>()[t * 4 + d] + 0.25f * own.data<float>()[(t * 6 + h) * 4 + d];
  const Tensor lengths = i32({2}, {6, 4});
  const Builder labels_of = [&](Graph& g, const std::vector<ValueId>& in) {
    return ght::huds_cluster(g, ops::head_gram(g, ops::add(g, in[0], g.constant(base)), in[1]), 2, 7);
  };
  const Builder loss = [&](Graph& g, const std::vector<ValueId>& in) {
    const ValueId G = ops::head_gram(g, ops::add(g, in[0], g.constant(base)), in[1]);
    return ght::gct_metric_loss(g, G, ght::huds_cluster(g, G, 2, 7), 2, 0.7f, 0.5f).loss;
  };
  CHECK(to_int(evaluate(labels_of, {Tensor::zeros(shape), lengths})) == std::vector<int>{0, 1, 1, 0, 0, 1});
  check_gradients(loss, {shape, {2}}, GradCheckOptions{.lo = -0.05f, .hi = 0.05f, .fixed = {{1, lengths}}});
}

// ---- head_mean -----------------------------------------------------------------------------------

TEST_CASE("ght op: head_mean averages the valid tokens only, and its gradient") {
  const Shape shape{3, 5, 4, 3};
  Tensor x = random_tensor(shape, 71);
  const std::vector<int32_t> lengths{5, 0, 3};
  const Builder with = [](Graph& g, const std::vector<ValueId>& in) { return ght::head_mean(g, in[0], in[1]); };
  const Builder without = [](Graph& g, const std::vector<ValueId>& in) { return ght::head_mean(g, in[0]); };
  for (bool use_lengths : {true, false}) {
    const Vectors e = flatten_heads(x, use_lengths ? lengths : std::vector<int32_t>{});
    const std::vector<float> got = use_lengths ? evaluate(with, {x, i32({3}, lengths)}) : evaluate(without, {x});
    REQUIRE(got.size() == 12);
    for (size_t h = 0; h < 4; ++h)
      for (size_t d = 0; d < 3; ++d) {
        double sum = 0;
        for (size_t k = d; k < e[h].size(); k += 3) sum += e[h][k];
        CHECK(close(got[h * 3 + d], sum / static_cast<double>(e[h].size() / 3), 1e-6, 1e-7));
      }
  }
  // Padding is left out: changing it changes nothing, bit for bit.
  const std::vector<float> before = evaluate(with, {x, i32({3}, lengths)});
  Tensor noisy = x.clone();
  for (int64_t i = 0; i < noisy.numel(); ++i) {
    const int64_t b = i / (5 * 12), t = (i / 12) % 5;
    if (t >= lengths[static_cast<size_t>(b)]) noisy.data<float>()[i] = 1e6f;
  }
  CHECK(evaluate(with, {noisy, i32({3}, lengths)}) == before);
  // No valid token: 0.
  const std::vector<float> none = evaluate(with, {x, i32({3}, {0, 0, 0})});
  CHECK(std::all_of(none.begin(), none.end(), [](float v) { return v == 0.0f; }));
  // Gradients: dx = dy / N on valid tokens, 0 on padding (exactly).
  check_gradients(with, {shape, {3}}, GradCheckOptions{.fixed = {{1, i32({3}, lengths)}}});
  check_gradients(without, {shape});
  const Tensor R = random_tensor({4, 3}, 72);
  const std::vector<float> dx = pillars::testing::gradients_of(with, {x, i32({3}, lengths)}, R, {0})[0];
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t b = i / (5 * 12), t = (i / 12) % 5, hd = i % 12;
    const float want = t < lengths[static_cast<size_t>(b)] ? R.data<float>()[hd] * (1.0f / 8.0f) : 0.0f;
    CHECK(dx[static_cast<size_t>(i)] == doctest::Approx(want).epsilon(1e-6));
  }
}

// ---- gct_classification_loss ---------------------------------------------------------------------

namespace {
// (1/k) Σ_i [−α·log p_i(y_i) − β/(C−1)·Σ_{c≠y_i} log(1 − p_i(c))] in double, straight from the
// definition: p by exponentiating and normalizing, log(1 − p) as written (β term 0 when C = 1).
double classification_reference(const Tensor& z, const std::vector<int32_t>& y, double alpha, double beta) {
  const int64_t k = z.dim(0), C = z.dim(1);
  double R = 0;
  for (int64_t i = 0; i < k; ++i) {
    std::vector<double> p(static_cast<size_t>(C));
    double sum = 0;
    for (int64_t c = 0; c < C; ++c) sum += p[static_cast<size_t>(c)] = std::exp(double(z.data<float>()[i * C + c]));
    for (double& v : p) v /= sum;
    const int32_t own = y[static_cast<size_t>(i)];
    R -= alpha * std::log(p[static_cast<size_t>(own)]);
    for (int64_t c = 0; c < C; ++c)
      if (c != own) R -= beta / static_cast<double>(C - 1) * std::log(1.0 - p[static_cast<size_t>(c)]);
  }
  return R / static_cast<double>(k);
}

// The mean cross-entropy −(1/k) Σ_i log p_i(y_i) in double.
double cross_entropy_reference(const Tensor& z, const std::vector<int32_t>& y) {
  return classification_reference(z, y, 1.0, 0.0);
}
} // namespace

TEST_CASE("ght op: gct_classification_loss equals a float64 reference, and its gradient") {
  const Builder f = [](Graph& g, const std::vector<ValueId>& in) {
    return ght::gct_classification_loss(g, in[0], in[1], 0.7f, 0.5f);
  };
  for (int C : {2, 3, 5}) {
    const Tensor z = random_tensor({7, C}, static_cast<uint32_t>(80 + C), -2.0f, 2.0f);
    std::vector<int32_t> y(7);
    for (int i = 0; i < 7; ++i) y[static_cast<size_t>(i)] = (i * 3 + 1) % C;
    INFO("C ", C);
    const double want = classification_reference(z, y, 0.7, 0.5), ce = cross_entropy_reference(z, y);
    CHECK(close(evaluate(f, {z, i32({7}, y)})[0], want, 1e-5, 1e-6));
    // C = 2: the only other group's 1 − p is p of the own group, so R = (α+β)·CE. C > 2: not so.
    if (C == 2)
      CHECK(want == doctest::Approx(1.2 * ce).epsilon(1e-12));
    else
      CHECK(std::fabs(want - 1.2 * ce) > 0.05 * want);
    check_gradients(f, {{7, C}, {7}}, GradCheckOptions{.lo = -2.0f, .hi = 2.0f, .fixed = {{1, i32({7}, y)}}});
  }
  // α only is the mean cross-entropy (ops::cross_entropy); one group: CE = 0 and no other group, R = 0.
  const Tensor z = random_tensor({7, 4}, 90, -2.0f, 2.0f);
  const Tensor y = i32({7}, {0, 3, 1, 1, 2, 0, 3});
  const Builder ce_only = [](Graph& g, const std::vector<ValueId>& in) {
    return ght::gct_classification_loss(g, in[0], in[1], 1.0f, 0.0f);
  };
  const Builder ce = [](Graph& g, const std::vector<ValueId>& in) { return ops::cross_entropy(g, in[0], in[1]); };
  CHECK(evaluate(ce_only, {z, y})[0] == doctest::Approx(evaluate(ce, {z, y})[0]).epsilon(1e-6));
  const Tensor z1 = random_tensor({5, 1}, 91);
  CHECK(evaluate(f, {z1, i32({5}, {0, 0, 0, 0, 0})})[0] == 0.0f);
  const std::vector<float> d1 =
      pillars::testing::gradients_of(f, {z1, i32({5}, {0, 0, 0, 0, 0})}, Tensor::full({}, 1.0f), {0})[0];
  CHECK(std::all_of(d1.begin(), d1.end(), [](float v) { return v == 0.0f; }));
  CHECK_THROWS_WITH_AS(evaluate(f, {z, i32({7}, {0, 4, 1, 1, 2, 0, 3})}), doctest::Contains("labels[1] = 4"), Error);
}

TEST_CASE("ght op: gct_classification_loss of one head falls as its own group's margin grows") {
  // One head, own group 0, logits (m, rest...): raising the margin m must lower R at every step,
  // towards 0 (both terms are −log of a probability that tends to 1). The literal reading of
  // Eq. 4(A), −β/(C−1)·Σ log p_v, would turn back up once p_own passes α/(α+β).
  const Builder f = [](Graph& g, const std::vector<ValueId>& in) {
    return ght::gct_classification_loss(g, in[0], in[1], 0.5f, 0.7f);
  };
  for (const std::vector<float>& rest : {std::vector<float>{0.0f}, {0.3f, -0.5f}, {1.0f, 0.0f, -2.0f, 0.5f}}) {
    const int C = static_cast<int>(rest.size()) + 1;
    INFO("C ", C);
    double previous = std::numeric_limits<double>::infinity();
    for (float m = -4.0f; m <= 12.0f; m += 0.5f) {
      std::vector<float> logits{m};
      logits.insert(logits.end(), rest.begin(), rest.end());
      const Tensor z = Tensor::from({1, C}, logits);
      const double R = evaluate(f, {z, i32({1}, {0})})[0];
      INFO("margin ", m);
      CHECK(close(R, classification_reference(z, {0}, 0.5, 0.7), 1e-5, 1e-6));
      CHECK(R < previous);
      CHECK(R > 0.0);
      previous = R;
    }
    CHECK(previous < 1e-3);
  }
  // Stable where a probability of another group is 1 up to f32 (log(1 − p_v) from log-sum-exps).
  const Tensor far = Tensor::from({1, 3}, {0.0f, 60.0f, 0.0f});
  const double R = evaluate(f, {far, i32({1}, {0})})[0];
  CHECK(std::isfinite(R));
  // −log p_0 ≈ 60, −log(1 − p_1) = lse − log(e⁰ + e⁰) ≈ 60 − log 2, −log(1 − p_2) ≈ e⁻⁶⁰.
  CHECK(R == doctest::Approx(0.5 * 60.0 + 0.7 / 2 * (60.0 - std::log(2.0))).epsilon(1e-5));
  const std::vector<float> d = pillars::testing::gradients_of(f, {far, i32({1}, {0})}, Tensor::full({}, 1.0f), {0})[0];
  CHECK(std::all_of(d.begin(), d.end(), [](float v) { return std::isfinite(v); }));
}

TEST_CASE("ght op: Eq. 4A end to end, head_mean then a linear classifier then the loss, gradients") {
  // x (B, T, H, D) → head_mean (H, D) → linear W (C, D), b (C) → logits (H, C) → loss.
  const Shape shape{2, 4, 5, 3};
  const Tensor lengths = i32({2}, {4, 2}), labels = i32({5}, {0, 1, 2, 1, 0});
  const Builder f = [](Graph& g, const std::vector<ValueId>& in) {
    const ValueId logits = ops::linear(g, ght::head_mean(g, in[0], in[1]), in[2], in[3]);
    return ght::gct_classification_loss(g, logits, in[4], 0.5f, 0.5f);
  };
  check_gradients(f, {shape, {2}, {3, 3}, {3}, {5}}, GradCheckOptions{.fixed = {{1, lengths}, {4, labels}}});
}

// ---- mean_pairwise_cosine ------------------------------------------------------------------------

TEST_CASE("ght op: mean_pairwise_cosine equals the mean cosine of the flattened maps, and its gradient") {
  const Shape shape{2, 5, 6, 3};
  const Tensor x = random_tensor(shape, 101);
  const std::vector<int32_t> lengths{5, 2};
  const Builder f = [](Graph& g, const std::vector<ValueId>& in) {
    return ght::mean_pairwise_cosine(g, ops::head_gram(g, in[0], in[1]));
  };
  const Vectors e = flatten_heads(x, lengths);
  double want = 0;
  for (size_t i = 0; i < 6; ++i)
    for (size_t j = 0; j < 6; ++j)
      if (i != j) want += cosine(e[i], e[j]) / 30.0;
  CHECK(close(evaluate(f, {x, i32({2}, lengths)})[0], want, 1e-5, 1e-6));
  check_gradients(f, {shape, {2}}, GradCheckOptions{.fixed = {{1, i32({2}, lengths)}}});
  // Entrywise in G (G0 + δ).
  const Tensor G0 = to_f32({6, 6}, gram_of(e));
  const Builder on_g = [&](Graph& g, const std::vector<ValueId>& in) {
    return ght::mean_pairwise_cosine(g, ops::add(g, g.constant(G0), in[0]));
  };
  check_gradients(on_g, {{6, 6}}, GradCheckOptions{.lo = -1e-3f, .hi = 1e-3f});
  // One head: no pair, 0. Identical heads: 1. A zero head: cosine 0 with it, not NaN.
  const Builder plain = [](Graph& g, const std::vector<ValueId>& in) { return ght::mean_pairwise_cosine(g, in[0]); };
  CHECK(evaluate(plain, {Tensor::from({1, 1}, {4.0f})})[0] == 0.0f);
  CHECK(evaluate(plain, {Tensor::full({3, 3}, 2.0f)})[0] == doctest::Approx(1.0f));
  CHECK(evaluate(plain, {Tensor::from({2, 2}, {0.0f, 0.0f, 0.0f, 3.0f})})[0] == 0.0f);
}
