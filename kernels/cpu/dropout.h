// Dropout and masked_fill on the CPU: the plain-pointer API under the dropout and masked_fill ops
// (adapters: engine/ops/dropout.cpp), the same functions as kernels/cuda/dropout.h. Contiguous f32
// arrays, y may alias x:
//
//   dropout      x (n) → y (n): y_i = x_i · scale where u_i = philox_uniform(seed, offset, i) ≥ p
//                (kernels/philox.h), else 0. The seed is the op's plus the run's: a fresh mask per
//                step, and the same mask on any device and thread count.
//   masked_fill  x (x_dims) f32, mask (mask_dims) i32 broadcast to x_dims (numpy rules, aligned at
//                the right) → y (x_dims): y = mask != 0 ? value : x
#pragma once
#include <cstdint>
#include <span>

#include "kernels/args/dropout.h"

namespace pillars::cpu {

// The CPU's own (not in kernels/args/dropout.h): the GPU's adds the run seed as a device word.
struct DropoutArgs {
  int64_t n = 0;
  float p = 0.0f, scale = 1.0f; // scale = 1 / (1 − p), rounded once by the caller (as on the GPU)
  uint64_t seed = 0;            // the op's seed + the executor's run seed
  uint64_t offset = 0;          // where in the Philox stream element 0 draws
};

void dropout(const DropoutArgs& a, const float* x, float* y);
using kernels::MaskedFillArgs; // kernels/args/dropout.h, shared with the other device

// x (x_dims), mask (mask_dims) → y (x_dims).
void masked_fill(const MaskedFillArgs& a, const float* x, const int32_t* mask, float* y);

} // namespace pillars::cpu
