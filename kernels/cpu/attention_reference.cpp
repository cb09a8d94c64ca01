// Naive, materialized attention: the textbook formulas over whole (B, H, Tq, Tk) matrices.
// It is the oracle the fused kernels (attention.cpp) are tested against and the "naive" side of
// `pillars bench attention`, so it is written the straightforward way — two sgemm calls per
// (batch, head) and a plain softmax — and shares nothing with the fused path but the mask rule
// (attention_visible_keys) and the Philox stream.
//
//   forward:  S = scale · Q Kᵀ + mask,  P = softmax(S) (row-wise),  O = (P ∘ Z) V
//   backward: dV = (P∘Z)ᵀ dO,  dP = (dO Vᵀ) ∘ Z,  dS_ij = P_ij (dP_ij − Σ_k P_ik dP_ik),
//             dQ = scale · dS K,  dK = scale · dSᵀ Q
// where Z_ij ∈ {0, 1/(1−p)} are the dropout multipliers. The backward recomputes P by a full
// softmax (it does not use the saved lse or O), so the test also checks the fused path's use of them.
// Every product runs over the keys of batch row b that exist, [0, attention_key_limit(p, b)): the
// padding slots past them are never read (a NaN there would survive P = 0 as 0 · NaN), the matrices'
// columns past them are 0, and so are dK and dV there.
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <vector>

#include "kernels/cpu/attention.h"
#include "kernels/cpu/gemm.h"
#include "kernels/philox.h"

