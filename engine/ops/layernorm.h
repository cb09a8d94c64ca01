// The layer-norm op family: layer_norm and layer_norm_backward (engine/ops/layernorm.cpp; kernels:
// kernels/cpu/layernorm.h, kernels/cuda/layernorm.h).
#pragma once
#include <cstddef>
#include <cstdint>

#include "engine/graph.h"

namespace pillars::ops {

// layer_norm: inputs x [, gamma] [, beta] — the flags say which are present.
struct LayerNormParams {
  float eps = 1e-5f;                                      // added to the variance under the square root
  bool has_gamma = false;                                 // input 1 is gamma (the scale)
  bool has_beta = false;                                  // beta (the shift) is the last input: beta_input()
  size_t beta_input() const { return has_gamma ? 2 : 1; } // beta's input index, when has_beta
};

// layer_norm_backward: inputs x, mean, rstd, dy [, gamma]; outputs dx [, dgamma, dbeta].
struct LayerNormBackwardParams {
  bool has_gamma = false;   // input 4 is gamma (dx then goes through it)
  bool param_grads = false; // also output dgamma and dbeta (D): some affine input needs a gradient
};

// Fused layer norm over the last axis: y = (x − mean) / sqrt(var + eps) · gamma + beta
//   x (..., D), gamma (D), beta (D) → y (..., D). gamma/beta may be kNoValue (no affine).
// The node also outputs the per-row mean and rstd = 1/sqrt(var + eps), shape (...), which the
// backward reads (g.producer(y).outputs[1], [2]); they take no gradient.
ValueId layer_norm(Graph& g, ValueId x, ValueId gamma, ValueId beta, float eps = 1e-5f);
// The same function composed of mean/sub/mul/sqrt/div ops (the test oracle).
ValueId layer_norm_reference(Graph& g, ValueId x, ValueId gamma, ValueId beta, float eps = 1e-5f);

} // namespace pillars::ops
