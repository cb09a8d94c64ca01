// Reductions over one axis on the GPU, seen as x (outer, n, inner) → y (outer, inner):
//   sum  y = Σ_k x[k]      mean  y = (1/n) Σ_k x[k]      max  y = max_k x[k]
//   max_backward(x, y, g) → dx: g at the first k where x[k] = y, 0 elsewhere.
// inner > 1: one thread per (outer, inner) column walks k, so neighboring threads read
// neighboring addresses. inner = 1 (the last axis): one warp per row, lanes stride over k and a
// shuffle tree adds them. Sums accumulate in double like the CPU kernel.
// The API is reduce.h; engine/ops/cuda/reduce.cu adapts the ops to it.
#include "kernels/cuda/reduce.h"

#include <cfloat>

#include "runtime/cuda_runtime.h"

namespace pillars::cuda {
namespace {

constexpr int kThreads = 256;

enum class Reduce { sum, max };

template <Reduce K>
__global__ void reduce_columns(const float* x, float* y, int64_t outer, int64_t n, int64_t inner, double factor) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= outer * inner) return;
  const int64_t o = t / inner, i = t % inner;
  const float* col = x + o * n * inner + i;
  if constexpr (K == Reduce::sum) {
    double acc = 0;
    for (int64_t k = 0; k < n; ++k) acc += col[k * inner];
    y[t] = static_cast<float>(acc * factor);
  } else {
    float m = -INFINITY;
    for (int64_t k = 0; k < n; ++k) m = fmaxf(m, col[k * inner]);
    y[t] = m;
  }
}

template <Reduce K>
__global__ void reduce_rows(const float* x, float* y, int64_t rows, int64_t n, double factor) {
  const int64_t row = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const float* r = x + row * n;
  if constexpr (K == Reduce::sum) {
    double acc = 0;
    for (int64_t k = lane; k < n; k += 32) acc += r[k];
    for (int d = 16; d > 0; d /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, d);
    if (lane == 0) y[row] = static_cast<float>(acc * factor);
  } else {
    float m = -INFINITY;
    for (int64_t k = lane; k < n; k += 32) m = fmaxf(m, r[k]);
    for (int d = 16; d > 0; d /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, d));
    if (lane == 0) y[row] = m;
  }
}

template <Reduce K>
void reduce(const float* x, float* y, int64_t outer, int64_t n, int64_t inner, bool mean, const char* name) {
  const int64_t outputs = outer * inner;
  if (outputs == 0) return;
  const double factor = mean ? (n ? 1.0 / static_cast<double>(n) : 0.0) : 1.0;
  if (inner == 1)
    reduce_rows<K><<<blocks_for(outputs * 32, kThreads), kThreads, 0, stream()>>>(x, y, outputs, n, factor);
  else
    reduce_columns<K><<<blocks_for(outputs, kThreads), kThreads, 0, stream()>>>(x, y, outer, n, inner, factor);
  PILLARS_CUDA_LAUNCHED(name);
}

__global__ void max_backward_kernel(const float* x, const float* y, const float* g, float* dx, int64_t outer, int64_t n,
                                    int64_t inner) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= outer * inner) return;
  const int64_t o = t / inner, i = t % inner;
  bool routed = false;
  for (int64_t k = 0; k < n; ++k) {
    const int64_t at = (o * n + k) * inner + i;
    const bool is_max = !routed && x[at] == y[t];
    dx[at] = is_max ? g[t] : 0.0f;
    routed = routed || is_max;
  }
}

} // namespace

void reduce_sum(const ReduceArgs& a, const float* x, float* y) {
  reduce<Reduce::sum>(x, y, a.outer, a.n, a.inner, a.mean, a.name);
}
void reduce_max(const ReduceArgs& a, const float* x, float* y) {
  reduce<Reduce::max>(x, y, a.outer, a.n, a.inner, false, a.name);
}

void max_backward(const ReduceArgs& a, const float* x, const float* y, const float* g, float* dx) {
  const int64_t outer = a.outer, n = a.n, inner = a.inner;
  const int64_t outputs = outer * inner;
  if (outputs == 0) return;
  max_backward_kernel<<<blocks_for(outputs, kThreads), kThreads, 0, stream()>>>(x, y, g, dx, outer, n, inner);
  PILLARS_CUDA_LAUNCHED("max_backward");
}

} // namespace pillars::cuda
