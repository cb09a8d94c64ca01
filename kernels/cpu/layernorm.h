// Layer normalization over the last axis, forward and backward, on the CPU.
//
// x is (N, D): N rows of D features. Per row n (μ, σ² over the D features):
//   μ = (1/D) Σ_d x_d,   σ² = (1/D) Σ_d (x_d − μ)²,   r = 1 / sqrt(σ² + eps)   ("rstd")
//   x̂_d = (x_d − μ) · r,   y_d = x̂_d · γ_d + β_d       (γ = 1, β = 0 without affine)
// The forward also writes μ and r per row (N floats each) for the backward.
//
// Backward, with g = dL/dy and ĝ_d = g_d · γ_d:
//   dx_d = r · (ĝ_d − mean_d(ĝ) − x̂_d · mean_d(ĝ ∘ x̂))
//   dγ_d = Σ_n g_{n,d} · x̂_{n,d},   dβ_d = Σ_n g_{n,d}
// The variance is computed in two passes (mean first, then Σ (x − μ)²), which loses no accuracy
// when |μ| ≫ σ. dγ and dβ are sums over rows: each column is summed in row order, in double, by
// one thread (threads split the columns), so the result does not depend on the thread count.
#pragma once
#include <cstdint>

#include "kernels/args/layernorm.h"

namespace pillars::cpu {

using kernels::LayerNormForwardArgs; // kernels/args/layernorm.h, shared with the GPU

// The fields of cuda::LayerNormBackwardArgs (kernels/cuda/layernorm.h), less the GPU's `partials`
// workspace: so each device declares its own.
struct LayerNormBackwardArgs {
  int64_t N = 0, D = 0;
  // x, dy (N, D); gamma (D) or nullptr; mean, rstd (N)
  const float *x = nullptr, *gamma = nullptr, *mean = nullptr, *rstd = nullptr, *dy = nullptr;
  // dx (N, D), overwritten; dgamma, dbeta (D) or nullptr (not wanted), overwritten
  float *dx = nullptr, *dgamma = nullptr, *dbeta = nullptr;
};

void layer_norm_forward(const LayerNormForwardArgs& a);
void layer_norm_backward(const LayerNormBackwardArgs& a);

} // namespace pillars::cpu
