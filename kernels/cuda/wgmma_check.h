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
// K a multiple of 16, at most 256. One warpgroup, both operands K-major in shared memory, no
// swizzle, K/16 chained m64n64k16 products. With a_in_registers, A goes to wgmma as each warp's
// register fragments instead (mma_m64n64k16_rs, the form attention's P takes).
std::vector<float> wgmma_tile_product(const std::vector<uint16_t>& a, const std::vector<uint16_t>& bt, int K,
                                      bool a_in_registers = false);

} // namespace pillars::cuda
