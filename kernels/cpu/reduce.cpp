// See reduce.h.
#include "kernels/cpu/reduce.h"

#include <algorithm>
#include <limits>

#include "base/parallel.h"

namespace pillars::cpu {

void reduce_sum(const ReduceArgs& a, const float* x, float* y) {
  const int64_t outer = a.outer, n = a.n, inner = a.inner;
  const double factor = !a.mean ? 1.0 : n ? 1.0 / static_cast<double>(n) : 0.0;
#pragma omp parallel for schedule(static) if (outer * inner * n > kParallelGrain)
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double acc = 0;
      for (int64_t k = 0; k < n; ++k) acc += x[(o * n + k) * inner + i];
      y[o * inner + i] = static_cast<float>(acc * factor);
    }
}

void reduce_max(const ReduceArgs& a, const float* x, float* y) {
  const int64_t outer = a.outer, n = a.n, inner = a.inner;
#pragma omp parallel for schedule(static) if (outer * inner * n > kParallelGrain)
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      float m = -std::numeric_limits<float>::infinity();
      for (int64_t k = 0; k < n; ++k) m = std::max(m, x[(o * n + k) * inner + i]);
      y[o * inner + i] = m;
    }
}

void max_backward(const ReduceArgs& a, const float* x, const float* y, const float* g, float* dx) {
  const int64_t outer = a.outer, n = a.n, inner = a.inner;
#pragma omp parallel for schedule(static) if (outer * inner * n > kParallelGrain)
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      bool routed = false;
      for (int64_t k = 0; k < n; ++k) {
        const int64_t at = (o * n + k) * inner + i;
        const bool is_max = !routed && x[at] == y[o * inner + i];
        dx[at] = is_max ? g[o * inner + i] : 0.0f;
        routed = routed || is_max;
      }
    }
}

} // namespace pillars::cpu
