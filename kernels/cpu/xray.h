// The loops of the X-Raying head metrics (ght/xray.cpp, which defines the metrics, normalizes them
// and documents them in ght/xray.h). Everything is float64: the metrics are measured on tensors
// fetched from a forward pass, never differentiated. Sizes: N valid positions (query tokens), H
// heads of D features each, M = H·D; probs is (B, H, Tq, Tk). A matrix X (N, M) holds the valid
// positions of a per-head map, row n the H heads' features of position n (head h at columns
// h·D .. h·D + D − 1), gathered by the caller.
//
//   xray_cross_gram           X (N, M) → S (M, M) = XᵀX; its D × D block (i, j) is X_iᵀ X_j
//   xray_block_norms          S (M, M) → per block (i, j): Σ|·|, ‖·‖_F, trace, each (H, H)
//   xray_cosine_sums          X (N, M) → C (H, H) = Σ_n cos(x_i(n), x_j(n)), upper triangle
//   xray_attention_variance   probs, lengths → per head: Σ over valid rows of the row's variance, rows
//   xray_probs_gram           probs, lengths → G (H, H) = Σ over valid rows and keys of a_i · a_j
//
// xray_cross_gram carries the cost, N·M²/2 multiply-adds (1e8 for M = 512 and 800 tokens): it is
// parallel over blocks of rows of S, its row loop compiled three times, once per ISA
// (PILLARS_PER_ISA, kernels/cpu/vec_math.h), so PILLARS_ISA picks the code and one ISA gives the
// same bits on every machine and thread count. The others are serial and sum in index order, but
// for the dot products of xray_cosine_sums (baseline SIMD reductions, the same on every machine).
#pragma once
#include <cstdint>

namespace pillars::cpu {

struct XrayCrossGramArgs {
  int64_t N = 0, M = 0; // X is (N, M)
};
// S[r, c] = Σ_n X[n, r] · X[n, c] (symmetric: computed right of the diagonal, then mirrored).
//   X: (N, M) row-major; S: (M, M) row-major
void xray_cross_gram(const XrayCrossGramArgs& a, const double* X, double* S);

struct XrayBlockNormsArgs {
  int64_t H = 0, D = 0; // S is (H·D, H·D): H × H blocks of D × D
};
// For the D × D block B_ij = S[i·D .. i·D + D − 1, j·D .. j·D + D − 1]:
//   abs_sum[i, j] = Σ_{d,e} |B_ij[d, e]|,  frobenius[i, j] = sqrt(Σ_{d,e} B_ij[d, e]²),
//   trace[i, j] = Σ_d B_ij[d, d]  (each sum in row-major order of the block)
//   S: (H·D, H·D) row-major; abs_sum, frobenius, trace: (H, H) row-major
void xray_block_norms(const XrayBlockNormsArgs& a, const double* S, double* abs_sum, double* frobenius, double* trace);

struct XrayCosineSumsArgs {
  int64_t N = 0, H = 0, D = 0; // X is (N, H·D)
  double eps = 1e-8;           // the cosine's clamp
};
// C[i, j] = Σ_n cos(x_i(n), x_j(n)) for i ≤ j, 0 below the diagonal, with x_h(n) = X[n, h·D ..
// h·D + D − 1] and cos(x, y) = ⟨x, y⟩ / sqrt(max(‖x‖²‖y‖², eps²)).
//   X: (N, H·D) row-major; C: (H, H) row-major
void xray_cosine_sums(const XrayCosineSumsArgs& a, const double* X, double* C);

struct XrayProbsArgs {
  int64_t B = 0, H = 0, Tq = 0, Tk = 0; // probs is (B, H, Tq, Tk)
  bool causal = false;                  // query t sees keys j ≤ t + Tk − Tq (bottom-right alignment)
};
// The valid rows of batch row b are r < query_lengths[b]; row r's valid keys are j < K_r with
// K_r = key_lengths[b], and K_r = min(K_r, r + Tk − Tq + 1) (at least 0) when causal. Per head h,
// over the valid rows with K_r > 0 (a row that sees no key has no distribution):
//   var_sum[h] = Σ_r (1/K_r) Σ_{j<K_r} (a_rj − ā_r)²,  ā_r = (1/K_r) Σ_{j<K_r} a_rj,  rows[h] = their count
//   probs: (B, H, Tq, Tk) f32 row-major; query_lengths, key_lengths: (B), each in [0, Tq] and
//   [0, Tk] (the caller checks); var_sum: (H); rows: (H)
void xray_attention_variance(const XrayProbsArgs& a, const float* probs, const int32_t* query_lengths,
                             const int32_t* key_lengths, double* var_sum, int64_t* rows);
// G[i, j] = Σ_b Σ_{r < query_lengths[b]} Σ_{k < key_lengths[b]} a_i[b, r, k] · a_j[b, r, k], with
// a_h[b, r, :] = probs[b, h, r, :]: the Gram matrix of the attention weights (head_gram of the
// permuted probs (B, Tq, H, Tk), in float64 and over the valid keys only). causal is not read: the
// keys a causal row cannot see have weight 0 in every head.
//   probs: (B, H, Tq, Tk) f32 row-major; query_lengths, key_lengths: (B); G: (H, H) row-major
void xray_probs_gram(const XrayProbsArgs& a, const float* probs, const int32_t* query_lengths,
                     const int32_t* key_lengths, double* G);

} // namespace pillars::cpu
