// Reductions over one axis on the GPU: the plain-pointer API under the sum, mean, max and
// max_backward ops (adapters: engine/ops/cuda/reduce.cu; algorithm: reduce.cu). The tensor is
// viewed as (outer, n, inner) around the reduced axis; every pointer is a contiguous f32 device
// array:
//
//   reduce_sum    x (outer, n, inner) → y (outer, inner);  y = Σ_k x[k], times 1/n when `mean`
//   reduce_max    x (outer, n, inner) → y (outer, inner);  y = max_k x[k]
//   max_backward  x (outer, n, inner), y (outer, inner), g (outer, inner) → dx (outer, n, inner):
//                 g at the first k where x[k] = y, 0 elsewhere
//
// `name` names the op in errors. Launched on cuda::stream(). Plain C++: callable from host code
// compiled without nvcc.
#pragma once
#include <cstdint>

namespace pillars::cuda {

void reduce_sum(const float* x, float* y, int64_t outer, int64_t n, int64_t inner, bool mean, const char* name);
void reduce_max(const float* x, float* y, int64_t outer, int64_t n, int64_t inner, const char* name);
void max_backward(const float* x, const float* y, const float* g, float* dx, int64_t outer, int64_t n, int64_t inner);

} // namespace pillars::cuda
