// GEMM with bf16 operands on the CPU: C = alpha · op(A) · op(B) + beta · C, row-major,
// op(X) = X or Xᵀ, with A and B in bf16 (bit patterns as uint16_t, kernels/cpu/cast.h) and C
// in fp32. The layouts and arguments are sgemm's (gemm.h):
//
//   op(A): (M, K)   A is stored (M, K) with row stride lda, or (K, M) when trans_a
//   op(B): (K, N)   B is stored (K, N) with row stride ldb, or (N, K) when trans_b
//   C:     (M, N)   fp32, row stride ldc
//
// What it computes: every product of two bf16 values is exact in fp32 (8 + 8 significant bits
// fit in fp32's 24), and the products are summed in fp32. So the result differs from the exact
// sum of the bf16 products only by fp32 accumulation error, ~K · 2⁻²⁴ relative to Σ|a·b|; the
// rounding of the operands to bf16 (at most 2⁻⁸ relative each) happened before the call and is
// the caller's choice.
//
// Which path runs (cpu_features.h: detection, PILLARS_ISA, force_isa):
//   amx          AMX tiles, tdpbf16ps: 16 × 16 fp32 tiles += (16 × 32) · (32 × 16) bf16
//   avx512_bf16  vdpbf16ps: 16 fp32 lanes += a pair of bf16 products each
//   below        portable: the operands widened to fp32 (exactly), then sgemm
// The two bf16 paths first pack op(A) and op(B) into the "pairs of K" layout those instructions
// read (each 32-bit element holds the bf16 values of k = 2p and 2p + 1, zero past K); the paths
// sum in different orders, so their results agree to rounding, not bit for bit.
//
// Threads like sgemm: OpenMP when called outside a parallel region, single-threaded inside one.
// Never allocates once the largest shape has been seen (per-thread buffers that only grow).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

namespace pillars::cpu {

void gemm_bf16(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const uint16_t* A, int64_t lda,
               const uint16_t* B, int64_t ldb, float beta, float* C, int64_t ldc);

// The same product with fp32 operands, each element rounded to bf16 (to nearest, ties to even:
// kernels/bf16_bits.h) as it is packed (or, on the portable path, widened), so no rounded copy is
// made first. Bit for bit what rounding A and B into bf16 copies and calling gemm_bf16 gives.
void gemm_bf16_f32(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                   int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc);

// dst[r · cols + c] = bf16(X[r · ld + c]) for rows × cols of X: the rounding gemm_bf16_f32 applies
// as it packs (kernels/bf16_bits.h), into a dense copy.
void round_to_bf16(const float* X, int64_t rows, int64_t cols, int64_t ld, uint16_t* dst);

// op(B) (K × N, fp32, B stored as for gemm_bf16_f32) rounded to bf16 and packed once, in the
// layout of the path active when it is made (the portable path: widened back to fp32), for many
// products against the same B: a model's weights while it decodes or during one training update.
// It remembers B's address, not its values: B must not change while the packed copy is used.
class Bf16PackedB {
 public:
  Bf16PackedB(bool trans_b, int64_t N, int64_t K, const float* B, int64_t ldb);
  // The same from B's rounded copy, rounded[r · ld_rounded + c] = bf16(B[r · ldb + c]) over B's
  // stored shape (round_to_bf16): the packing only moves its values, and the packed bits are
  // those of the constructor above. B is the source packed from if the path changes (see below).
  Bf16PackedB(bool trans_b, int64_t N, int64_t K, const uint16_t* rounded, int64_t ld_rounded, const float* B,
              int64_t ldb);
  // Packs B's new values, given as above, into the storage it has (same shape and source; new
  // storage only if the path changed since): a weight after an optimizer step.
  void repack(const uint16_t* rounded, int64_t ld_rounded) { pack_from(rounded, ld_rounded); }
  // Whether this is the packed copy of that operand.
  bool matches(bool trans_b, int64_t N, int64_t K, const float* B, int64_t ldb) const;
  int64_t bytes() const { return bytes_; }

 private:
  friend void gemm_bf16_f32_prepacked(bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const Bf16PackedB&,
                                      float, float*, int64_t);
  struct Free {
    void operator()(void* p) const;
  };
  template <class T>
  void pack_from(const T* X, int64_t ldx);
  bool trans_b_;
  int64_t N_, K_, ldb_, bytes_ = 0;
  const float* source_;
  const void* kernels_ = nullptr;          // the kernel set it was packed for; nullptr: portable
  std::unique_ptr<uint16_t, Free> packed_; // 64-byte aligned, the kernels' layout
  std::vector<float> wide_;                // portable: op(B) as stored, rounded, dense
};

// gemm_bf16_f32 with op(B) packed beforehand: the same bits, without packing B. If the active path
// is no longer the one B was packed for (PILLARS_ISA forced since), B is packed again from its source.
void gemm_bf16_f32_prepacked(bool trans_a, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                             const Bf16PackedB& B, float beta, float* C, int64_t ldc);

// The obvious triple loop on the widened bf16 values, accumulated in double: the oracle for tests.
void gemm_bf16_reference(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const uint16_t* A,
                         int64_t lda, const uint16_t* B, int64_t ldb, float beta, float* C, int64_t ldc);

// The path gemm_bf16 takes now: "amx", "avx512_bf16" or "portable".
const char* gemm_bf16_path();

} // namespace pillars::cpu
