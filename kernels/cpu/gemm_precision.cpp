// The GEMM at the CPU's matmul precision; see gemm_precision.h.
//
// bf16: op(A) is stored as `rows × cols` with row stride ld (rows = M, cols = K, or the transpose
// when trans_a); its rounded copy is the same matrix packed (row stride cols), so gemm_bf16 gets
// the same transpose flags with ld = cols. A shared B (stride_b = 0) is rounded once.
#include "kernels/cpu/gemm_precision.h"

#include <omp.h>

#include <atomic>
#include <vector>

#include "kernels/cpu/cast.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/gemm_bf16.h"

namespace pillars::cpu {

namespace {

std::atomic<Precision> g_precision{Precision::fp32};

// Grows, never shrinks: one per thread and operand.
thread_local std::vector<uint16_t> t_rounded_a, t_rounded_b;

// The stored matrices X + i · stride (i < batch), each rows × cols with row stride ld, rounded to
// bf16 into `out`, packed: matrix i at i · rows · cols, row stride cols.
const uint16_t* round_to_bf16(const float* X, int64_t batch, int64_t stride, int64_t rows, int64_t cols, int64_t ld,
                              std::vector<uint16_t>& out) {
  const size_t size = static_cast<size_t>(batch * rows * cols);
  if (out.size() < size) out.resize(size);
  uint16_t* y = out.data();
  if (ld == cols && (batch == 1 || stride == rows * cols)) { // one contiguous run: one (threaded) conversion
    f32_to_bf16(X, y, batch * rows * cols);
    return y;
  }
  for (int64_t i = 0; i < batch; ++i)
    for (int64_t r = 0; r < rows; ++r) f32_to_bf16(X + i * stride + r * ld, y + (i * rows + r) * cols, cols);
  return y;
}

} // namespace

void set_matmul_precision(Precision p) { g_precision.store(p, std::memory_order_relaxed); }
Precision matmul_precision() { return g_precision.load(std::memory_order_relaxed); }

void gemm_at_precision(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                       const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  gemm_at_precision_batched(ta, tb, 1, M, N, K, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0);
}

void gemm_at_precision_batched(bool ta, bool tb, int64_t batch, int64_t M, int64_t N, int64_t K, float alpha,
                               const float* A, int64_t lda, int64_t sa, const float* B, int64_t ldb, int64_t sb,
                               float beta, float* C, int64_t ldc, int64_t sc) {
  if (matmul_precision() == Precision::fp32) {
    if (batch == 1) return sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return sgemm_batched(ta, tb, batch, M, N, K, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc);
  }
  if (batch == 0 || M == 0 || N == 0) return;
  // Stored shapes: A (M, K) or (K, M) when ta; B (K, N) or (N, K) when tb.
  const int64_t a_rows = ta ? K : M, a_cols = ta ? M : K;
  const int64_t b_rows = tb ? N : K, b_cols = tb ? K : N;
  const uint16_t* A16 = round_to_bf16(A, batch, sa, a_rows, a_cols, lda, t_rounded_a);
  const uint16_t* B16 = round_to_bf16(B, sb == 0 ? 1 : batch, sb, b_rows, b_cols, ldb, t_rounded_b);
  const int64_t a_step = a_rows * a_cols, b_step = sb == 0 ? 0 : b_rows * b_cols;
  const auto product = [&](int64_t i) {
    gemm_bf16(ta, tb, M, N, K, alpha, A16 + i * a_step, a_cols, B16 + i * b_step, b_cols, beta, C + i * sc, ldc);
  };
  // Many products (the per-head products of attention composed from ops): one per thread at a
  // time, each single-threaded inside the parallel region. Few: one after another, each threaded.
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  if (threads > 1 && batch >= 2 * int64_t(threads)) {
#pragma omp parallel for num_threads(threads) schedule(dynamic)
    for (int64_t i = 0; i < batch; ++i) product(i);
    return;
  }
  for (int64_t i = 0; i < batch; ++i) product(i);
}

} // namespace pillars::cpu
