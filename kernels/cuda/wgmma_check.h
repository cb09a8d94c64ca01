// One tile product through Hopper's warpgroup MMA, run on the GPU: the check that the shared-memory
// layout, the descriptors and the accumulator mapping of kernels/cuda/wgmma_layout.h are the ones
// the hardware uses, before any kernel relies on them (tests/test_cuda_wgmma.cpp compares it with
// a float64 product).
//
// Plain C++ (the tests include it); defined by kernels/cuda/wgmma_check.cu in a CUDA build.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace pillars::cuda {

// "" when the current GPU is a Hopper (compute capability 9.x) and runs this build's sm_90a code
// (a probe kernel compiled like the wgmma kernels says so), else why not. Asked once per process.
const std::string& wgmma_unavailable_reason();

// D (64 × 64, row-major) = A · B for A (64 × K) and Bᵀ (64 × K), both row-major bf16 bit patterns;
// K a multiple of 16, at most 256. One warpgroup, K/16 chained m64n64k16 products. The operands'
// layouts in shared memory:
//   default            A and Bᵀ K-major core matrices, no swizzle (wgmma_layout.h);
//   a_in_registers     A as each warp's register fragments instead (mma_m64n64k16_rs, the form
//                      attention's P takes);
//   swizzled           the 128-byte swizzle (sw128_offset) the TMA writes: A and Bᵀ K-major in
//                      panels of 64 columns (K a multiple of 64; Q Kᵀ in attention_hopper_tma.cu),
//                      or, with a_in_registers, B (K × 64) MN-major, read through wgmma's transpose
//                      bit (P V there).
std::vector<float> wgmma_tile_product(const std::vector<uint16_t>& a, const std::vector<uint16_t>& bt, int K,
                                      bool a_in_registers = false, bool swizzled = false);

} // namespace pillars::cuda
