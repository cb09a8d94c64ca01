// The Gram matrix of per-head feature maps on the CPU. In float32, GHT's HUDS and GCT input: the
// plain-pointer API under the head_gram ops (adapters: engine/ops/head_gram.cpp), the same
// functions as kernels/cuda/head_gram.h. In float64 (head_gram_f64, CPU only), the X-Raying head
// metrics' feature-map Gram:
//
//   head_gram           x (B, T, H, D) f32, lengths (B) i32 or null → G (H, H) f32;
//                       workspace: head_gram_workspace(a) bytes
//                       G[i, j] = Σ_{b, t < len_b, d} x[b,t,i,d] · x[b,t,j,d]
//   head_gram_backward  x (B, T, H, D) f32, dG (H, H) f32, lengths (B) i32 or null → dx (B, T, H, D)
//                       dx[b,t,i,:] = Σ_j (dG + dGᵀ)[i, j] · x[b,t,j,:] on valid tokens, 0 on padding
//   head_gram_f64       rows (N, H·D) f64 → G (H, H) f64
//                       G[i, j] = Σ_{n, d} rows[n, i·D + d] · rows[n, j·D + d]
//
// Token t = b·T + s is valid when s < lengths[b] (all tokens without lengths; the caller checks
// that every length is in [0, T], with head_gram_check_lengths). The forward sums tokens in fixed
// chunks of 32 (a partial H × H in double per chunk, in the workspace), then adds the chunks in
// order: deterministic for any thread count.
//
// head_gram_f64 is the same Gram matrix in float64, for the X-Raying head metrics (ght/xray.cpp).
// Why float64: the metrics are measured, not differentiated. They run once per evaluation on
// tensors fetched from a forward pass, so double costs nothing that matters and keeps their long
// sums accurate, while the graph op above, which training differentiates on every step (on either
// device), stays float32. Its input is already the N valid positions, gathered by the caller; it
// runs serially, the positions in order.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/args/head_gram.h"

namespace pillars::cpu {

using kernels::HeadGramArgs; // kernels/args/head_gram.h, shared with the other device

// x (B, T, H, D), lengths (B) or null → G (H, H); workspace: head_gram_workspace(a) bytes.
void head_gram(const HeadGramArgs& a, const float* x, const int32_t* lengths, float* G, void* workspace);
size_t head_gram_workspace(const HeadGramArgs& a);
// x (B, T, H, D), dG (H, H), lengths (B) or null → dx (B, T, H, D).
void head_gram_backward(const HeadGramArgs& a, const float* x, const float* dG, const int32_t* lengths, float* dx);
// Throws pillars::Error naming the first lengths[b] outside [0, T]. lengths: (B).
void head_gram_check_lengths(const HeadGramArgs& a, const int32_t* lengths);

struct HeadGramRowsArgs {
  int64_t N = 0, H = 0, D = 0; // rows is (N, H·D): N positions, each the H heads' D features
};
// G[i, j] = Σ_n ⟨rows[n, i·D : (i+1)·D], rows[n, j·D : (j+1)·D]⟩, summed over n in order (the upper
// triangle, then mirrored).
//   rows: (N, H·D) row-major; G: (H, H) row-major
void head_gram_f64(const HeadGramRowsArgs& a, const double* rows, double* G);

} // namespace pillars::cpu
