// The CPU's matmul precision (base/precision.h), and the GEMM that follows it: the one the matmul
// op, the fused linear_act op and the fused linear_cross_entropy kernel call. Set once per process,
// before graphs run (the trainer sets it from train.precision for the training loop); fp32 until set.
//
//   fp32  sgemm (gemm.h) on the fp32 operands: exactly the call made before there was a choice.
//   bf16  both operands rounded to bf16 (to nearest, ties to even: kernels/bf16_bits.h) as
//         gemm_bf16_f32 (gemm_bf16.h) packs them: each product of two bf16 values is exact in fp32 and they are summed in
//         fp32, so with â = bf16(a), b̂ = bf16(b)
//             C = alpha · Σ_k â_k b̂_k + beta · C     up to fp32 summation (≈ K · 2⁻²⁴ · Σ|â b̂|),
//         while the rounding itself moves each operand by up to 2⁻⁸ of its value. C, alpha and beta
//         stay fp32. Which bf16 path runs (AMX, AVX512-BF16, portable) is gemm_bf16_path().
//
// Same arguments and layouts as sgemm / sgemm_batched. In bf16 the packed operands go to per-thread
// buffers that only grow, so after the largest shape nothing is allocated.
//
// Weights packed once (decoding: decode/step_decoder.h). While a Bf16WeightCache is installed
// (ScopedBf16Weights), a bf16 product whose B (unbatched or shared) is a matrix the cache allows
// uses the cache's packed copy of op(B), made on its first such product and kept for the cache's
// life: the same bits as packing B per call, without the packing. The cache keys on B's address,
// so an allowed matrix must not change while the cache is installed.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_set>

#include "base/precision.h"
#include "kernels/cpu/gemm_bf16.h"

namespace pillars::cpu {

void set_matmul_precision(Precision p);
Precision matmul_precision();

void gemm_at_precision(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                       int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc);

// `batch` independent products; operand i starts at X + i * stride_x (stride_b = 0: B shared).
void gemm_at_precision_batched(bool trans_a, bool trans_b, int64_t batch, int64_t M, int64_t N, int64_t K, float alpha,
                               const float* A, int64_t lda, int64_t stride_a, const float* B, int64_t ldb,
                               int64_t stride_b, float beta, float* C, int64_t ldc, int64_t stride_c);

// The process's matmul precision set for a scope, the previous one restored at its end.
class ScopedMatmulPrecision {
 public:
  explicit ScopedMatmulPrecision(Precision p);
  ~ScopedMatmulPrecision();
  ScopedMatmulPrecision(const ScopedMatmulPrecision&) = delete;
  ScopedMatmulPrecision& operator=(const ScopedMatmulPrecision&) = delete;

 private:
  Precision previous_;
};

class Bf16WeightCache {
 public:
  // B's storage (a parameter's data) may be packed.
  void allow(const float* data);
  // The packed op(B) when B is allowed (packed now on its first use), else nullptr. Thread-safe.
  const Bf16PackedB* find_or_pack(bool trans_b, int64_t N, int64_t K, const float* B, int64_t ldb);
  int64_t packed_matrices() const;
  int64_t packed_bytes() const;

 private:
  mutable std::mutex mutex_;
  std::unordered_set<const float*> allowed_;
  std::multimap<const float*, std::unique_ptr<Bf16PackedB>> packed_;
  int64_t bytes_ = 0;
};

// Installs a cache (nullptr: none) for the scope; the previous one comes back at its end.
class ScopedBf16Weights {
 public:
  explicit ScopedBf16Weights(Bf16WeightCache* cache);
  ~ScopedBf16Weights();
  ScopedBf16Weights(const ScopedBf16Weights&) = delete;
  ScopedBf16Weights& operator=(const ScopedBf16Weights&) = delete;

 private:
  Bf16WeightCache* previous_;
};

} // namespace pillars::cpu
