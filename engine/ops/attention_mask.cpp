// attention_mask, the mask op of attention_reference (engine/ops/attention.h): which keys each query
// may not see, as an i32 (B or 1, 1, Tq, Tk) that masked_fill turns into −inf scores.
#include "engine/ops/attention_mask.h"

#include "engine/ops/common.h"
#include "kernels/cpu/attention_mask.h"

namespace pillars::ops {
namespace {

// attention_mask: [key_lengths (B)] → i32 (B or 1, 1, Tq, Tk), 1 where key j is hidden from query
// i; AttentionMaskParams. Kernels: kernels/cpu/attention_mask.h, kernels/cuda/attention_mask.h.
std::vector<OutputSpec> infer_mask(const Graph& g, const Node& n) {
  const int64_t B = n.inputs.empty() ? 1 : g.shape(n.inputs[0])[0];
  const AttentionMaskParams& p = params_of<AttentionMaskParams>(n);
  return {{{B, 1, p.Tq, p.Tk}, DType::i32}};
}

void cpu_mask(const KernelContext& c) {
  const AttentionMaskParams& p = params_of<AttentionMaskParams>(c.node);
  cpu::attention_mask({.B = c.out[0].dim(0), .Tq = p.Tq, .Tk = p.Tk, .causal = p.causal},
                      c.in.empty() ? nullptr : c.in[0].data<int32_t>(), c.out[0].data<int32_t>());
}

std::string print_mask(const Node& n) {
  const AttentionMaskParams& p = params_of<AttentionMaskParams>(n);
  return str_cat(" Tq=", p.Tq, " Tk=", p.Tk, p.causal ? " causal" : "");
}

} // namespace

const OpDef kAttentionMask{.name = "attention_mask",
                           .infer = infer_mask,
                           .cpu = cpu_mask,
                           .cuda = PILLARS_CUDA_KERNEL(attention_mask),
                           .print = print_mask};

} // namespace pillars::ops
