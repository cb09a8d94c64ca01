// The attention_mask op, the mask of the composed attention (ops::attention_reference in
// engine/ops/attention.h, which emits it): engine/ops/attention_mask.cpp, CUDA adapter
// engine/ops/cuda/attention_mask.cu; kernels: kernels/cpu/attention_mask.h, kernels/cuda/attention_mask.h.
#pragma once
#include <cstdint>

#include "engine/graph.h"

namespace pillars::ops {

// The parameters of an attention_mask node: params_of<AttentionMaskParams>(node).
// [key_lengths i32 (B)] → i32 (B or 1, 1, Tq, Tk), 1 where key j is hidden from query i.
struct AttentionMaskParams {
  int64_t Tq = 0, Tk = 0; // query and key lengths (the mask's last two extents)
  bool causal = false;    // also hide keys j > i + Tk − Tq
};

// The op, for attention_reference: g.add1(kAttentionMask, {key_lengths} or {}, AttentionMaskParams{…}).
extern const OpDef kAttentionMask;

} // namespace pillars::ops
