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

namespace pillars::cuda {

void embedding_forward(const float* table, const int32_t* ids, float* out, int64_t n, int64_t V, int64_t D);
void embedding_backward(const float* dout, const int32_t* ids, float* dtable, int64_t n, int64_t V, int64_t D);

} // namespace pillars::cuda
