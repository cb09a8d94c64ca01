// The argument structs of the decoding kernels that both devices take alike (cache_gather,
// beam_candidates), declared once: kernels/cpu/decoding.h and kernels/cuda/decoding.h bring them
// into cpu:: and cuda:: (the functions and their arrays are documented there). CacheWriteArgs stays
// per device: the CPU's has a `bf16` flag (round the cached values to bf16 as they are written)
// that the GPU kernel does not implement.
//
// Device-neutral: standard headers and base/special_tokens.h (plain constants, for BeamTokens'
// defaults) only.
#pragma once
#include <cstdint>

#include "base/special_tokens.h"

namespace pillars::kernels {

struct CacheGatherArgs {
  int64_t R_in = 0, R_out = 0; // src (R_in, T, W), dst (R_out, T, W); R_out ≤ R_in
  int64_t T = 0, W = 0;        // time slots per row, floats per slot
};

struct BeamTokens {
  int32_t pad = tokens::kPad, bos = tokens::kBos, eos = tokens::kEos; // token ids, each in [0, V)
};
struct BeamCandidatesArgs {
  int64_t S = 0, k = 0; // S sentences of k rows (hypotheses) each
  int64_t V = 0;        // tokens per row
  int64_t n = 0;        // candidates kept per sentence
  BeamTokens tokens;
};

} // namespace pillars::kernels
