// Embedding gather and its gradient on the GPU: the plain-pointer API under the embedding ops
// (adapters: engine/ops/cuda/embedding.cu; the algorithm: embedding.cu). Device arrays:
//
//   embedding_forward   table (V, D) f32, ids (n) i32 → out (n, D) f32; out[i, :] = table[ids[i], :]
//                       (a zero row for an id outside [0, V))
//   embedding_backward  dout (n, D) f32, ids (n) i32 → dtable (V, D) f32, zeroed first;
//                       dtable[v, :] = Σ_{i : ids[i] = v} dout[i, :] (atomics: not deterministic)
//
// Queued on cuda::stream(). Plain C++: callable from host code compiled without nvcc.
#pragma once
#include <cstdint>

#include "kernels/args/embedding.h"

namespace pillars::cuda {

using kernels::EmbeddingArgs; // kernels/args/embedding.h, shared with the other device

// table (V, D), ids (n) → out (n, D).
void embedding_forward(const EmbeddingArgs& a, const float* table, const int32_t* ids, float* out);
// dout (n, D), ids (n) → dtable (V, D).
void embedding_backward(const EmbeddingArgs& a, const float* dout, const int32_t* ids, float* dtable);

} // namespace pillars::cuda
