// f32 → bf16 on the bit pattern: the one definition of the rounding, for the host and the device
// (kernels/cpu/cast.cpp, engine/tensor.cpp's scalar, kernels/cuda/elementwise.cu's cast), so the
// CPU and the GPU give the same bits for every input.
//   numbers: round to nearest, ties to even; subnormals kept; overflow to ±infinity
//   NaN:     sign and payload kept, the quiet bit set (a signalling NaN stays a NaN)
// Branch-free (the NaN case is a select), so the CPU loop around it vectorizes.
#pragma once
#include <cstdint>

#ifndef PILLARS_HD
#if defined(__CUDACC__)
#define PILLARS_HD __host__ __device__ __forceinline__
#else
#define PILLARS_HD inline
#endif
#endif

namespace pillars {

PILLARS_HD uint16_t bf16_bits_of_f32_bits(uint32_t bits) {
  const bool nan = (bits & 0x7fffffffu) > 0x7f800000u;
  const uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16; // nearest, ties to even
  return static_cast<uint16_t>(nan ? (bits >> 16) | 0x40u : rounded);    // NaN: keep it quiet
}

} // namespace pillars
