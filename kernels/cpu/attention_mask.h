// The mask of the composed ("naive") attention on the CPU: the plain-pointer API under the
// attention_mask op (adapter: engine/ops/attention_mask.cpp), the same function as
// kernels/cuda/attention_mask.h.
//
//   key_lengths (B) i32 or null → m (B, 1, Tq, Tk) i32: 1 where key j is hidden from query i,
//   i.e. j ≥ key_lengths[b] (padding) or, if causal, j > i + Tk − Tq; else 0
//
// Written from this definition, apart from the fused kernels' own masking rule, so that the
// composed attention stays an independent oracle.
#pragma once
#include <cstdint>

#include "kernels/args/attention_mask.h"

namespace pillars::cpu {

using kernels::AttentionMaskArgs; // kernels/args/attention_mask.h, shared with the other device

// key_lengths (B) or null → m (B, 1, Tq, Tk).
void attention_mask(const AttentionMaskArgs& a, const int32_t* key_lengths, int32_t* m);

} // namespace pillars::cpu
