// Dropout and masked_fill on the GPU: the plain-pointer API under the dropout and masked_fill
// ops (adapters: engine/ops/cuda/dropout.cu; the Philox stream and the algorithms: dropout.cu).
// Contiguous f32 device arrays, y may alias x:
//
//   dropout      x (n) → y (n): y_i = x_i · scale where Philox element rng_offset + i of key
//                seed + run seed is kept (u ≥ p), else 0
//   masked_fill  x (x_dims) f32, mask (mask_dims) i32 broadcast to x_dims (aligned at the right)
//                → y (x_dims): y = mask != 0 ? value : x;  fewer than 2³¹ elements each
//
// Queued on cuda::stream(). Plain C++: callable from host code compiled without nvcc.
#pragma once
#include <cstdint>
#include <span>

#include "kernels/args/dropout.h"

namespace pillars::cuda {

// The GPU's own (not in kernels/args/dropout.h): the run seed is a device word here (a CUDA graph
// replays with each step's seed), part of `seed` on the CPU.
struct DropoutArgs {
  int64_t n;
  float p, scale;           // scale = 1 / (1 − p), rounded once on the host as on the CPU
  uint64_t seed, offset;    // the op's seed and rng_offset (ops::DropoutParams)
  const uint64_t* run_seed; // device word added to seed; nullptr: host_run_seed instead
  uint64_t host_run_seed;
};

void dropout(const DropoutArgs& a, const float* x, float* y);
using kernels::MaskedFillArgs; // kernels/args/dropout.h, shared with the other device

// x (x_dims), mask (mask_dims) → y (x_dims).
void masked_fill(const MaskedFillArgs& a, const float* x, const int32_t* mask, float* y);

} // namespace pillars::cuda
