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
// Weights rounded and packed once: for decoding (decode/step_decoder.h) and for each training
// update (train/device_scope.h). While a Bf16WeightCache is installed (ScopedBf16Weights), a bf16
// product whose B (unbatched or shared) is a matrix the cache allows reads the cache's copies:
//   - the first product that reads an allowed B rounds all of B's stored rows × cols to bf16,
//     once, into a dense copy (round_to_bf16: the rounding packing does, kernels/bf16_bits.h);
//   - each layout of op(B) (trans_b true and false: a weight's x·Wᵀ and dY·W) is packed from that
//     copy on its first product (Bf16PackedB; packing bf16 only moves values) and then reused.
// Both are kept until reset() (the trainer's next update) or the cache's end: the same bits as
// rounding and packing B per call, without either. The cache keys on B's address, so an allowed
// matrix must not change while the cache is installed; reset() it before the next use once they
// may have changed or been replaced (a freed address may come back as an activation's).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_set>
#include <vector>

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
  // B's storage (a parameter's data) may be rounded and packed.
  void allow(const float* data);
  // Allows exactly `allowed` and marks every rounded and packed copy stale: a new set of weights
  // (the next training update's; the parameters may have changed, or been replaced, since the
  // last). A stale copy is rounded or packed again from B's current values on its next read, into
  // the storage it has (no allocation, no page faults: the same weights come back every update);
  // copies not read since the previous reset, or of matrices no longer allowed, are freed.
  // Not while a product reads the cache.
  void reset(std::span<const float* const> allowed);
  // The packed op(B) when B is allowed (rounded and packed now on its first read since the last
  // reset), else nullptr. Thread-safe.
  const Bf16PackedB* find_or_pack(bool trans_b, int64_t N, int64_t K, const float* B, int64_t ldb);
  // Since the last reset: the matrices rounded (one per allowed B read), the layouts packed.
  int64_t rounded_matrices() const;
  int64_t packed_matrices() const;
  int64_t packed_bytes() const; // rounded and packed copies together, stale ones included

 private:
  struct Rounded { // B's stored rows × cols (row stride ld), rounded: bits[r · cols + c]
    int64_t rows, cols, ld;
    std::vector<uint16_t> bits;
    bool fresh = false; // holds B's values since the last reset
  };
  struct Packed {
    std::unique_ptr<Bf16PackedB> b;
    bool fresh = false;
  };
  mutable std::mutex mutex_;
  std::unordered_set<const float*> allowed_;
  std::multimap<const float*, Rounded> rounded_;
  std::multimap<const float*, Packed> packed_;
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
