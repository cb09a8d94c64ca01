// Fused multi-head attention (kernels/cpu/attention.h): online softmax, O(T) memory.
//
//   q (B, Tq, H, D), k (B, Tk, H, D), v (B, Tk, H, D) → o (B, Tq, H, D)
//   O = dropout(softmax(scale · Q Kᵀ + masks)) V per (batch, head)
// The layout is the projections' natural one, so no transposes are needed around the op.
#pragma once
#include <cstdint>

#include "base/enum_names.h"
#include "engine/graph.h"

namespace pillars::ops {

// Which implementation runs a fused attention node (the experiment's train.attention_backend;
// "naive" is not a kernel but the composed graph, attention_reference below).
//   pillars  our kernels: kernels/cpu/attention.h on the CPU, kernels/cuda/attention*.cu on the GPU
//   cudnn    cuDNN's fused flash attention (kernels/cuda/cudnn_attention.h), the GPU reference
//            backend; the CPU has no cuDNN, so such a node refuses to run there
enum class AttentionKernel : uint8_t { pillars = 0, cudnn = 1 };
constexpr auto enum_table(AttentionKernel) {
  return enum_words<AttentionKernel>({{AttentionKernel::pillars, "pillars"}, {AttentionKernel::cudnn, "cudnn"}});
}

struct AttentionOptions {
  float scale = 0.0f;             // 0 → 1/sqrt(D)
  bool causal = false;            // query i sees keys j <= i (bottom-right aligned when Tq != Tk)
  ValueId key_lengths = kNoValue; // i32 (B): keys j >= key_lengths[b] are padding
  float dropout = 0.0f;           // on the attention probabilities
  uint64_t seed = 0, rng_offset = 0;
  bool emit_probs = false; // also return A (B, H, Tq, Tk), the probabilities before dropout
  AttentionKernel kernel = AttentionKernel::pillars;
  // k and v are key/value caches written by cache_write (decoding.h), which rounds them to bf16
  // values under a bf16 CPU precision: the CPU kernel then skips rounding them again (the same
  // bits). Only for such caches: an unrounded k or v would reach the bf16 products unrounded.
  bool kv_rounded = false;
};

struct AttentionResult {
  ValueId out = kNoValue;   // (B, Tq, H, D)
  ValueId lse = kNoValue;   // (B, H, Tq) log-sum-exp of each row (used by the backward)
  ValueId probs = kNoValue; // (B, H, Tq, Tk) when emit_probs
};

AttentionResult attention(Graph& g, ValueId q, ValueId k, ValueId v, const AttentionOptions& opt = {});

// The composed reference: the same function from permute/matmul/masked_fill/softmax/dropout ops,
// materializing (B, H, Tq, Tk). The test oracle for the fused op, and the "naive" baseline.
// `probs`, if given, receives the probabilities before dropout (B, H, Tq, Tk), like emit_probs.
ValueId attention_reference(Graph& g, ValueId q, ValueId k, ValueId v, const AttentionOptions& opt = {},
                            ValueId* probs = nullptr);

// The parameters of an attention node and of its backward node (attention_backward), which
// carries the same ones: params_of<AttentionParams>(node).
struct AttentionParams {
  float scale = 1.0f;      // s in softmax(s · Q Kᵀ + masks), resolved (AttentionOptions' 0 → 1/sqrt(D))
  bool causal = false;     // query i sees keys j <= i + Tk − Tq (the diagonal at the bottom-right)
  float dropout = 0.0f;    // dropout probability on the attention probabilities, in [0, 1)
  uint64_t seed = 0;       // the dropout stream's seed; the executor's run seed is added at run time
  uint64_t rng_offset = 0; // the dropout stream's offset (kernels/philox.h)
  bool emit_probs = false; // the forward also outputs A (B, H, Tq, Tk), the probabilities before dropout
  AttentionKernel kernel = AttentionKernel::pillars; // which implementation runs the node
  bool kv_rounded = false; // k, v are caches cache_write keeps in bf16 values when the CPU runs bf16
};

// The op itself, for passes that find or rewrite attention nodes (node.op == &ops::kAttention).
// Its node: inputs q, k, v [, key_lengths]; outputs o, lse [, probs (when emit_probs)].
extern const OpDef kAttention;

} // namespace pillars::ops
