// The shared-memory operand layout and matrix descriptors of Hopper's warpgroup MMA (wgmma), in
// plain C++ so that the host can check them too (tests/test_cuda_wgmma.cpp). kernels/cuda/wgmma.cuh
// has the instructions that use them.
//
// CORE MATRICES. wgmma reads an operand tile from shared memory as core matrices of 8 rows × 16
// bytes (8 × 8 bf16), each stored as 128 contiguous bytes, row after row. Without swizzling
// ("interleave" mode, the only one used here) the tile is any grid of core matrices, and the
// descriptor says where they are: core matrix (i, k) — rows 8i .. 8i + 7, columns 8k .. 8k + 7 —
// starts at
//
//     start + i · SBO + k · LBO
//
// for a K-major operand (K, the reduction axis, contiguous inside a core matrix's rows): LBO, the
// "leading dimension byte offset", steps along K, and SBO, the "stride dimension byte offset",
// along M (operand A) or N (operand B). We lay a tile of R rows × K columns out band by band:
//
//     band 0 (rows 0–7):   [ core (0,0) | core (0,1) | … | core (0, K/8 − 1) ]   LBO = 128 bytes
//     band 1 (rows 8–15):  [ core (1,0) | …                                 ]   SBO = K/8 · 128
//     …
//
// so moving 16 columns along K (one k-step of an m64nNk16 product) moves the start by 2 · LBO.
// Both operands are K-major: A is (M × K) row-major, and B (K × N) is given as Bᵀ, (N × K)
// row-major, which is how attention holds K for S = Q Kᵀ.
//
// THE DESCRIPTOR (PTX ISA, "Matrix Descriptor Format"), 64 bits:
//     bits 0–13   start address >> 4 (a shared-memory address; 16-byte aligned)
//     bits 16–29  LBO >> 4,   bits 32–45  SBO >> 4
//     bits 49–51  base offset (0: the layout starts on a 128-byte boundary of its own pattern)
//     bits 62–63  swizzle mode (0: none)
//
// 128-BYTE SWIZZLE (the layout TMA writes with CU_TENSOR_MAP_SWIZZLE_128B, and wgmma reads with
// swizzle mode 1). A panel is R rows of 128 bytes (64 bf16), row r at byte 128·r; inside a row the
// 16-byte chunk c lands at chunk position c XOR (r mod 8). Eight rows (1,024 bytes, which must
// start on a 1,024-byte boundary) form one swizzle atom, and the 8 rows of any chunk column fall in
// 8 different bank groups, which is why no copy or read of the panel collides on a bank. wgmma reads
// a panel in two ways:
//   K-major (A or B with the reduction axis along the 128-byte rows, as Q and K lie in memory):
//     SBO = 1,024 (from one atom to the next along M or N), LBO unused (the 16 columns of a k-step
//     are 32 bytes, inside one row); k-step s starts 32·s bytes into the panel.
//   MN-major (B with N along the rows: V as it lies in memory, keys × dims, read with wgmma's
//     transpose bit): SBO = 1,024 (from one atom of 8 keys to the next), LBO = the distance from one
//     panel of 64 columns of N to the next; k-step s (16 keys) starts 2,048·s bytes in.
// A head dimension of 128 is two panels side by side (columns 0–63, then 64–127).
//
// THE ACCUMULATOR. D (64 × N, fp32) is spread over the 128 threads of the warpgroup, N/2 floats
// each: warp w holds rows 16w .. 16w + 15, and register r of lane l holds
//     row 16w + l/4 + 8·((r mod 4) / 2),   column 8·(r / 4) + 2·(l mod 4) + r mod 2
// (the mma.sync m16n8 accumulator, repeated over the N/8 column blocks).
#pragma once
#include <cstdint>

#ifdef __CUDACC__
#define PILLARS_HOST_DEVICE __host__ __device__
#else
#define PILLARS_HOST_DEVICE
#endif

namespace pillars::cuda::wgmma {

constexpr uint32_t kCoreBytes = 128; // one core matrix: 8 rows × 16 bytes

// LBO and SBO of a K-major tile with K columns (K a multiple of 8).
PILLARS_HOST_DEVICE constexpr uint32_t kmajor_lbo() { return kCoreBytes; }
PILLARS_HOST_DEVICE constexpr uint32_t kmajor_sbo(int K) { return static_cast<uint32_t>(K / 8) * kCoreBytes; }

// Byte offset of bf16 element (r, k) of a K-major tile with K columns.
PILLARS_HOST_DEVICE constexpr uint32_t kmajor_offset(int r, int k, int K) {
  return static_cast<uint32_t>(r / 8) * kmajor_sbo(K) + static_cast<uint32_t>(k / 8) * kmajor_lbo() +
         static_cast<uint32_t>(r % 8) * 16 + static_cast<uint32_t>(k % 8) * 2;
}

// Byte offset of bf16 element (r, c) of a 128-byte-swizzled panel (c < 64).
PILLARS_HOST_DEVICE constexpr uint32_t sw128_offset(int r, int c) {
  return static_cast<uint32_t>(r) * 128 + static_cast<uint32_t>((c / 8) ^ (r % 8)) * 16 +
         static_cast<uint32_t>(c % 8) * 2;
}
constexpr uint32_t kSw128Atom = 1024; // 8 rows of 128 bytes: a panel's alignment and its SBO

// The descriptor of a tile starting at shared-memory address `start`, no swizzle.
PILLARS_HOST_DEVICE constexpr uint64_t descriptor(uint32_t start, uint32_t lbo, uint32_t sbo) {
  return uint64_t{(start & 0x3FFFFu) >> 4} | uint64_t{(lbo & 0x3FFFFu) >> 4} << 16 |
         uint64_t{(sbo & 0x3FFFFu) >> 4} << 32;
}

// The same for a 128-byte-swizzled panel (swizzle mode 1 in bits 62–63); `start` may sit 32·s bytes
// past the panel's 1,024-byte boundary (a K-major k-step): the swizzle is computed from the
// address bits the step leaves alone, so the base offset stays 0.
PILLARS_HOST_DEVICE constexpr uint64_t descriptor_sw128(uint32_t start, uint32_t lbo) {
  return descriptor(start, lbo, kSw128Atom) | uint64_t{1} << 62;
}

// Where accumulator register r of warpgroup thread t (0 .. 127) lives in D.
PILLARS_HOST_DEVICE constexpr int accumulator_row(int t, int r) {
  return 16 * (t / 32) + (t % 32) / 4 + 8 * ((r % 4) / 2);
}
PILLARS_HOST_DEVICE constexpr int accumulator_col(int t, int r) { return 8 * (r / 4) + 2 * (t % 4) + r % 2; }

} // namespace pillars::cuda::wgmma
