// Fused softmax cross-entropy kernels (math in cross_entropy.h).
//
// Forward per valid row: one pass for the max, one for Σ exp(x − max) and Σ x together.
// Backward per valid row: one pass writing (exp(x − lse) − ε/V) · scale, then the target entry
// corrected by −(1 − ε) · scale. The mean over rows is summed in double, in row order.
//
// Compiled with -fno-trapping-math (the pragma must precede every include, so that the inlined
// fast_exp/fast_log get it too): under GCC's default -ftrapping-math the AVX2 and SSE2 versions
// leave loops over fast_exp scalar, because GCC will not if-convert its range clamps there (an
// ordered float comparison "may trap"). Pillars never reads floating-point exception flags, so
// nothing is lost; if the build ever adds -fno-trapping-math globally, this line can go.
#pragma GCC optimize("no-trapping-math")
#include "kernels/cpu/cross_entropy.h"

#include <algorithm>
#include <limits>

#include "base/parallel.h"
#include "base/error.h"
#include "kernels/cpu/vec_math.h"

namespace pillars::cpu {
namespace {

bool ignored(const CrossEntropyParams& p, int32_t t) { return t == p.ignore_index; }

struct RowResult {
  float lse, loss;
};

PILLARS_VEC_INLINE RowResult forward_row_body(const float* x, int32_t target, int64_t V, float smoothing) {
  float m = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : m)
  for (int64_t v = 0; v < V; ++v) m = x[v] > m ? x[v] : m; // (vectorizes at -O2, unlike std::max)
  float sum_exp = 0.0f, sum_x = 0.0f;
#pragma omp simd reduction(+ : sum_exp, sum_x)
  for (int64_t v = 0; v < V; ++v) {
    sum_exp += fast_exp(x[v] - m);
    sum_x += x[v];
  }
  const float lse = m + fast_log(sum_exp);
  const float loss = lse - (1.0f - smoothing) * x[target] - smoothing / static_cast<float>(V) * sum_x;
  return RowResult{lse, loss};
}
PILLARS_PER_ISA(RowResult, forward_row, (const float* x, int32_t target, int64_t V, float smoothing),
                (x, target, V, smoothing))

PILLARS_VEC_INLINE void backward_row_body(const float* x, int32_t target, float lse, int64_t V, float smoothing,
                                          float scale, float* dx) {
  const float uniform = smoothing / static_cast<float>(V);
#pragma omp simd
  for (int64_t v = 0; v < V; ++v) dx[v] = (fast_exp(x[v] - lse) - uniform) * scale;
  dx[target] -= (1.0f - smoothing) * scale;
}
PILLARS_PER_ISA(void, backward_row,
                (const float* x, int32_t target, float lse, int64_t V, float smoothing, float scale, float* dx),
                (x, target, lse, V, smoothing, scale, dx))

} // namespace

int64_t cross_entropy_valid_rows(const CrossEntropyParams& p, const int32_t* targets) {
  int64_t valid = 0;
  for (int64_t n = 0; n < p.N; ++n) {
    const int32_t t = targets[n];
    if (ignored(p, t)) continue;
    PILLARS_CHECK(t >= 0 && t < p.V, "cross_entropy: target ", t, " of row ", n, " is outside the classes [0, ", p.V,
                  ") and is not ignore_index (", p.ignore_index, ")");
    ++valid;
  }
  return valid;
}

void cross_entropy_rows_forward(const CrossEntropyParams& p, const float* logits, const int32_t* targets, float* lse,
                                float* row_loss) {
#pragma omp parallel for schedule(static) if (p.N * p.V >= kParallelGrain)
  for (int64_t n = 0; n < p.N; ++n) {
    if (ignored(p, targets[n])) {
      lse[n] = row_loss[n] = 0.0f;
      continue;
    }
    const RowResult r = forward_row(logits + n * p.V, targets[n], p.V, p.smoothing);
    lse[n] = r.lse;
    row_loss[n] = r.loss;
  }
}

float cross_entropy_forward(const CrossEntropyParams& p, const float* logits, const int32_t* targets, float* lse,
                            float* row_loss) {
  const int64_t valid = cross_entropy_valid_rows(p, targets); // throws before any thread starts
  cross_entropy_rows_forward(p, logits, targets, lse, row_loss);
  double total = 0.0;
  for (int64_t n = 0; n < p.N; ++n) total += row_loss[n];
  return valid == 0 ? 0.0f : static_cast<float>(total / static_cast<double>(valid));
}

void cross_entropy_rows_backward(const CrossEntropyParams& p, const float* logits, const int32_t* targets,
                                 const float* lse, float scale, float* dlogits) {
#pragma omp parallel for schedule(static) if (p.N * p.V >= kParallelGrain)
  for (int64_t n = 0; n < p.N; ++n) {
    float* dx = dlogits + n * p.V;
    if (ignored(p, targets[n]))
      std::fill(dx, dx + p.V, 0.0f);
    else
      backward_row(logits + n * p.V, targets[n], lse[n], p.V, p.smoothing, scale, dx);
  }
}

void cross_entropy_backward(const CrossEntropyParams& p, const float* logits, const int32_t* targets, const float* lse,
                            float grad, float* dlogits) {
  const int64_t valid = cross_entropy_valid_rows(p, targets);
  cross_entropy_rows_backward(p, logits, targets, lse, valid == 0 ? 0.0f : grad / static_cast<float>(valid), dlogits);
}

} // namespace pillars::cpu
