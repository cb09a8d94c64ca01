// Layer normalization over the last axis on the GPU: the plain-pointer API under the layer_norm
// ops (adapters: engine/ops/cuda/layernorm.cu; the math and the algorithm: layernorm.cu).
// Row-major f32 device arrays:
//
//   forward   x (N, D), γ (D) or null, β (D) or null → y (N, D), mean μ (N), rstd r (N)
//   backward  x (N, D), μ (N), r (N), dy (N, D), γ (D) or null → dx (N, D) [, dγ (D), dβ (D)]
//             dγ and dβ are both given or both null; with them, `partials` is device scratch of
//             layer_norm_backward_partials_bytes(N, D) bytes (a fixed-order, deterministic sum).
//
// Queued on cuda::stream(). Plain C++: callable from host code compiled without nvcc.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/args/layernorm.h"

namespace pillars::cuda {

using kernels::LayerNormForwardArgs; // kernels/args/layernorm.h, shared with the CPU

// The fields of cpu::LayerNormBackwardArgs (kernels/cpu/layernorm.h) and `partials`, which only
// the GPU needs: so each device declares its own.
struct LayerNormBackwardArgs {
  int64_t N, D;
  const float *x, *gamma, *mean, *rstd, *dy;
  float *dx, *dgamma, *dbeta; // dgamma, dbeta: both or neither
  float* partials;            // workspace, (2, P, D) floats when dgamma
};

void layer_norm_forward(const LayerNormForwardArgs& a);
void layer_norm_backward(const LayerNormBackwardArgs& a);

// Bytes of `partials`, (2, P, D) floats: P is taken for whichever of the scalar and the 16-byte
// layout the pointers will allow (the larger), so the size is known before the pointers are.
size_t layer_norm_backward_partials_bytes(int64_t N, int64_t D);

} // namespace pillars::cuda
