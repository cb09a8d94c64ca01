// The fused attention op, its backward op, and the composed reference.
//
// Per batch b and head h, with s = scale (default 1/√D) and M the mask (0 or −inf):
//   S = s · Q Kᵀ + M        (Tq, Tk)
//   P = softmax(S)           rows; a fully masked row gives P = 0
//   O = dropout(P) V         (Tq, D)             lse = log Σ_j exp(S_ij)  (−inf for an empty row)
// Masks: key j is hidden from query i when j ≥ key_lengths[b], or, if causal, when
// j > i + Tk − Tq (the causal diagonal is aligned to the bottom-right corner).
//
// Backward (FlashAttention): with P recomputed from S and lse, P̃ = dropout(P), and Δ_i = Σ_d dO∘O,
//   dV = P̃ᵀ dO,  dP̃ = dO Vᵀ,  dP = dropout-mask ∘ dP̃ / (1 − p),  dS = P ∘ (dP − Δ),
//   dQ = s · dS K,  dK = s · dSᵀ Q
// This is the op attention_backward(q, k, v, o, lse, dO [, key_lengths]) → dq, dk, dv, which the
// vjp emits; kernels/cpu/attention.h does the work in O(T) memory.
// When the probabilities are an output (emit_probs) and receive a gradient dA of their own (GHT's
// feature map A), that path adds dS' = softmax_backward(A, dA) to dS:
//   dQ += s · dS' K,  dK += s · dS'ᵀ Q     (composed of ops, on (B, H, T, D) permutations).
//
// Node layout. attention:          inputs q, k, v [, key_lengths];   outputs o, lse [, probs]
//              attention_backward: inputs q, k, v, o, lse, dO [, key_lengths]; outputs dq, dk, dv
//   parameters: AttentionParams (attention.h), the same struct on both nodes.
#include "engine/ops/attention.h"

#include <cmath>
#include <limits>

#include "engine/ops/attention_mask.h"
#include "engine/ops/common.h"
#include "engine/ops/dropout.h"
#include "engine/ops/elementwise.h"
#include "engine/ops/matmul.h"
#include "engine/ops/shape.h"
#include "engine/ops/softmax.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/gemm_precision.h"

