// Core ops (elementwise, reductions, data movement, matmul): forward vs a naive double-precision
// reference, and gradients vs central finite differences (tests/grad_check.h).
#include <doctest/doctest.h>

#include <cmath>

#include "tests/grad_check.h"

using namespace pillars;
using pillars::testing::check_gradients;
using pillars::testing::evaluate;
using pillars::testing::GradCheckOptions;
using pillars::testing::random_tensor;

namespace {

// Forward values must match the reference to a few f32 ulps of the values involved.
void check_close(const std::vector<float>& got, const std::vector<double>& want, double tol = 1e-5) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (tol == 0)
      CHECK(static_cast<double>(got[i]) == want[i]); // data movement: bit-exact
    else
      CHECK(got[i] == doctest::Approx(want[i]).epsilon(tol).scale(1.0));
  }
}

} // namespace

TEST_CASE("op: binary ops broadcast like numpy and their gradients sum back") {
  const Shape shapes[][2] = {{{3, 4}, {3, 4}}, {{2, 3, 4}, {4}}, {{2, 3, 4}, {3, 1}},
                             {{1, 4}, {3, 1}}, {{5}, {}},        {{2, 1, 3}, {2, 4, 1}}};
  for (const auto& s : shapes) {
    CAPTURE(shape_str(s[0]));
    CAPTURE(shape_str(s[1]));
    check_gradients([](Graph& g, const std::vector<ValueId>& in) { return ops::add(g, in[0], in[1]); }, {s[0], s[1]});
    check_gradients([](Graph& g, const std::vector<ValueId>& in) { return ops::sub(g, in[0], in[1]); }, {s[0], s[1]});
    check_gradients([](Graph& g, const std::vector<ValueId>& in) { return ops::mul(g, in[0], in[1]); }, {s[0], s[1]});
    GradCheckOptions away_from_zero;
    away_from_zero.lo = 0.5f;
    away_from_zero.hi = 2.0f;
    check_gradients([](Graph& g, const std::vector<ValueId>& in) { return ops::div(g, in[0], in[1]); }, {s[0], s[1]},
                    away_from_zero);
  }
  // Values: a (2,3) − b (3) broadcast.
  const Tensor a = random_tensor({2, 3}, 1), b = random_tensor({3}, 2);
  const auto y = evaluate([](Graph& g, const std::vector<ValueId>& in) { return ops::sub(g, in[0], in[1]); }, {a, b});
  std::vector<double> want;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) want.push_back(double(a.data<float>()[i * 3 + j]) - b.data<float>()[j]);
  check_close(y, want);
}

TEST_CASE("op: unary functions match libm and their derivatives") {
  struct Case {
    const char* name;
    ValueId (*op)(Graph&, ValueId);
    double (*f)(double);
    float lo, hi;
  };
  const Case cases[] = {
      {"exp", ops::exp, [](double x) { return std::exp(x); }, -2, 2},
      {"log", ops::log, [](double x) { return std::log(x); }, 0.2f, 3},
      {"sqrt", ops::sqrt, [](double x) { return std::sqrt(x); }, 0.2f, 3},
      {"tanh", ops::tanh, [](double x) { return std::tanh(x); }, -2, 2},
      {"relu", ops::relu, [](double x) { return x > 0 ? x : 0.0; }, -2, 2},
      {"leaky_relu", [](Graph& g, ValueId x) { return ops::leaky_relu(g, x, 0.1f); },
       [](double x) { return x > 0 ? x : static_cast<double>(0.1f) * x; }, -2, 2},
      {"leaky_relu slope -0.5", [](Graph& g, ValueId x) { return ops::leaky_relu(g, x, -0.5f); },
       [](double x) { return x > 0 ? x : -0.5 * x; }, -2, 2},
      {"gelu", ops::gelu, [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }, -3, 3},
      {"neg", ops::neg, [](double x) { return -x; }, -2, 2},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    const Tensor x = random_tensor({7, 9}, 3, c.lo, c.hi);
    auto op = c.op;
    const auto y = evaluate([op](Graph& g, const std::vector<ValueId>& in) { return op(g, in[0]); }, {x});
    std::vector<double> want;
    for (float v : x.to_vector()) want.push_back(c.f(v));
    check_close(y, want, 2e-6);
    GradCheckOptions o;
    o.lo = c.lo;
    o.hi = c.hi;
    if (std::string(c.name).find("relu") != std::string::npos) o.fixed[0] = x; // no element within h of the kink
    check_gradients([op](Graph& g, const std::vector<ValueId>& in) { return op(g, in[0]); }, {{7, 9}}, o);
  }
  check_gradients([](Graph& g, const std::vector<ValueId>& in) { return ops::scale(g, in[0], -2.5f); }, {{4, 5}});
  check_gradients([](Graph& g, const std::vector<ValueId>& in) { return ops::add_scalar(g, in[0], 3.0f); }, {{4, 5}});
}

