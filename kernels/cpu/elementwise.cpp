// Elementwise CPU kernels; see elementwise.h.
//
// Broadcasting is handled by splitting the output into rows of its last axis: each operand's
// last axis is either the full row (stride 1) or a single broadcast element (stride 0), and the
// row offsets come from per-axis strides that are 0 on broadcast axes. The inner loop over a row is
// then a plain vectorizable loop.
#include "kernels/cpu/elementwise.h"

#include <array>
#include <cmath>
#include <cstring>

#include "base/parallel.h"
#include "base/error.h"
#include "kernels/dims.h"

namespace pillars::cpu {

namespace {

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define PILLARS_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define PILLARS_CLONES
#endif

// Kernels run inside training steps, which must not allocate: index arithmetic uses fixed arrays.
constexpr size_t kMaxRank = 8;
using Strides = std::array<int64_t, kMaxRank>;

// Strides (in elements) of `shape` seen as broadcast to `out_shape` (0 on broadcast axes).
Strides broadcast_strides(std::span<const int64_t> shape, std::span<const int64_t> out_shape) {
  const size_t r = out_shape.size(), off = r - shape.size();
  PILLARS_CHECK(r <= kMaxRank, "elementwise kernels support rank <= ", kMaxRank, ", got ", dims_str(out_shape));
  Strides st{};
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    st[i + off] = shape[i] == 1 ? 0 : s;
    s *= shape[i];
  }
  return st;
}

template <BinaryKind K>
inline float apply(float a, float b) {
  if constexpr (K == BinaryKind::add) return a + b;
  if constexpr (K == BinaryKind::sub) return a - b;
  if constexpr (K == BinaryKind::mul) return a * b;
  return a / b;
}

// One output row of length n: a and b advance by sa / sb (1 or 0).
template <BinaryKind K>
PILLARS_CLONES void binary_row(const float* a, int64_t sa, const float* b, int64_t sb, float* out, int64_t n) {
  if (sa == 1 && sb == 1) {
    for (int64_t i = 0; i < n; ++i) out[i] = apply<K>(a[i], b[i]);
  } else if (sa == 1) {
    const float bv = b[0];
    for (int64_t i = 0; i < n; ++i) out[i] = apply<K>(a[i], bv);
  } else if (sb == 1) {
    const float av = a[0];
    for (int64_t i = 0; i < n; ++i) out[i] = apply<K>(av, b[i]);
  } else {
    const float v = apply<K>(a[0], b[0]);
    for (int64_t i = 0; i < n; ++i) out[i] = v;
  }
}

template <BinaryKind K>
void binary_impl(const float* a, std::span<const int64_t> as, const float* b, std::span<const int64_t> bs, float* out,
                 std::span<const int64_t> os) {
  const int64_t total = dims_count(os);
  if (total == 0) return;
  const size_t r = os.size();
  if (r == 0) { // scalars
    out[0] = apply<K>(a[0], b[0]);
    return;
  }
  const int64_t row = r ? os[r - 1] : 1, rows = total / row;
  const Strides sa = broadcast_strides(as, os), sb = broadcast_strides(bs, os);
  const int64_t sa_last = r ? sa[r - 1] : 0, sb_last = r ? sb[r - 1] : 0;
#pragma omp parallel for schedule(static) if (total > kParallelGrain)
  for (int64_t rr = 0; rr < rows; ++rr) {
    // Offsets of this row in a and b from its multi-index over the leading axes.
    int64_t rem = rr, oa = 0, ob = 0;
    for (size_t ax = r - 1; ax-- > 0;) {
      const int64_t idx = rem % os[ax];
      rem /= os[ax];
      oa += idx * sa[ax];
      ob += idx * sb[ax];
    }
    binary_row<K>(a + oa, sa_last, b + ob, sb_last, out + rr * row, row);
  }
}

inline float gelu_f(float x) { return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f)); }
inline float gelu_grad_f(float x) {
  const float cdf = 0.5f * (1.0f + std::erf(x * 0.70710678118654752f));
  const float pdf = 0.39894228040143268f * std::exp(-0.5f * x * x);
  return cdf + x * pdf;
}

PILLARS_CLONES void scale_loop(const float* x, float* y, int64_t n, float s) {
#pragma omp parallel for simd schedule(static) if (n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) y[i] = s * x[i];
}
PILLARS_CLONES void add_scalar_loop(const float* x, float* y, int64_t n, float c) {
#pragma omp parallel for simd schedule(static) if (n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] + c;
}
PILLARS_CLONES void relu_loop(const float* x, float* y, int64_t n) {
#pragma omp parallel for simd schedule(static) if (n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
PILLARS_CLONES void relu_backward_loop(const float* dy, const float* x, float* dx, int64_t n) {
#pragma omp parallel for simd schedule(static) if (n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) dx[i] = x[i] > 0.0f ? dy[i] : 0.0f;
}
template <class F>
void map_loop(const float* x, float* y, int64_t n, F f) {
#pragma omp parallel for schedule(static) if (n > kParallelGrain / 8)
  for (int64_t i = 0; i < n; ++i) y[i] = f(x[i]);
}

} // namespace