namespace pillars::ops {
namespace {

struct Dims {
  int64_t B, Tq, Tk, H, D;
};

// Validates q (B, Tq, H, D), k and v (B, Tk, H, D), and key_lengths i32 (B) if given.
Dims check_qkv(const Graph& g, const char* op, ValueId q, ValueId k, ValueId v, ValueId key_lengths) {
  const Shape &qs = g.shape(q), &ks = g.shape(k), &vs = g.shape(v);
  for (ValueId x : {q, k, v}) detail::expect_f32(op, g, x);
  PILLARS_CHECK(qs.size() == 4 && ks.size() == 4 && ks == vs && qs[0] == ks[0] && qs[2] == ks[2] && qs[3] == ks[3], op,
                ": want q (B, Tq, H, D) and k, v (B, Tk, H, D); got q ", shape_str(qs), ", k ", shape_str(ks), ", v ",
                shape_str(vs));
  if (key_lengths != kNoValue)
    PILLARS_CHECK(g.dtype(key_lengths) == DType::i32 && g.shape(key_lengths) == Shape{qs[0]}, op,
                  ": key_lengths must be i32 of shape [", qs[0], "], got ", dtype_name(g.dtype(key_lengths)),
                  shape_str(g.shape(key_lengths)));
  return Dims{qs[0], qs[1], ks[1], qs[2], qs[3]};
}

bool emits_probs(const Node& n) { return params_of<AttentionParams>(n).emit_probs; }

// The CPU runs our kernel only: a node meant for cuDNN says so instead of silently running ours.
void expect_pillars_kernel(const KernelContext& c) {
  PILLARS_CHECK(params_of<AttentionParams>(c.node).kernel == AttentionKernel::pillars, c.node.op->name,
                ": this node asks for the cudnn attention backend, which runs on the GPU only "
                "(train.attention_backend \"cudnn\" needs train.device \"cuda\")");
}

// The kernel's parameters for a node; key_lengths: the i32 input or nullptr. The dropout stream's
// seed is the op's seed plus the executor's run seed, in the forward and the backward alike.
cpu::AttentionParams kernel_params(const KernelContext& c, const Shape& q, const Shape& k, const Tensor* key_lengths) {
  const AttentionParams& op = params_of<AttentionParams>(c.node);
  cpu::AttentionParams p = cpu::attention_params_contiguous(q[0], q[2], q[1], k[1], q[3]);
  p.scale = op.scale;
  p.causal = op.causal;
  p.key_lengths = key_lengths ? key_lengths->data<int32_t>() : nullptr;
  p.dropout_p = op.dropout;
  p.seed = op.seed + c.run_seed;
  p.rng_offset = op.rng_offset;
  p.bf16 = cpu::matmul_precision() == Precision::bf16; // the products at the CPU's matmul precision
  p.kv_rounded = op.kv_rounded;                        // caches cache_write rounded (bf16 only)
  return p;
}

std::string print_params(const Node& n) {
  const AttentionParams& p = params_of<AttentionParams>(n);
  return str_cat(" scale=", p.scale, p.causal ? " causal" : "",
                 p.dropout != 0.0f ? str_cat(" dropout=", p.dropout, " seed=", p.seed, " offset=", p.rng_offset) : "",
                 p.emit_probs ? " probs" : "", p.kv_rounded ? " kv_rounded" : "", " kernel=", enum_name(p.kernel));
}

// q (B, Tq, H, D), k (B, Tk, H, D): S = Q·Kᵀ and O = P·V, 2·Tq·Tk·D each per (b, h); halved under
// a causal mask. The backward recomputes S and forms dV, dP, dQ, dK: five products.
double attention_pairs(const Graph& g, const Node& n) {
  const Shape q = g.shape(n.inputs[0]), k = g.shape(n.inputs[1]);
  double pairs = static_cast<double>(q[0]) * static_cast<double>(q[2]) * static_cast<double>(q[1]) *
                 static_cast<double>(k[1]) * static_cast<double>(q[3]);
  if (params_of<AttentionParams>(n).causal) pairs /= 2;
  return pairs;
}
NodeFlops flops_forward(const Graph& g, const Node& n) { return {.attention = 4.0 * attention_pairs(g, n)}; }
NodeFlops flops_backward(const Graph& g, const Node& n) { return {.attention = 10.0 * attention_pairs(g, n)}; }

// ---- forward -----------------------------------------------------------------------------------

std::vector<OutputSpec> infer_forward(const Graph& g, const Node& n) {
  const Dims d =
      check_qkv(g, "attention", n.inputs[0], n.inputs[1], n.inputs[2], n.inputs.size() > 3 ? n.inputs[3] : kNoValue);
  std::vector<OutputSpec> out{{{d.B, d.Tq, d.H, d.D}, DType::f32}, {{d.B, d.H, d.Tq}, DType::f32}};
  if (emits_probs(n)) out.push_back({{d.B, d.H, d.Tq, d.Tk}, DType::f32});
  return out;
}

void cpu_forward(const KernelContext& c) {
  expect_pillars_kernel(c);
  const Tensor &q = c.in[0], &k = c.in[1], &v = c.in[2];
  const cpu::AttentionParams p = kernel_params(c, q.shape(), k.shape(), c.in.size() > 3 ? &c.in[3] : nullptr);
  cpu::attention_forward(p, q.data<float>(), k.data<float>(), v.data<float>(), c.out[0].data<float>(),
                         c.out[1].data<float>(), emits_probs(c.node) ? c.out[2].data<float>() : nullptr);
}

// ---- backward ----------------------------------------------------------------------------------

std::vector<OutputSpec> infer_backward(const Graph& g, const Node& n) {
  const Dims d = check_qkv(g, "attention_backward", n.inputs[0], n.inputs[1], n.inputs[2],
                           n.inputs.size() > 6 ? n.inputs[6] : kNoValue);
  PILLARS_CHECK(g.shape(n.inputs[3]) == g.shape(n.inputs[0]) && g.shape(n.inputs[5]) == g.shape(n.inputs[0]) &&
                    g.shape(n.inputs[4]) == (Shape{d.B, d.H, d.Tq}),
                "attention_backward: o and dO must match q, and lse must be (B, H, Tq)");
  return {{g.shape(n.inputs[0]), DType::f32}, {g.shape(n.inputs[1]), DType::f32}, {g.shape(n.inputs[2]), DType::f32}};
}

void cpu_backward(const KernelContext& c) {
  expect_pillars_kernel(c);
  const Tensor &q = c.in[0], &k = c.in[1], &v = c.in[2];
  const cpu::AttentionParams p = kernel_params(c, q.shape(), k.shape(), c.in.size() > 6 ? &c.in[6] : nullptr);
  cpu::attention_backward(p, q.data<float>(), k.data<float>(), v.data<float>(), c.in[3].data<float>(),
                          c.in[4].data<float>(), c.in[5].data<float>(), c.out[0].data<float>(), c.out[1].data<float>(),
                          c.out[2].data<float>());
}

// (B, T, H, D) ↔ (B, H, T, D): the same permutation both ways.
ValueId swap_heads_and_tokens(Graph& g, ValueId x) { return permute(g, x, {0, 2, 1, 3}); }

// The gradient reaching the logits S through the probabilities output A (see the header comment):
// returns {dq, dk} contributions in the (B, T, H, D) layout.
std::pair<ValueId, ValueId> grads_through_probs(Graph& g, const Node& n, ValueId dprobs) {
  const ValueId qh = swap_heads_and_tokens(g, n.inputs[0]), kh = swap_heads_and_tokens(g, n.inputs[1]);
  const float s = params_of<AttentionParams>(n).scale;
  const ValueId ds = scale(g, softmax_backward(g, n.outputs[2], dprobs, -1), s); // s · dS'
  const ValueId dq = matmul(g, ds, kh);                                          // (B, H, Tq, D)
  const ValueId dk = matmul(g, ds, qh, /*trans_a=*/true);                        // (B, H, Tk, D)
  return {swap_heads_and_tokens(g, dq), swap_heads_and_tokens(g, dk)};
}

ValueId sum_if_both(Graph& g, ValueId a, ValueId b) {
  if (a == kNoValue) return b;
  if (b == kNoValue) return a;
  return add(g, a, b);
}

const OpDef kAttentionBackward{.name = "attention_backward",
                               .infer = infer_backward,
                               .cpu = cpu_backward,
                               .cuda = PILLARS_CUDA_KERNEL(attention_backward),
                               .cuda_workspace = PILLARS_CUDA_WORKSPACE(attention_backward),
                               .print = print_params,
                               .flops = flops_backward};

std::vector<ValueId> vjp(Graph& g, const Node& n, const std::vector<ValueId>& dy, const std::vector<bool>& needs) {
  PILLARS_CHECK(dy[1] == kNoValue, "attention: gradients through the lse output are not supported");
  const ValueId d_out = dy[0], d_probs = emits_probs(n) ? dy[2] : kNoValue;
  std::vector<ValueId> grads(n.inputs.size(), kNoValue);
  if (d_out != kNoValue) {
    std::vector<ValueId> in{n.inputs[0], n.inputs[1], n.inputs[2], n.outputs[0], n.outputs[1], d_out};
    if (n.inputs.size() > 3) in.push_back(n.inputs[3]);
    const std::vector<ValueId> d = g.add(kAttentionBackward, in, n.params);
    for (int i = 0; i < 3; ++i) grads[i] = d[i];
  }
  if (d_probs != kNoValue) {
    const auto [dq, dk] = grads_through_probs(g, n, d_probs);
    grads[0] = sum_if_both(g, grads[0], dq);
    grads[1] = sum_if_both(g, grads[1], dk);
  }
  for (size_t i = 0; i < grads.size(); ++i)
    if (!needs[i]) grads[i] = kNoValue;
  return grads;
}

AttentionParams params_from(const AttentionOptions& opt, int64_t D) {
  return AttentionParams{.scale = opt.scale != 0.0f ? opt.scale : 1.0f / std::sqrt(static_cast<float>(D)),
                         .causal = opt.causal,
                         .dropout = opt.dropout,
                         .seed = opt.seed,
                         .rng_offset = opt.rng_offset,
                         .emit_probs = opt.emit_probs,
                         .kernel = opt.kernel,
                         .kv_rounded = opt.kv_rounded};
}

} // namespace

const OpDef kAttention{.name = "attention",
                       .infer = infer_forward,
                       .cpu = cpu_forward,
                       .cuda = PILLARS_CUDA_KERNEL(attention),
                       .vjp = vjp,
                       .print = print_params,
                       .flops = flops_forward};

AttentionResult attention(Graph& g, ValueId q, ValueId k, ValueId v, const AttentionOptions& opt) {
  const Dims d = check_qkv(g, "attention", q, k, v, opt.key_lengths);
  PILLARS_CHECK(opt.dropout >= 0.0f && opt.dropout < 1.0f, "attention: dropout ", opt.dropout, " is not in [0, 1)");
  std::vector<ValueId> in{q, k, v};
  if (opt.key_lengths != kNoValue) in.push_back(opt.key_lengths);
  const std::vector<ValueId> out = g.add(kAttention, in, params_from(opt, d.D));
  return AttentionResult{out[0], out[1], opt.emit_probs ? out[2] : kNoValue};
}

ValueId attention_reference(Graph& g, ValueId q, ValueId k, ValueId v, const AttentionOptions& opt, ValueId* probs) {
  const Dims d = check_qkv(g, "attention_reference", q, k, v, opt.key_lengths);
  const AttentionParams a = params_from(opt, d.D);
  const ValueId qh = swap_heads_and_tokens(g, q), kh = swap_heads_and_tokens(g, k), vh = swap_heads_and_tokens(g, v);
  ValueId s = scale(g, matmul(g, qh, kh, false, /*trans_b=*/true), a.scale); // (B, H, Tq, Tk)
  if (opt.causal || opt.key_lengths != kNoValue) {
    const std::vector<ValueId> lengths =
        opt.key_lengths == kNoValue ? std::vector<ValueId>{} : std::vector<ValueId>{opt.key_lengths};
    const ValueId mask =
        g.add1(kAttentionMask, lengths, AttentionMaskParams{.Tq = d.Tq, .Tk = d.Tk, .causal = opt.causal});
    s = masked_fill(g, s, mask, -std::numeric_limits<float>::infinity());
  }
  const ValueId p = softmax(g, s, -1);
  if (probs) *probs = p;
  const ValueId o = matmul(g, dropout(g, p, opt.dropout, opt.seed, opt.rng_offset), vh); // (B, H, Tq, D)
  return swap_heads_and_tokens(g, o);
}

} // namespace pillars::ops
