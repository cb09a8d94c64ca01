// The packed operands of the bf16 GEMM (gemm_bf16.h) and the table through which its driver
// (gemm_bf16.cpp) calls one ISA's kernel (gemm_bf16_avx512bf16.cpp, gemm_bf16_amx.cpp).
//
// Packed layout. op(A)'s rows, or op(B)'s columns, are "lanes"; the packed operand is cut into
// panels of W lanes and each panel into chunks of KW consecutive values of k:
//
//   panel q (lanes q·W .. q·W + W − 1) starts at  q · W · kpad
//   inside it, element (lane c, k) is at          (k / KW) · W · KW + c · KW + k % KW
//
// so a chunk holds, lane after lane, each lane's KW values of k contiguously. Zeros fill the
// lanes past the last one and the k from K up to kpad (a multiple of KW), so kernels never test
// for edges inside the product: the padding adds 0 · 0.
//
//   B: W = kNr = 64 columns, KW = 2. One chunk is a pair of k (2p, 2p + 1): for each column the
//      two bf16 values adjacent, i.e. one 32-bit element per column. 16 columns of it are one
//      zmm register as vdpbf16ps reads it, and 16 pairs × 16 columns are one AMX B tile (row p:
//      the pairs of 16 columns, 64 bytes; consecutive pairs 4 · kNr bytes apart).
//   A: AVX512-BF16, W = 6 rows, KW = 2: the same pairs; the kernel broadcasts one row's pair
//      (and reads a non-transposed A of even K in place, where the pairs already are adjacent).
//      AMX, W = 32 rows, KW = 32: a chunk is two 16 × 32 tiles, row-major (each row's 32 values of
//      k are 16 pairs), as tdpbf16ps reads its A operand.
//
// ODR: the ISA files include this header with their own flags, so it declares only.
#pragma once
#include <cstdint>

namespace pillars::cpu::gemm {

constexpr int kBf16Nr = 64; // columns per packed B panel

struct Bf16KernelSet {
  const char* name;
  int mr;         // A: rows per panel (W)
  int a_chunk;    // A: values of k per chunk (KW)
  int k_multiple; // kpad: K rounded up to this (a multiple of a_chunk and of 2)
  // C[0:m, 0:n] = alpha · A_block · B_block + beta · C (beta == 0: C is written, never read).
  // Ap: the block's first A panel (m rows, panel after panel, each mr · kpad values);
  // Bp: its first B panel (n columns, each panel kBf16Nr · kpad values); 64-byte aligned.
  void (*block)(const uint16_t* Ap, const uint16_t* Bp, int64_t kpad, int64_t m, int64_t n, float alpha, float beta,
                float* C, int64_t ldc);
  // The same with A read where it is (nullptr: the kernel has no such variant). Only for op(A) = A
  // and K a multiple of k_multiple (kpad = K): then each row's pairs of k are already adjacent,
  // row i of the block at A + i·lda, and packing A would only copy it. (An fp32 op(A) = A is
  // rounded into such rows, kpad long, instead of into panels.)
  void (*block_a_in_place)(const uint16_t* A, int64_t lda, const uint16_t* Bp, int64_t kpad, int64_t m, int64_t n,
                           float alpha, float beta, float* C, int64_t ldc);
  // For a_chunk > 2: one chunk of one A panel from an operand whose lanes are contiguous (op(A) =
  // Aᵀ), given as rows of bf16 pairs: pairs[e · ld + c] holds lane c's values of k = 2e, 2e + 1
  // of the chunk (e < a_chunk / 2, c < mr). Writes the chunk: lane c's a_chunk values at
  // chunk + c · a_chunk, i.e. a transposition of 32-bit elements (nullptr: the driver's loop).
  void (*pairs_to_chunk)(const uint32_t* pairs, int64_t ld, uint16_t* chunk);
};

// nullptr when that ISA was not compiled in (non-x86 builds).
const Bf16KernelSet* bf16_kernels_avx512();
const Bf16KernelSet* bf16_kernels_amx();

// fp32 → bf16 for packing, the bits of kernels/bf16_bits.h (gemm_bf16_round_avx512.cpp).
struct Bf16Rounding {
  void (*run)(const float* x, int64_t n, uint16_t* y); // y[0:n] = bf16(x[0:n])
  // pairs[0:n] = bf16(even[l]) | bf16(odd[l]) << 16, the high halves zero where odd is nullptr
  void (*pairs)(const float* even, const float* odd, int64_t n, uint32_t* pairs);
};
// nullptr when AVX-512 was not compiled in; call it only where active_isa() >= Isa::avx512.
const Bf16Rounding* bf16_rounding_avx512();

// gemm_bf16 (gemm_bf16.h) through the packed driver with the kernel set `ks`, whatever the ISA
// setting: gemm_bf16 calls it with the set it picked; the AMX kernel's emulated test
// (tests/test_gemm_bf16_amx_emulated.cpp) with its own.
void gemm_bf16_packed(const Bf16KernelSet& ks, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                      const uint16_t* A, int64_t lda, const uint16_t* B, int64_t ldb, float beta, float* C,
                      int64_t ldc);

} // namespace pillars::cpu::gemm
