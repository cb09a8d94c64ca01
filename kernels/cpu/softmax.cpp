// Softmax / log-softmax kernels (math in softmax.h).
//
// Two loop shapes, both SIMD along contiguous memory:
//   - inner == 1 (softmax over the last axis, the common case): each row is contiguous; the
//     reductions (max, Σ) are SIMD reductions along the row.
//   - inner > 1: rows are strided, but `inner` neighboring rows are contiguous side by side, so a
//     tile of up to kTile neighboring rows is processed at once, SIMD across the tile, with the
//     per-row statistics in small arrays on the stack.
// Work is split over OpenMP threads by rows (or row tiles) when the tensor is large.
//
// Compiled with -fno-trapping-math (the pragma must precede every include, so that the inlined
// fast_exp/fast_log get it too): under GCC's default -ftrapping-math the AVX2 and SSE2 versions
// leave loops over fast_exp scalar, because GCC will not if-convert its range clamps there (an
// ordered float comparison "may trap"). Pillars never reads floating-point exception flags, so
// nothing is lost; if the build ever adds -fno-trapping-math globally, this line can go.
#pragma GCC optimize("no-trapping-math")
#include "kernels/cpu/softmax.h"

#include <algorithm>
#include <limits>

#include "base/parallel.h"
#include "kernels/cpu/vec_math.h"

