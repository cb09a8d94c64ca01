// The argument struct of the attention_mask kernel, declared once for both devices:
// kernels/cpu/attention_mask.h and kernels/cuda/attention_mask.h bring it into cpu:: and cuda::
// (the function and its arrays are documented there). Device-neutral: standard headers only.
#pragma once
#include <cstdint>

namespace pillars::kernels {

struct AttentionMaskArgs {
  int64_t B = 0, Tq = 0, Tk = 0; // m (B, 1, Tq, Tk), key_lengths (B)
  bool causal = false;           // also hide key j from query i when j > i + Tk − Tq
};

} // namespace pillars::kernels
