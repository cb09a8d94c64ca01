// The argument struct of the fp32 ↔ bf16 casts, declared once for both devices: kernels/cpu/cast.h
// and kernels/cuda/elementwise.h bring it into cpu:: and cuda:: (the functions are documented
// there). Device-neutral: standard headers only.
#pragma once
#include <cstdint>

namespace pillars::kernels {

struct CastArgs {
  int64_t n = 0; // elements
};

} // namespace pillars::kernels