namespace pillars::cpu {
namespace {

// Matrices of the reference: (B, H, Tq, Tk), contiguous; head (b, h) starts at ((b·H + h)·Tq·Tk).
using Matrix = std::vector<float>;

int64_t matrix_elems(const AttentionParams& p) { return p.B * p.H * p.Tq * p.Tk; }

// Matrix number `slot` of the calling thread, resized to the problem. The buffers only grow, like
// a framework's caching allocator, so that the benchmark times the materialized computation and
// its memory traffic rather than the kernel zeroing fresh pages on every call.
Matrix& matrix(int slot, const AttentionParams& p) {
  thread_local Matrix matrices[3];
  matrices[slot].resize(static_cast<size_t>(matrix_elems(p)));
  return matrices[slot];
}

const float* head(const float* x, int64_t batch_stride, const AttentionParams& p, int64_t b, int64_t h) {
  return x + b * batch_stride + h * p.D;
}
float* head(float* x, int64_t batch_stride, const AttentionParams& p, int64_t b, int64_t h) {
  return x + b * batch_stride + h * p.D;
}

// P ← softmax(scale · Q Kᵀ + mask), row by row; lse (nullable) ← log Σ exp of the masked logits.
// A row that sees no key becomes all zeros with lse = −inf.
void softmax_probabilities(const AttentionParams& p, const float* Q, const float* K, Matrix& P, float* lse) {
  for (int64_t b = 0; b < p.B; ++b)
    for (int64_t h = 0; h < p.H; ++h) // S (Tq, keys of row b); the columns past them stay unread
      sgemm(false, true, p.Tq, attention_key_limit(p, b), p.D, p.scale, head(Q, p.q_batch_stride, p, b, h),
            p.q_token_stride, head(K, p.k_batch_stride, p, b, h), p.k_token_stride, 0.0f,
            P.data() + (b * p.H + h) * p.Tq * p.Tk, p.Tk);
#pragma omp parallel for
  for (int64_t row = 0; row < p.B * p.H * p.Tq; ++row) {
    const int64_t b = row / (p.H * p.Tq), i = row % p.Tq;
    const int64_t visible = attention_visible_keys(p, b, i);
    float* s = P.data() + row * p.Tk;
    float max = -std::numeric_limits<float>::infinity(), sum = 0.0f;
    for (int64_t j = 0; j < visible; ++j) max = std::max(max, s[j]);
    for (int64_t j = 0; j < visible; ++j) sum += (s[j] = std::exp(s[j] - max));
    for (int64_t j = 0; j < p.Tk; ++j) s[j] = j < visible ? s[j] / sum : 0.0f;
    if (lse) lse[row] = visible ? max + std::log(sum) : -std::numeric_limits<float>::infinity();
  }
}

// The dropout multiplier Z of flat element `index` of the (B, H, Tq, Tk) matrix.
float dropout_multiplier(const AttentionParams& p, int64_t index) {
  return philox_uniform(p.seed, p.rng_offset, static_cast<uint64_t>(index)) >= p.dropout_p ? 1.0f / (1.0f - p.dropout_p)
                                                                                           : 0.0f;
}

// Y ← Z ∘ X, elementwise.
void apply_dropout(const AttentionParams& p, const Matrix& X, Matrix& Y) {
  for (int64_t e = 0; e < matrix_elems(p); ++e) Y[e] = X[e] * dropout_multiplier(p, e);
}

} // namespace

int64_t attention_reference_scratch_bytes(const AttentionParams& p, bool backward) {
  // forward: P (and P∘Z); backward: P, dP/dS (and P∘Z)
  const int64_t matrices = (backward ? 2 : 1) + (p.dropout_p > 0.0f ? 1 : 0);
  return matrices * matrix_elems(p) * static_cast<int64_t>(sizeof(float));
}

void attention_forward_reference(const AttentionParams& p, const float* Q, const float* K, const float* V, float* O,
                                 float* lse, float* probs) {
  Matrix& P = matrix(0, p); // (B, H, Tq, Tk): S, then softmax(S) in place
  softmax_probabilities(p, Q, K, P, lse);
  if (probs) std::copy(P.begin(), P.end(), probs);
  const bool dropout = p.dropout_p > 0.0f;
  if (dropout) apply_dropout(p, P, matrix(2, p)); // (B, H, Tq, Tk): P ∘ Z
  const Matrix& A = dropout ? matrix(2, p) : P;
  for (int64_t b = 0; b < p.B; ++b)
    for (int64_t h = 0; h < p.H; ++h) // O = (P∘Z) V over the keys that exist
      sgemm(false, false, p.Tq, p.D, attention_key_limit(p, b), 1.0f, A.data() + (b * p.H + h) * p.Tq * p.Tk, p.Tk,
            head(V, p.v_batch_stride, p, b, h), p.v_token_stride, 0.0f, head(O, p.o_batch_stride, p, b, h),
            p.o_token_stride);
}

void attention_backward_reference(const AttentionParams& p, const float* Q, const float* K, const float* V,
                                  const float* O, const float* lse, const float* dO, float* dQ, float* dK, float* dV) {
  Matrix& P = matrix(0, p);  // (B, H, Tq, Tk) softmax probabilities
  Matrix& dP = matrix(1, p); // (B, H, Tq, Tk) dP, then dS in place
  softmax_probabilities(p, Q, K, P, nullptr);
  const bool dropout = p.dropout_p > 0.0f;
  if (dropout) apply_dropout(p, P, matrix(2, p)); // (B, H, Tq, Tk): P ∘ Z
  const Matrix& A = dropout ? matrix(2, p) : P;
  const int64_t TT = p.Tq * p.Tk;
  for (int64_t b = 0; b < p.B; ++b)
    for (int64_t h = 0; h < p.H; ++h) {
      const int64_t bh = (b * p.H + h) * TT, keys = attention_key_limit(p, b);
      const float* dout = head(dO, p.o_batch_stride, p, b, h);
      // dV = (P∘Z)ᵀ dO
      sgemm(true, false, keys, p.D, p.Tq, 1.0f, A.data() + bh, p.Tk, dout, p.o_token_stride, 0.0f,
            head(dV, p.v_batch_stride, p, b, h), p.v_token_stride);
      // dP = dO Vᵀ
      sgemm(false, true, p.Tq, keys, p.D, 1.0f, dout, p.o_token_stride, head(V, p.v_batch_stride, p, b, h),
            p.v_token_stride, 0.0f, dP.data() + bh, p.Tk);
    }
#pragma omp parallel for
  for (int64_t row = 0; row < p.B * p.H * p.Tq; ++row) { // dS = P ∘ (dP∘Z − rowsum(P ∘ dP∘Z))
    const int64_t keys = attention_key_limit(p, row / (p.H * p.Tq));
    float* g = dP.data() + row * p.Tk;
    const float* prob = P.data() + row * p.Tk;
    if (dropout)
      for (int64_t j = 0; j < keys; ++j) g[j] *= dropout_multiplier(p, row * p.Tk + j);
    float dot = 0.0f;
    for (int64_t j = 0; j < keys; ++j) dot += prob[j] * g[j];
    for (int64_t j = 0; j < keys; ++j) g[j] = prob[j] * (g[j] - dot);
  }
  for (int64_t b = 0; b < p.B; ++b)
    for (int64_t h = 0; h < p.H; ++h) {
      const int64_t keys = attention_key_limit(p, b);
      const float* dS = dP.data() + (b * p.H + h) * TT;
      // dQ = scale · dS K,  dK = scale · dSᵀ Q  (over the keys that exist; dK is 0 past them)
      sgemm(false, false, p.Tq, p.D, keys, p.scale, dS, p.Tk, head(K, p.k_batch_stride, p, b, h), p.k_token_stride,
            0.0f, head(dQ, p.q_batch_stride, p, b, h), p.q_token_stride);
      sgemm(true, false, keys, p.D, p.Tq, p.scale, dS, p.Tk, head(Q, p.q_batch_stride, p, b, h), p.q_token_stride, 0.0f,
            head(dK, p.k_batch_stride, p, b, h), p.k_token_stride);
      for (int64_t j = keys; j < p.Tk; ++j)
        for (float* grad : {head(dK, p.k_batch_stride, p, b, h) + j * p.k_token_stride,
                            head(dV, p.v_batch_stride, p, b, h) + j * p.v_token_stride})
          std::fill(grad, grad + p.D, 0.0f);
    }
}

} // namespace pillars::cpu
