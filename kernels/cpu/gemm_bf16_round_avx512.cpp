// Rounding fp32 operands to bf16 for the bf16 GEMM's packing, with AVX-512 (compiled with
// -mavx512f …; called only where active_isa() says the CPU has it). The rest of gemm_bf16.cpp
// targets the x86-64 baseline, where the compiler can vectorize this rounding only 4 values at a
// time and spends most of its instructions narrowing 32-bit lanes to 16 with SSE2's unpacks.
//
// The rounding is kernels/bf16_bits.h's, written here on 16 lanes at once (the same operations,
// so the same bits for every input, subnormals and NaNs included; AVX512-BF16's vcvtneps2bf16
// would flush subnormal inputs to zero instead):
//   rounded = (bits + 0x7fff + ((bits >> 16) & 1)) >> 16      nearest, ties to even
//   NaN (|bits| > 0x7f800000): (bits >> 16) | 0x40            kept, made quiet
#include "kernels/cpu/gemm_bf16_packed.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace pillars::cpu::gemm {

#if defined(__AVX512F__)
namespace {

// 16 lanes of 32 bits, as GCC's vector extension: the scalar formula's operators apply lane by lane.
typedef uint32_t U32x16 __attribute__((vector_size(64)));

// 16 fp32 bit patterns → their bf16 bit patterns, each in the low half of its 32-bit lane.
__m512i round16(__m512i x) {
  const U32x16 bits = (U32x16)x;
  const U32x16 rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  const U32x16 quiet = (bits >> 16) | 0x40u;
  return (__m512i)((bits & 0x7fffffffu) > 0x7f800000u ? quiet : rounded);
}

// The mask of the first `count` of 16 lanes.
__mmask16 first(int64_t count) { return count >= 16 ? __mmask16(0xffff) : __mmask16((1u << count) - 1); }

// The first `count` (≤ 16) lanes of x's bit patterns; the others read as zero.
__m512i load16(const float* x, int64_t count) { return _mm512_maskz_loadu_epi32(first(count), x); }

// y[0:n] = bf16(x[0:n])
void round_run(const float* x, int64_t n, uint16_t* y) {
  for (int64_t i = 0; i < n; i += 16) {
    const int64_t count = n - i < 16 ? n - i : 16;
    _mm512_mask_cvtepi32_storeu_epi16(y + i, first(count), round16(load16(x + i, count)));
  }
}

// pairs[0:n] = bf16(even[l]) | bf16(odd[l]) << 16; odd == nullptr: the high halves are zero.
void round_pairs(const float* even, const float* odd, int64_t n, uint32_t* pairs) {
  for (int64_t l = 0; l < n; l += 16) {
    const int64_t count = n - l < 16 ? n - l : 16;
    U32x16 v = (U32x16)round16(load16(even + l, count));
    if (odd != nullptr) v |= (U32x16)round16(load16(odd + l, count)) << 16;
    _mm512_mask_storeu_epi32(pairs + l, first(count), (__m512i)v);
  }
}

} // namespace

const Bf16Rounding* bf16_rounding_avx512() {
  static constexpr Bf16Rounding rounding{&round_run, &round_pairs};
  return &rounding;
}
#else
const Bf16Rounding* bf16_rounding_avx512() { return nullptr; }
#endif

} // namespace pillars::cpu::gemm
