// The argument struct of the layer_norm forward, declared once for both devices:
// kernels/cpu/layernorm.h and kernels/cuda/layernorm.h bring it into cpu:: and cuda:: (the math
// and the arrays are documented there). LayerNormBackwardArgs stays per device: the GPU's adds
// `partials`, the device scratch of its fixed-order parameter-gradient sum, which the CPU does not
// need. Device-neutral: standard headers only.
#pragma once
#include <cstdint>

namespace pillars::kernels {

struct LayerNormForwardArgs {
  int64_t N = 0, D = 0;
  const float *x = nullptr, *gamma = nullptr, *beta = nullptr; // x (N, D); gamma, beta (D) or nullptr
  float *y = nullptr, *mean = nullptr, *rstd = nullptr;        // y (N, D); mean, rstd (N)
  float eps = 0.0f;
};

} // namespace pillars::kernels
