// Vectorizable exp and log for float, and the dispatch attribute the row kernels use.
//
// Why not std::exp? A call into libm cannot be vectorized by GCC without -ffast-math (which the
// build does not use), and softmax / cross-entropy spend most of their time in exp. These versions
// are branch-free straight-line code (selects, no table look-ups), so a `#pragma omp simd` loop
// that calls them becomes SIMD code for whatever ISA the surrounding function is compiled for.
//
// fast_exp(x) (Cephes expf, range reduction by ln 2):
//   n = round(x · log2 e),  r = x − n·ln2 (ln2 split in a high part exact in float and a low part,
//   so n·ln2_hi is exact), |r| ≤ ln2/2;
//   e^r ≈ 1 + r + r²·P(r), P of degree 5 (minimax; Cephes); e^x = e^r · 2^n.
//   2^n is applied as 2^(n/2) · 2^(n − n/2): both factors are normal floats for every n in
//   [−152, 129], so the result underflows gradually (denormals come out right) and overflows to
//   +inf exactly when e^x > FLT_MAX.
//   Accuracy: ≤ 2 ulp against correctly-rounded expf on normal results (measured by
//   tests/test_ops_nn.cpp "op: vec_math"); x = −inf → 0, x = +inf → +inf, NaN → NaN.
//
// fast_log(x) (Cephes logf): x = m · 2^e with m ∈ [√½, √2), f = m − 1,
//   log(1 + f) ≈ f − f²/2 + f³·Q(f), Q of degree 8; log x = log(1 + f) + e·ln2 (split ln2 again).
//   Accuracy: ≤ 2 ulp for normal x > 0; x = 0 → −inf, x < 0 or NaN → NaN, +inf → +inf. Denormal
//   inputs are treated as 0 (→ −inf) — the kernels only take logs of sums ≥ 1.
//
// Vectorization note: GCC vectorizes loops calling these in every version only under
// -fno-trapping-math (with the default -ftrapping-math it refuses to if-convert the range clamps
// in the AVX2 and SSE2 versions); the kernel files using them say so with a pragma.
//
// ODR note: the functions are `static inline` with always_inline, so each caller compiled for
// AVX-512 (via PILLARS_PER_ISA) gets its own inlined copy; no out-of-line copy compiled for a
// wider ISA can be picked by the linker for a baseline caller.
#pragma once
#include <bit>
#include <cstdint>
#include <limits>

#include "kernels/cpu/cpu_features.h"

#define PILLARS_VEC_INLINE static inline __attribute__((always_inline))

// PILLARS_PER_ISA(ret, name, (params), (args)): a hot loop compiled three times — AVX-512
// (x86-64-v4), AVX2 + FMA (x86-64-v3) and baseline SSE2 — with `name` calling the one that
// active_isa() (kernels/cpu/cpu_features.h) names, from the body `name##_body`, which must be
// PILLARS_VEC_INLINE so that each version inlines and vectorizes it for its own ISA. Used on the
// per-row functions of the softmax, layer-norm and cross-entropy kernels and on the head metrics'
// Gram rows (kernels/cpu/xray.cpp); the calls are per row, so the dispatch costs nothing measurable.
//
// Why not GCC's target_clones? It picks the version at load time from the CPU alone, so PILLARS_ISA
// and the tests' force_isa could not reach these loops: the wider vectors sum their reductions in
// another order, and a run on an AVX-512 machine then differs in the last bits from one on an
// AVX2 machine even with PILLARS_ISA=avx2 (the first-updates pins, tests/first_updates.py, saw it
// in the head metrics, small differences of large sums). Now the same ISA gives the same bits on
// every machine that has it.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define PILLARS_PER_ISA(ret, name, params, args)                                                  \
  __attribute__((target("arch=x86-64-v4"))) ret name##_avx512 params { return name##_body args; } \
  __attribute__((target("arch=x86-64-v3"))) ret name##_avx2 params { return name##_body args; }   \
  ret name##_generic params { return name##_body args; }                                          \
  ret name params {                                                                               \
    switch (::pillars::cpu::active_isa()) {                                                       \
      case ::pillars::cpu::Isa::amx:                                                              \
      case ::pillars::cpu::Isa::avx512_bf16:                                                      \
      case ::pillars::cpu::Isa::avx512:                                                           \
        return name##_avx512 args;                                                                \
      case ::pillars::cpu::Isa::avx2:                                                             \
        return name##_avx2 args;                                                                  \
      case ::pillars::cpu::Isa::generic:                                                          \
        break;                                                                                    \
    }                                                                                             \
    return name##_generic args;                                                                   \
  }
