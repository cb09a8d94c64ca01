// The mask of the composed ("naive") attention on the GPU: the plain-pointer API under the
// attention_mask op (adapter: engine/ops/cuda/attention_mask.cu; kernel: attention_mask.cu).
//
//   key_lengths (B) i32 or null → m (B, 1, Tq, Tk) i32, device arrays: 1 where key j is hidden
//   from query i, i.e. j ≥ key_lengths[b] (padding) or, if causal, j > i + Tk − Tq; else 0
//
// Queued on cuda::stream(). Plain C++: callable from host code compiled without nvcc.
#pragma once
#include <cstdint>

#include "kernels/args/attention_mask.h"

namespace pillars::cuda {

using kernels::AttentionMaskArgs; // kernels/args/attention_mask.h, shared with the other device

// key_lengths (B) or null → m (B, 1, Tq, Tk).
void attention_mask(const AttentionMaskArgs& a, const int32_t* key_lengths, int32_t* m);

} // namespace pillars::cuda
