// The Gram matrix of per-head feature maps on the GPU (GHT's HUDS and GCT input): the
// plain-pointer API under the head_gram ops (adapters: engine/ops/cuda/head_gram.cu; the
// deterministic algorithm: head_gram.cu). Device arrays:
//
//   head_gram           x (B, T, H, D) f32, lengths (B) i32 or null → G (H, H) f32;
//                       workspace: head_gram_workspace(a) bytes
//   head_gram_backward  x (B, T, H, D) f32, dG (H, H) f32, lengths (B) i32 or null → dx (B, T, H, D)
//
// Token t = b·T + s is valid when s < lengths[b] (all tokens without lengths).
// Queued on cuda::stream(). Plain C++: callable from host code compiled without nvcc.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/args/head_gram.h"

namespace pillars::cuda {

using kernels::HeadGramArgs; // kernels/args/head_gram.h, shared with the other device

// x (B, T, H, D), lengths (B) or null → G (H, H); workspace: head_gram_workspace(a) bytes.
void head_gram(const HeadGramArgs& a, const float* x, const int32_t* lengths, float* G, void* workspace);
size_t head_gram_workspace(const HeadGramArgs& a);
// x (B, T, H, D), dG (H, H), lengths (B) or null → dx (B, T, H, D).
void head_gram_backward(const HeadGramArgs& a, const float* x, const float* dG, const int32_t* lengths, float* dx);

} // namespace pillars::cuda
