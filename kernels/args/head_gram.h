// The argument struct of the float32 head_gram kernels, declared once for both devices:
// kernels/cpu/head_gram.h and kernels/cuda/head_gram.h bring it into cpu:: and cuda:: (the
// functions and their arrays are documented there). The float64 head_gram_f64 runs on the CPU
// only, so its HeadGramRowsArgs stays in kernels/cpu/head_gram.h. Device-neutral: standard headers
// only.
#pragma once
#include <cstdint>

namespace pillars::kernels {

struct HeadGramArgs {
  int64_t B = 0, T = 0, H = 0, D = 0; // x is (B, T, H, D)
};

} // namespace pillars::kernels
