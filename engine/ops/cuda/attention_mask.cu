// The CUDA slot of attention_mask (engine/ops/attention_mask.cpp, the mask of attention_reference):
// reads Tq, Tk and the causal flag off the node's ops::AttentionMaskParams and calls
// kernels/cuda/attention_mask.h.
#include "engine/ops/attention_mask.h"
#include "engine/ops/cuda/ops.h"
#include "kernels/cuda/attention_mask.h"

namespace pillars::cuda {

// [key_lengths i32 (B)] → m i32 (B or 1, 1, Tq, Tk)
void op_attention_mask(const KernelContext& c) {
  const ops::AttentionMaskParams& p = params_of<ops::AttentionMaskParams>(c.node);
  attention_mask({.B = c.out[0].dim(0), .Tq = p.Tq, .Tk = p.Tk, .causal = p.causal},
                 c.in.empty() ? nullptr : c.in[0].data<int32_t>(), c.out[0].data<int32_t>());
}

} // namespace pillars::cuda
