// The Gram matrix of per-head feature maps on the GPU (GHT's HUDS and GCT input): the
// plain-pointer API under the head_gram ops (adapters: engine/ops/cuda/head_gram.cu; the
// deterministic algorithm: head_gram.cu). Device arrays:
//
//   head_gram           x (B, T, H, D) f32, lengths (B) i32 or null → G (H, H) f32;
//                       workspace: head_gram_workspace(B, T, H) bytes
//   head_gram_backward  x (B, T, H, D) f32, dG (H, H) f32, lengths (B) i32 or null → dx (B, T, H, D)
//
// Token t = b·T + s is valid when s < lengths[b] (all tokens without lengths).
// Queued on cuda::stream(). Plain C++: callable from host code compiled without nvcc.
#pragma once
#include <cstddef>
#include <cstdint>

namespace pillars::cuda {

void head_gram(const float* x, const int32_t* lengths, float* G, int64_t B, int64_t T, int64_t H, int64_t D,
               void* workspace);
size_t head_gram_workspace(int64_t B, int64_t T, int64_t H);
void head_gram_backward(const float* x, const float* dG, const int32_t* lengths, float* dx, int64_t B, int64_t T,
                        int64_t H, int64_t D);

} // namespace pillars::cuda