void binary_broadcast(const BinaryArgs& args, const float* a, const float* b, float* out) {
  const std::span<const int64_t> as = args.a_dims, bs = args.b_dims, os = args.out_dims;
  switch (args.kind) {
    case BinaryKind::add:
      return binary_impl<BinaryKind::add>(a, as, b, bs, out, os);
    case BinaryKind::sub:
      return binary_impl<BinaryKind::sub>(a, as, b, bs, out, os);
    case BinaryKind::mul:
      return binary_impl<BinaryKind::mul>(a, as, b, bs, out, os);
    case BinaryKind::div:
      return binary_impl<BinaryKind::div>(a, as, b, bs, out, os);
  }
}

void unary(const UnaryArgs& a, const float* x, float* y) {
  const int64_t n = a.n;
  const float s = a.s, c = a.c;
  switch (a.kind) {
    case UnaryKind::scale:
      return scale_loop(x, y, n, s);
    case UnaryKind::add_scalar:
      return add_scalar_loop(x, y, n, c);
    case UnaryKind::relu:
      return relu_loop(x, y, n);
    case UnaryKind::exp:
      return map_loop(x, y, n, [](float v) { return std::exp(v); });
    case UnaryKind::log:
      return map_loop(x, y, n, [](float v) { return std::log(v); });
    case UnaryKind::sqrt:
      return map_loop(x, y, n, [](float v) { return std::sqrt(v); });
    case UnaryKind::tanh:
      return map_loop(x, y, n, [](float v) { return std::tanh(v); });
    case UnaryKind::gelu:
      return map_loop(x, y, n, gelu_f);
  }
}

void activation_backward(const ActivationBackwardArgs& a, const float* dy, const float* x, float* dx) {
  const int64_t n = a.n;
  if (a.kind == UnaryKind::relu) return relu_backward_loop(dy, x, dx, n);
#pragma omp parallel for schedule(static) if (n > kParallelGrain / 8)
  for (int64_t i = 0; i < n; ++i) dx[i] = dy[i] * gelu_grad_f(x[i]);
}

PILLARS_CLONES void leaky_relu(const LeakyReluArgs& a, const float* x, float* y) {
  const int64_t n = a.n;
  const float slope = a.slope;
#pragma omp parallel for simd schedule(static) if (n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : slope * x[i];
}

PILLARS_CLONES void leaky_relu_backward(const LeakyReluArgs& a, const float* dy, const float* x, float* dx) {
  const int64_t n = a.n;
  const float slope = a.slope;
#pragma omp parallel for simd schedule(static) if (n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) dx[i] = x[i] > 0.0f ? dy[i] : slope * dy[i];
}

PILLARS_CLONES void bias_activation(const BiasActivationArgs& a, float* z, const float* bias, float* y) {
  const UnaryKind kind = a.kind;
  const int64_t rows = a.rows, n = a.n;
  PILLARS_CHECK(kind == UnaryKind::relu || kind == UnaryKind::gelu, "bias_activation: relu or gelu only");
  const bool relu = kind == UnaryKind::relu;
#pragma omp parallel for schedule(static) if (rows * n > (relu ? kParallelGrain : kParallelGrain / 8))
  for (int64_t r = 0; r < rows; ++r) {
    float* zr = z + r * n;
    float* yr = y + r * n;
    // One row at a time: the bias add and the activation touch the row while it is in cache.
    binary_row<BinaryKind::add>(zr, 1, bias, 1, zr, n);
    if (relu)
      for (int64_t j = 0; j < n; ++j) yr[j] = zr[j] > 0.0f ? zr[j] : 0.0f;
    else
      for (int64_t j = 0; j < n; ++j) yr[j] = gelu_f(zr[j]);
  }
}

void sum_to(const SumToArgs& a, const float* x, float* out) {
  const std::span<const int64_t> xs = a.x_dims, os = a.y_dims;
  const int64_t total = dims_count(xs), out_n = dims_count(os);
  std::memset(out, 0, static_cast<size_t>(out_n) * sizeof(float));
  if (total == 0) return;
  // Fast path: out is x's trailing block (a bias gradient): add up rows of length out_n.
  const size_t off = xs.size() - os.size();
  bool trailing = true;
  for (size_t i = 0; i < os.size(); ++i) trailing = trailing && os[i] == xs[i + off];
  if (trailing) {
    const int64_t rows = total / (out_n ? out_n : 1);
#pragma omp parallel for schedule(static) if (total > kParallelGrain)
    for (int64_t j0 = 0; j0 < out_n; j0 += 64) { // threads own disjoint column blocks
      const int64_t j1 = std::min(out_n, j0 + 64);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = j0; j < j1; ++j) out[j] += x[r * out_n + j];
    }
    return;
  }
  // General case: walk x and add each element to its (broadcast) place in out.
  const Strides so = broadcast_strides(os, xs);
  const size_t r = xs.size();
  Strides idx{};
  int64_t o = 0;
  for (int64_t i = 0; i < total; ++i) {
    out[o] += x[i];
    for (size_t ax = r; ax-- > 0;) { // odometer increment
      ++idx[ax];
      o += so[ax];
      if (idx[ax] < xs[ax]) break;
      o -= so[ax] * idx[ax];
      idx[ax] = 0;
    }
  }
}

} // namespace pillars::cpu