namespace pillars::cpu {
namespace {

constexpr int64_t kTile = 64; // strided rows processed together
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// The statistics of one row turned into the three numbers the output formulas need. A row that is
// all −inf has m = −inf and s = 0; shifting by 0 instead keeps every expression NaN-free:
// exp(−inf − 0) = 0, 0 · inv = 0, and −inf − 0 − 0 = −inf.
struct RowStats {
  float shift, inv_sum, log_sum;
};
inline RowStats row_stats(float m, float s) {
  return RowStats{m == kNegInf ? 0.0f : m, s > 0.0f ? 1.0f / s : 0.0f, s > 0.0f ? fast_log(s) : 0.0f};
}

// ---- contiguous rows -----------------------------------------------------------------------------

PILLARS_VEC_INLINE void forward_row_body(const float* x, float* y, int64_t n, bool log) {
  float m = kNegInf;
#pragma omp simd reduction(max : m)
  for (int64_t l = 0; l < n; ++l) m = x[l] > m ? x[l] : m; // (this form vectorizes at -O2; std::max does not)
  const float shift = m == kNegInf ? 0.0f : m;
  float s = 0.0f;
#pragma omp simd reduction(+ : s)
  for (int64_t l = 0; l < n; ++l) {
    y[l] = fast_exp(x[l] - shift);
    s += y[l];
  }
  const RowStats st = row_stats(m, s);
  if (log) {
#pragma omp simd
    for (int64_t l = 0; l < n; ++l) y[l] = x[l] - st.shift - st.log_sum;
  } else {
#pragma omp simd
    for (int64_t l = 0; l < n; ++l) y[l] *= st.inv_sum;
  }
}
PILLARS_PER_ISA(void, forward_row, (const float* x, float* y, int64_t n, bool log), (x, y, n, log))

PILLARS_VEC_INLINE void backward_row_body(const float* y, const float* g, float* dx, int64_t n, bool log) {
  float dot = 0.0f; // Σ g (log-softmax) or Σ g·y (softmax)
  if (log) {
#pragma omp simd reduction(+ : dot)
    for (int64_t l = 0; l < n; ++l) dot += g[l];
#pragma omp simd
    for (int64_t l = 0; l < n; ++l) dx[l] = g[l] - fast_exp(y[l]) * dot;
  } else {
#pragma omp simd reduction(+ : dot)
    for (int64_t l = 0; l < n; ++l) dot += g[l] * y[l];
#pragma omp simd
    for (int64_t l = 0; l < n; ++l) dx[l] = y[l] * (g[l] - dot);
  }
}
PILLARS_PER_ISA(void, backward_row, (const float* y, const float* g, float* dx, int64_t n, bool log),
                (y, g, dx, n, log))

// ---- tiles of strided rows -------------------------------------------------------------------------
// x points at element (o, 0, c0); row j of the tile is x[j], x[j + inner], ..., width ≤ kTile.

PILLARS_VEC_INLINE void forward_tile_body(const float* x, float* y, int64_t len, int64_t inner, int64_t width,
                                          bool log) {
  float m[kTile], s[kTile];
  std::fill(m, m + width, kNegInf);
  std::fill(s, s + width, 0.0f);
  for (int64_t l = 0; l < len; ++l)
#pragma omp simd
    for (int64_t j = 0; j < width; ++j) m[j] = x[l * inner + j] > m[j] ? x[l * inner + j] : m[j];
  RowStats st[kTile];
  for (int64_t j = 0; j < width; ++j) st[j].shift = m[j] == kNegInf ? 0.0f : m[j];
  for (int64_t l = 0; l < len; ++l)
#pragma omp simd
    for (int64_t j = 0; j < width; ++j) s[j] += fast_exp(x[l * inner + j] - st[j].shift);
  for (int64_t j = 0; j < width; ++j) st[j] = row_stats(m[j], s[j]);
  for (int64_t l = 0; l < len; ++l)
#pragma omp simd
    for (int64_t j = 0; j < width; ++j) {
      const float v = x[l * inner + j] - st[j].shift;
      y[l * inner + j] = log ? v - st[j].log_sum : fast_exp(v) * st[j].inv_sum;
    }
}
PILLARS_PER_ISA(void, forward_tile, (const float* x, float* y, int64_t len, int64_t inner, int64_t width, bool log),
                (x, y, len, inner, width, log))

PILLARS_VEC_INLINE void backward_tile_body(const float* y, const float* g, float* dx, int64_t len, int64_t inner,
                                           int64_t width, bool log) {
  float dot[kTile];
  std::fill(dot, dot + width, 0.0f);
  for (int64_t l = 0; l < len; ++l)
#pragma omp simd
    for (int64_t j = 0; j < width; ++j) {
      const int64_t k = l * inner + j;
      dot[j] += g[k] * (log ? 1.0f : y[k]);
    }
  for (int64_t l = 0; l < len; ++l)
#pragma omp simd
    for (int64_t j = 0; j < width; ++j) {
      const int64_t k = l * inner + j;
      const float yk = y[k];
      dx[k] = log ? g[k] - fast_exp(yk) * dot[j] : yk * (g[k] - dot[j]);
    }
}
PILLARS_PER_ISA(void, backward_tile,
                (const float* y, const float* g, float* dx, int64_t len, int64_t inner, int64_t width, bool log),
                (y, g, dx, len, inner, width, log))

// ---- the drivers: one work item per contiguous row, or per tile of strided rows ------------------

// Calls row(offset) for the first element of every contiguous row, or tile(offset, width) for
// every tile of strided rows, in parallel when the tensor is large.
template <class RowFn, class TileFn>
void for_each_row(const SoftmaxArgs& s, RowFn row, TileFn tile) {
  const bool parallel = s.outer * s.len * s.inner >= kParallelGrain;
  if (s.inner == 1) {
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t o = 0; o < s.outer; ++o) row(o * s.len);
    return;
  }
  const int64_t tiles = (s.inner + kTile - 1) / kTile;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t t = 0; t < s.outer * tiles; ++t) {
    const int64_t o = t / tiles, c0 = (t % tiles) * kTile;
    tile(o * s.len * s.inner + c0, std::min(kTile, s.inner - c0));
  }
}

} // namespace

void softmax_forward(const SoftmaxArgs& s, const float* x, float* y) {
  const bool log = s.log;
  for_each_row(
      s, [&](int64_t at) { forward_row(x + at, y + at, s.len, log); },
      [&](int64_t at, int64_t width) { forward_tile(x + at, y + at, s.len, s.inner, width, log); });
}

void softmax_backward(const SoftmaxArgs& s, const float* y, const float* dy, float* dx) {
  const bool log = s.log;
  for_each_row(
      s, [&](int64_t at) { backward_row(y + at, dy + at, dx + at, s.len, log); },
      [&](int64_t at, int64_t width) { backward_tile(y + at, dy + at, dx + at, s.len, s.inner, width, log); });
}

} // namespace pillars::cpu