TEST_CASE("op: sum / mean / max over every axis") {
  const Tensor x = random_tensor({3, 4, 5}, 4);
  // For max's gradient: 60 distinct values 0.05 apart (> 2h with h = 1e-2), in a scrambled order.
  Tensor separated = Tensor::empty({3, 4, 5});
  for (int i = 0; i < 60; ++i) separated.data<float>()[i] = -1.5f + 0.05f * static_cast<float>((i * 37) % 60);
  for (int axis = 0; axis < 3; ++axis) {
    CAPTURE(axis);
    for (int kind = 0; kind < 3; ++kind) {
      auto build = [axis, kind](Graph& g, const std::vector<ValueId>& in) {
        return kind == 0   ? ops::sum(g, in[0], axis)
               : kind == 1 ? ops::mean(g, in[0], axis, true)
                           : ops::max(g, in[0], axis);
      };
      const auto y = evaluate(build, {x});
      // Reference in double.
      const Shape s = x.shape();
      std::vector<double> want;
      int64_t outer = 1, inner = 1;
      for (int i = 0; i < axis; ++i) outer *= s[i];
      for (int i = axis + 1; i < 3; ++i) inner *= s[i];
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          double acc = kind == 2 ? -1e30 : 0.0;
          for (int64_t k = 0; k < s[axis]; ++k) {
            const double v = x.data<float>()[(o * s[axis] + k) * inner + i];
            acc = kind == 2 ? std::max(acc, v) : acc + v;
          }
          want.push_back(kind == 1 ? acc / s[axis] : acc);
        }
      check_close(y, want);
      GradCheckOptions o{.seed = 4};
      if (kind == 2) o.fixed[0] = separated; // max is not differentiable at ties: keep values 2h+ apart
      check_gradients(build, {{3, 4, 5}}, o);
    }
  }
}

TEST_CASE("op: permute, transpose, slice, concat, reshape move data exactly") {
  const Tensor x = random_tensor({2, 3, 4}, 5);
  const auto p = evaluate(
      [](Graph& g, const std::vector<ValueId>& in) {
        return ops::permute(g, in[0], {2, 0, 1});
      },
      {x});
  std::vector<double> want;
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) want.push_back(x.data<float>()[(i * 3 + j) * 4 + k]);
  check_close(p, want, 0);
  const auto s = evaluate([](Graph& g, const std::vector<ValueId>& in) { return ops::slice(g, in[0], 1, 1, 3); }, {x});
  want.clear();
  for (int i = 0; i < 2; ++i)
    for (int j = 1; j < 3; ++j)
      for (int k = 0; k < 4; ++k) want.push_back(x.data<float>()[(i * 3 + j) * 4 + k]);
  check_close(s, want, 0);

  check_gradients(
      [](Graph& g, const std::vector<ValueId>& in) {
        return ops::permute(g, in[0], {2, 0, 1});
      },
      {{2, 3, 4}});
  check_gradients([](Graph& g, const std::vector<ValueId>& in) { return ops::transpose(g, in[0], -1, -2); },
                  {{2, 3, 4}});
  check_gradients([](Graph& g, const std::vector<ValueId>& in) { return ops::slice(g, in[0], -1, 1, 3); }, {{2, 3, 4}});
  check_gradients([](Graph& g, const std::vector<ValueId>& in) { return ops::pad_slice(g, in[0], 0, 2, 5); }, {{2, 3}});
  check_gradients(
      [](Graph& g, const std::vector<ValueId>& in) {
        return ops::reshape(g, in[0], {4, -1});
      },
      {{2, 3, 4}});
  check_gradients(
      [](Graph& g, const std::vector<ValueId>& in) {
        return ops::concat(g, {in[0], in[1], in[0]}, 1);
      },
      {{2, 3, 4}, {2, 1, 4}});
}

TEST_CASE("op: matmul in every transpose combination, batched and mixed") {
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      CAPTURE(ta);
      CAPTURE(tb);
      const int64_t M = 5, K = 7, N = 3;
      const Shape sa = ta ? Shape{K, M} : Shape{M, K}, sb = tb ? Shape{N, K} : Shape{K, N};
      auto build = [ta, tb](Graph& g, const std::vector<ValueId>& in) { return ops::matmul(g, in[0], in[1], ta, tb); };
      const Tensor a = random_tensor(sa, 6), b = random_tensor(sb, 7);
      const auto y = evaluate(build, {a, b});
      std::vector<double> want;
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          double acc = 0;
          for (int64_t k = 0; k < K; ++k)
            acc += double(a.data<float>()[ta ? k * M + i : i * K + k]) * b.data<float>()[tb ? j * K + k : k * N + j];
          want.push_back(acc);
        }
      check_close(y, want);
      check_gradients(build, {sa, sb});
      // Batched: (2, 3, ·, ·) on both sides.
      Shape ba = sa, bb = sb;
      ba.insert(ba.begin(), {2, 3});
      bb.insert(bb.begin(), {2, 3});
      check_gradients(build, {ba, bb}, GradCheckOptions{.max_elements = 40});
    }
  // Mixed: a batched activation times a shared 2-D weight (how linear layers run), every flag.
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      CAPTURE(ta);
      CAPTURE(tb);
      const Shape sa = ta ? Shape{2, 4, 3} : Shape{2, 3, 4}, sb = tb ? Shape{5, 4} : Shape{4, 5};
      check_gradients(
          [ta, tb](Graph& g, const std::vector<ValueId>& in) { return ops::matmul(g, in[0], in[1], ta, tb); },
          {sa, sb});
    }
  check_gradients([](Graph& g, const std::vector<ValueId>& in) { return ops::linear(g, in[0], in[1], in[2]); },
                  {{2, 3, 4}, {5, 4}, {5}});
}
