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

struct ReduceArgs {
  int64_t outer = 1, n = 1, inner = 1; // the (outer, n, inner) view around the reduced axis
  bool mean = false;                   // reduce_sum only: times 1/n
  const char* name = "reduce";         // reduce_sum and reduce_max: the op, in errors
};

void reduce_sum(const ReduceArgs& a, const float* x, float* y);
void reduce_max(const ReduceArgs& a, const float* x, float* y);
void max_backward(const ReduceArgs& a, const float* x, const float* y, const float* g, float* dx);

} // namespace pillars::cuda
