// The argument struct of the masked_fill kernel, declared once for both devices:
// kernels/cpu/dropout.h and kernels/cuda/dropout.h bring it into cpu:: and cuda:: (the function
// and its arrays are documented there). DropoutArgs stays per device: the GPU's adds the run seed
// as a device pointer (read by the kernel, so that a captured CUDA graph draws fresh masks), where
// the CPU's seed already holds it. Device-neutral: standard headers only.
#pragma once
#include <cstdint>
#include <span>

namespace pillars::kernels {

struct MaskedFillArgs {
  std::span<const int64_t> x_dims, mask_dims; // mask_dims broadcasts to x_dims
  float value = 0.0f;
};

} // namespace pillars::kernels
