// Matrix products on the GPU through cuBLAS.
//
//   C (…, M, N) = α · op(A) (…, M, K) · op(B) (…, K, N),  op = transpose when trans_a / trans_b;
//   B is either batched like A or a shared 2-D matrix (a linear layer's weight).
//
// cuBLAS is column-major; our tensors are row-major. A row-major matrix read column-major is its
// transpose, so C = op(A)·op(B) is computed as Cᵀ = op(B)ᵀ · op(A)ᵀ: cuBLAS gets B as its first
// operand and A as its second, with the same transpose flags, and writes Cᵀ column-major — which
// is C row-major. No data moves.
//
// Precision (cuda::precision()): fp32 runs CUBLAS_COMPUTE_32F_PEDANTIC (true fp32 products, no
// TF32: the exactness mode); bf16 runs CUBLAS_COMPUTE_32F_FAST_16BF (operands rounded to bf16 on
// the tensor cores, fp32 accumulation, fp32 in and out).
// The API is matmul.h; engine/ops/cuda/matmul.cu adapts the op to it.
#include "kernels/cuda/matmul.h"

#include "runtime/cuda_runtime.h"

namespace pillars::cuda {
namespace {

cublasComputeType_t compute_type() {
  return precision() == Precision::fp32 ? CUBLAS_COMPUTE_32F_PEDANTIC : CUBLAS_COMPUTE_32F_FAST_16BF;
}

// Row-major C (batch × M × N) = α op(A) op(B) + β C; lda/ldb are the row-major leading dimensions.
void gemm_row_major(bool ta, bool tb, int64_t batch, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                    int64_t lda, int64_t stride_a, const float* B, int64_t ldb, int64_t stride_b, float beta, float* C,
                    int64_t stride_c) {
  PILLARS_CHECK(M <= INT32_MAX && N <= INT32_MAX && K <= INT32_MAX && batch <= INT32_MAX,
                "matmul: extents too large for cuBLAS");
  PILLARS_CUDA_CHECK(cublasGemmStridedBatchedEx(
      cublas(), tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, static_cast<int>(N),
      static_cast<int>(M), static_cast<int>(K), &alpha, B, CUDA_R_32F, static_cast<int>(ldb), stride_b, A, CUDA_R_32F,
      static_cast<int>(lda), stride_a, &beta, C, CUDA_R_32F, static_cast<int>(N), stride_c, static_cast<int>(batch),
      compute_type(), CUBLAS_GEMM_DEFAULT));
}

} // namespace

void matmul(bool ta, bool tb, int64_t batch, int64_t M, int64_t N, int64_t K, bool b_shared, float alpha,
            const float* A, const float* B, float* C) {
  if (M == 0 || N == 0 || batch == 0) return;
  if (K == 0) { // an empty sum
    PILLARS_CUDA_CHECK(cudaMemsetAsync(C, 0, static_cast<size_t>(batch * M * N) * sizeof(float), stream()));
    return;
  }
  const int64_t lda = ta ? M : K, ldb = tb ? K : N;
  if (b_shared && !ta) { // every batch's rows at once: one large GEMM
    gemm_row_major(false, tb, 1, batch * M, N, K, alpha, A, lda, 0, B, ldb, 0, 0.0f, C, 0);
    return;
  }
  gemm_row_major(ta, tb, batch, M, N, K, alpha, A, lda, M * K, B, ldb, b_shared ? 0 : K * N, 0.0f, C, M * N);
}

void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, const float* B, float beta,
          float* C) {
  if (M == 0 || N == 0) return;
  PILLARS_CHECK(K > 0, "gemm: K = 0 is not supported (use matmul for an empty sum)");
  gemm_row_major(ta, tb, 1, M, N, K, alpha, A, ta ? M : K, 0, B, tb ? K : N, 0, beta, C, 0);
}

} // namespace pillars::cuda
