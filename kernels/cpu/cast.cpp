// fp32 ↔ bf16 conversions; see cast.h. Written on the bit patterns so the compiler vectorizes
// them (no branches: the NaN case is a select), spread over OpenMP threads when large.
#include "kernels/cpu/cast.h"

#include <cstring>

#include "base/parallel.h"
#include "kernels/bf16_bits.h"

namespace pillars::cpu {

void f32_to_bf16(const CastArgs& a, const float* x, uint16_t* y) {
  const int64_t n = a.n;
#pragma omp parallel for simd schedule(static) if (n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &x[i], 4);
    y[i] = bf16_bits_of_f32_bits(bits);
  }
}

void bf16_to_f32(const CastArgs& a, const uint16_t* x, float* y) {
  const int64_t n = a.n;
#pragma omp parallel for simd schedule(static) if (n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t bits = static_cast<uint32_t>(x[i]) << 16;
    std::memcpy(&y[i], &bits, 4);
  }
}

void round_to_bf16(float* x, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, x + i, 4);
    bits = static_cast<uint32_t>(bf16_bits_of_f32_bits(bits)) << 16;
    std::memcpy(x + i, &bits, 4);
  }
}

} // namespace pillars::cpu
