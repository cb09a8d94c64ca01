// Fused multi-head attention on the CPU (forward and backward), and its naive reference.
//
//   O = dropout(softmax(scale · Q Kᵀ + mask)) V        per (batch b, head h)
//
// Shapes (every activation is (B, T, H, D) with the head dimension contiguous; the token and batch
// strides are parameters so that Q, K, V can be views into a fused projection, e.g. (B, T, 3, H, D)):
//   Q, dQ : (B, Tq, H, D)  element (b, i, h, d) at b·q_batch_stride + i·q_token_stride + h·D + d
//   K, dK : (B, Tk, H, D)  likewise with k_batch_stride, k_token_stride
//   V, dV : (B, Tk, H, D)  likewise with v_batch_stride, v_token_stride
//   O, dO : (B, Tq, H, D)  likewise with o_batch_stride, o_token_stride
//   lse   : (B, H, Tq)     contiguous; natural-log log-sum-exp of the scaled, masked logits
//   probs : (B, H, Tq, Tk) contiguous; optional; softmax probabilities before dropout
//
// Masks. Every mask is a *prefix* of the key axis: query row i of batch b sees keys j < n(b, i),
// with n(b, i) = min(Tk, key_lengths[b], causal ? i + 1 + Tk − Tq : Tk) (causal is aligned to the
// bottom-right corner, so Tq == Tk is the usual lower triangle). A row with n = 0 sees nothing:
// O = 0, lse = −inf, and its gradients are zero. Nothing is ever NaN. The key slots past
// key_lengths[b] are never read (attention_key_limit): they may hold anything, NaN included.
//
// Dropout (probability dropout_p) acts on the probabilities after softmax, with the Philox stream of
// kernels/philox.h: element (b, h, i, j) has flat index ((b·H + h)·Tq + i)·Tk + j and is kept iff
// philox_uniform(seed, rng_offset, index) >= dropout_p; kept values are scaled by 1 / (1 − p). The
// log-sum-exp is that of the un-dropped logits (as in FlashAttention), so the backward pass can
// recompute P = exp(S − lse) exactly and regenerate the same mask.
//
// bf16 (the CPU's matmul precision bf16: kernels/cpu/gemm_precision.h). The fused kernels round
// the operands of every product to bf16 (to nearest even, kernels/bf16_bits.h) and accumulate in
// fp32: Q, K, V and dO as they are packed, the probabilities P (P∘Z) before P·V and Pᵀ·dO, and dS
// before dS·K and dSᵀ·Q. The softmax (max, exp, sum, lse), δ = rowsum(dO∘O) (from the unrounded
// dO) and the dropout mask stay fp32. The products run on the fp32 tile kernels: these are bf16's
// numerics, not its speed. false: every product fp32, exactly as before the flag existed. The
// reference functions ignore the flag. kv_rounded (with bf16) says K and V already hold bf16 values
// (a decoder's key/value cache, rounded once as each position is written: kernels/cpu/decoding.h):
// the kernels read them as they are instead of rounding them again. Rounding is idempotent, so the
// result is bit-identical; it saves re-rounding the whole (B, Tk, H, D) cache at every step.
//
// attention_forward / attention_backward are the fused kernels (attention.cpp: online softmax,
// O(T) memory). The *_reference functions (attention_reference.cpp) materialize the (B, H, Tq, Tk)
// matrices the textbook way: they are the test oracle and the naive side of the benchmark.
#pragma once
#include <algorithm>
#include <cstdint>

namespace pillars::cpu {

struct AttentionParams {
  int64_t B = 0, H = 0, Tq = 0, Tk = 0, D = 0; // batch, heads, query length, key length, head dim
  float scale = 1.0f;                          // usually 1/sqrt(D)
  bool causal = false;                         // query i sees keys j <= i + (Tk − Tq)
  const int32_t* key_lengths = nullptr;        // (B) or nullptr: keys j >= key_lengths[b] masked
  float dropout_p = 0.0f;                      // on the probabilities; 0 = off
  uint64_t seed = 0, rng_offset = 0;           // the Philox stream of the dropout mask
  bool bf16 = false;                           // the products' operands rounded to bf16 (below)
  bool kv_rounded = false;                     // bf16: K and V hold bf16 values already (below)
  int64_t q_batch_stride = 0, q_token_stride = 0;
  int64_t k_batch_stride = 0, k_token_stride = 0;
  int64_t v_batch_stride = 0, v_token_stride = 0;
  int64_t o_batch_stride = 0, o_token_stride = 0;
};

// Params for contiguous (B, Tq, H, D) queries/outputs and (B, Tk, H, D) keys/values.
AttentionParams attention_params_contiguous(int64_t B, int64_t H, int64_t Tq, int64_t Tk, int64_t D);

// The keys of batch row b that exist at all: [0, limit), limit = min(Tk, key_lengths[b]). The slots
// past it are padding and are never read, by any kernel: whatever they hold (a recycled buffer's
// NaN) cannot reach an output or a gradient, although 0 · NaN is NaN even where the mask zeroes the
// probability. dK and dV are zero there.
inline int64_t attention_key_limit(const AttentionParams& p, int64_t b) {
  const int64_t n = p.key_lengths ? std::min<int64_t>(p.Tk, p.key_lengths[b]) : p.Tk;
  return std::max<int64_t>(n, 0);
}

// The number of keys query row i of batch b may attend: it sees exactly keys [0, n).
inline int64_t attention_visible_keys(const AttentionParams& p, int64_t b, int64_t i) {
  int64_t n = p.Tk;
  if (p.key_lengths) n = std::min<int64_t>(n, p.key_lengths[b]);
  if (p.causal) n = std::min<int64_t>(n, i + 1 + p.Tk - p.Tq);
  return std::max<int64_t>(n, 0);
}

// ---- fused kernels (attention.cpp) ------------------------------------------------------------
void attention_forward(const AttentionParams& p, const float* Q, const float* K, const float* V, float* O, float* lse,
                       float* probs /* nullable */);

// dQ, dK, dV are overwritten (not accumulated); they use the strides of Q, K, V; dO those of O.
void attention_backward(const AttentionParams& p, const float* Q, const float* K, const float* V, const float* O,
                        const float* lse, const float* dO, float* dQ, float* dK, float* dV);

// Scratch the fused kernels keep per OpenMP thread (thread_local, grown once, then reused).
int64_t attention_scratch_bytes_per_thread(const AttentionParams& p, bool backward);

// Which tile kernels the fused path runs on this machine: "avx512", "avx2" or "generic"
// (follows cpu_features.h: detection, PILLARS_ISA, force_isa).
const char* attention_isa();

// ---- naive reference (attention_reference.cpp) ------------------------------------------------
void attention_forward_reference(const AttentionParams& p, const float* Q, const float* K, const float* V, float* O,
                                 float* lse, float* probs /* nullable */);
void attention_backward_reference(const AttentionParams& p, const float* Q, const float* K, const float* V,
                                  const float* O, const float* lse, const float* dO, float* dQ, float* dK, float* dV);

// The (B, H, Tq, Tk) matrices the reference allocates for one call.
int64_t attention_reference_scratch_bytes(const AttentionParams& p, bool backward);

} // namespace pillars::cpu
