// SGEMM on the CPU: C = alpha · op(A) · op(B) + beta · C, row-major, op(X) = X or Xᵀ.
//
//   op(A): (M, K)   A is stored (M, K) with row stride lda, or (K, M) when trans_a
//   op(B): (K, N)   B is stored (K, N) with row stride ldb, or (N, K) when trans_b
//   C:     (M, N)   row stride ldc
//
// Threads with OpenMP when called outside a parallel region; single-threaded inside one (so a
// kernel may call it per (batch, head) from its own parallel loop). Never allocates once the
// largest shape has been seen (packing buffers are per-thread and only grow).
#pragma once
#include <cstdint>

namespace pillars::cpu {

void sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
           const float* B, int64_t ldb, float beta, float* C, int64_t ldc);

// `batch` independent products; operand i starts at X + i * stride_x.
void sgemm_batched(bool trans_a, bool trans_b, int64_t batch, int64_t M, int64_t N, int64_t K, float alpha,
                   const float* A, int64_t lda, int64_t stride_a, const float* B, int64_t ldb, int64_t stride_b,
                   float beta, float* C, int64_t ldc, int64_t stride_c);

// The obvious triple loop (double accumulation): the oracle for tests.
void sgemm_reference(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                     int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc);

} // namespace pillars::cpu