#else
#define PILLARS_PER_ISA(ret, name, params, args) \
  ret name params { return name##_body args; }
#endif

namespace pillars::cpu {

// 2^k as a float, for k in [−126, 127] (built from the exponent bits).
PILLARS_VEC_INLINE float pow2i(int32_t k) { return std::bit_cast<float>((k + 127) << 23); }

PILLARS_VEC_INLINE float fast_exp(float x) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f;    // 8 significant bits: n · kLn2Hi is exact
  constexpr float kLn2Lo = -2.12194440e-4f; // ln2 − kLn2Hi
  constexpr float kRound = 12582912.0f;     // 1.5 · 2^23: adding it rounds to an integer
  // Clamp to where the result is 0 or +inf anyway; keeps n inside [−152, 129]. (Two separate
  // selects, not nested ones: GCC does not if-convert a comparison that only runs on one branch,
  // since an ordered comparison may trap, and the loop would not vectorize.)
  float xc = x > 89.0f ? 89.0f : x;
  xc = xc < -105.0f ? -105.0f : xc;
  const float n = (xc * kLog2e + kRound) - kRound; // round to nearest (no fast-math: not folded)
  const float r = (xc - n * kLn2Hi) - n * kLn2Lo;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float er = p * (r * r) + r + 1.0f;
  const int32_t ni = static_cast<int32_t>(n);
  const int32_t half = ni >> 1; // floor(n / 2)
  const float y = er * pow2i(half) * pow2i(ni - half);
  return __builtin_isnan(x) ? x : y; // (x != x would block if-conversion; isnan does not)
}

PILLARS_VEC_INLINE float fast_log(float x) {
  constexpr float kSqrtHalf = 0.707106781186547524f;
  constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
  const int32_t bits = std::bit_cast<int32_t>(x);
  // x = m · 2^e with m ∈ [0.5, 1): replace the exponent bits by those of 0.5.
  int32_t e = ((bits >> 23) & 0xff) - 126;
  float m = std::bit_cast<float>((bits & 0x007fffff) | 0x3f000000);
  // Move m into [√½, √2) so that f = m − 1 is small on both sides.
  const bool low = m < kSqrtHalf;
  e = low ? e - 1 : e;
  const float f = low ? (m + m) - 1.0f : m - 1.0f;
  const float z = f * f;
  float q = 7.0376836292e-2f;
  q = q * f - 1.1514610310e-1f;
  q = q * f + 1.1676998740e-1f;
  q = q * f - 1.2420140846e-1f;
  q = q * f + 1.4249322787e-1f;
  q = q * f - 1.6668057665e-1f;
  q = q * f + 2.0000714765e-1f;
  q = q * f - 2.4999993993e-1f;
  q = q * f + 3.3333331174e-1f;
  const float ef = static_cast<float>(e);
  float y = q * f * z;
  y += ef * kLn2Lo;
  y += -0.5f * z;
  y = (f + y) + ef * kLn2Hi;
  constexpr float kInf = std::numeric_limits<float>::infinity();
  constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
  y = x < std::numeric_limits<float>::min() ? -kInf : y; // 0 and denormals
  y = x < 0.0f ? kNaN : y;
  y = __builtin_isnan(x) ? x : y;
  y = x > std::numeric_limits<float>::max() ? kInf : y;
  return y;
}

} // namespace pillars::cpu
