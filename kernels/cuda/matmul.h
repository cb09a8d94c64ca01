// Matrix products on the GPU through cuBLAS: the plain-pointer API under the matmul op (adapter:
// engine/ops/cuda/matmul.cu; how row-major products map onto cuBLAS: matmul.cu). Row-major f32
// device arrays:
//
//   A (batch, M, K), or (batch, K, M) when trans_a
//   B (batch, K, N), or (batch, N, K) when trans_b; with b_shared a single 2-D (K, N) / (N, K)
//     matrix shared by every batch (a linear layer's weight)
//   C (batch, M, N) = alpha · op(A) · op(B)
//
// K = 0 writes zeros (an empty sum). Queued on cuda::stream() in the precision of
// cuda::precision(). Plain C++: callable from host code compiled without nvcc.
#pragma once
#include <cstdint>

namespace pillars::cuda {

void matmul(bool trans_a, bool trans_b, int64_t batch, int64_t M, int64_t N, int64_t K, bool b_shared, float alpha,
            const float* A, const float* B, float* C);

// One 2-D product that may add to C: C (M, N) = alpha · op(A) · op(B) + beta · C (beta = 0: C is
// only written). K must be positive.
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, const float* B,
          float beta, float* C);

} // namespace pillars::cuda
