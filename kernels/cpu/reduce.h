// Reductions over one axis on the CPU: the plain-pointer API under the sum, mean, max and
// max_backward ops (adapters: engine/ops/reduce.cpp), the same functions as kernels/cuda/reduce.h.
// The tensor is viewed as (outer, n, inner) around the reduced axis; contiguous f32 arrays:
//
//   reduce_sum    x (outer, n, inner) → y (outer, inner);  y = Σ_k x[k], times 1/n when `mean`
//                 (summed in double, in k order: accurate, and the same for any thread count)
//   reduce_max    x (outer, n, inner) → y (outer, inner);  y = max_k x[k]
//   max_backward  x (outer, n, inner), y (outer, inner), g (outer, inner) → dx (outer, n, inner):
//                 g at the first k where x[k] = y, 0 elsewhere
#pragma once
#include <cstdint>

namespace pillars::cpu {

struct ReduceArgs {
  int64_t outer = 1, n = 1, inner = 1; // the (outer, n, inner) view around the reduced axis
  bool mean = false;                   // reduce_sum only: times 1/n
};

void reduce_sum(const ReduceArgs& a, const float* x, float* y);
void reduce_max(const ReduceArgs& a, const float* x, float* y);
void max_backward(const ReduceArgs& a, const float* x, const float* y, const float* g, float* dx);

} // namespace pillars::cpu
