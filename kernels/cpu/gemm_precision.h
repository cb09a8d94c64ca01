// The CPU's matmul precision (base/precision.h), and the GEMM that follows it: the one the matmul
// op, the fused linear_act op and the fused linear_cross_entropy kernel call. Set once per process,
// before graphs run (the trainer sets it from train.precision for the training loop); fp32 until set.
//
//   fp32  sgemm (gemm.h) on the fp32 operands: exactly the call made before there was a choice.
//   bf16  both operands rounded to bf16 (to nearest, ties to even: cast.h), then gemm_bf16
//         (gemm_bf16.h): each product of two bf16 values is exact in fp32 and they are summed in
//         fp32, so with â = bf16(a), b̂ = bf16(b)
//             C = alpha · Σ_k â_k b̂_k + beta · C     up to fp32 summation (≈ K · 2⁻²⁴ · Σ|â b̂|),
//         while the rounding itself moves each operand by up to 2⁻⁸ of its value. C, alpha and beta
//         stay fp32. Which bf16 path runs (AMX, AVX512-BF16, portable) is gemm_bf16_path().
//
// Same arguments and layouts as sgemm / sgemm_batched. In bf16 the rounded copies of A and B go to
// per-thread buffers that only grow, so after the largest shape nothing is allocated.
#pragma once
#include <cstdint>

#include "base/precision.h"

namespace pillars::cpu {

void set_matmul_precision(Precision p);
Precision matmul_precision();

void gemm_at_precision(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                       int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc);

// `batch` independent products; operand i starts at X + i * stride_x (stride_b = 0: B shared).
void gemm_at_precision_batched(bool trans_a, bool trans_b, int64_t batch, int64_t M, int64_t N, int64_t K, float alpha,
                               const float* A, int64_t lda, int64_t stride_a, const float* B, int64_t ldb,
                               int64_t stride_b, float beta, float* C, int64_t ldc, int64_t stride_c);

} // namespace pillars::cpu
