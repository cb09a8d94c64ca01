// The Gram matrix of per-head feature maps on the CPU (GHT's HUDS and GCT input): the plain-pointer
// API under the head_gram ops (adapters: engine/ops/head_gram.cpp), the same functions as
// kernels/cuda/head_gram.h:
//
//   head_gram           x (B, T, H, D) f32, lengths (B) i32 or null → G (H, H) f32;
//                       workspace: head_gram_workspace(a) bytes
//                       G[i, j] = Σ_{b, t < len_b, d} x[b,t,i,d] · x[b,t,j,d]
//   head_gram_backward  x (B, T, H, D) f32, dG (H, H) f32, lengths (B) i32 or null → dx (B, T, H, D)
//                       dx[b,t,i,:] = Σ_j (dG + dGᵀ)[i, j] · x[b,t,j,:] on valid tokens, 0 on padding
//
// Token t = b·T + s is valid when s < lengths[b] (all tokens without lengths; the caller checks
// that every length is in [0, T], with head_gram_check_lengths). The forward sums tokens in fixed
// chunks of 32 (a partial H × H in double per chunk, in the workspace), then adds the chunks in
// order: deterministic for any thread count.
#pragma once
#include <cstddef>
#include <cstdint>

namespace pillars::cpu {

struct HeadGramArgs {
  int64_t B = 0, T = 0, H = 0, D = 0; // x is (B, T, H, D)
};

// x (B, T, H, D), lengths (B) or null → G (H, H); workspace: head_gram_workspace(a) bytes.
void head_gram(const HeadGramArgs& a, const float* x, const int32_t* lengths, float* G, void* workspace);
size_t head_gram_workspace(const HeadGramArgs& a);
// x (B, T, H, D), dG (H, H), lengths (B) or null → dx (B, T, H, D).
void head_gram_backward(const HeadGramArgs& a, const float* x, const float* dG, const int32_t* lengths, float* dx);
// Throws pillars::Error naming the first lengths[b] outside [0, T]. lengths: (B).
void head_gram_check_lengths(const HeadGramArgs& a, const int32_t* lengths);

} // namespace pillars::cpu
