// SGEMM building blocks for AVX2 + FMA (compiled with -mavx2 -mfma; called only after
// cpu_features.h says the CPU has them). The algorithm is in gemm_blocked.h; this file supplies the
// vector traits and the tuned sizes.
//
// Register tile 6 × 16 (MR = 6 rows of A, NR = 2 ymm = 16 columns of B):
//   12 accumulators + 2 B vectors + 1 broadcast = 15 of the 16 ymm registers.
//   Per k: 2 loads of B, 6 broadcasts of A, 12 FMAs.
#include "kernels/cpu/gemm_blocked.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace pillars::cpu::gemm {

#if defined(__AVX2__) && defined(__FMA__)
namespace {
struct Avx2 {
  using reg = __m256;
  static constexpr int width = 8;
  static reg zero() { return _mm256_setzero_ps(); }
  static reg splat(float x) { return _mm256_set1_ps(x); }
  static reg broadcast(const float* p) { return _mm256_broadcast_ss(p); }
  static reg load(const float* p) { return _mm256_load_ps(p); }
  static reg loadu(const float* p) { return _mm256_loadu_ps(p); }
  static void storeu(float* p, reg v) { _mm256_storeu_ps(p, v); }
  static reg mul(reg a, reg b) { return _mm256_mul_ps(a, b); }
  static reg fma(reg a, reg b, reg c) { return _mm256_fmadd_ps(a, b, c); }
};
} // namespace

const KernelSet* kernels_avx2() {
  // Cache blocks as for AVX-512 (gemm_avx512.cpp), which also measured best here: A panel 6 × kc
  // in L1, B panel (kc × 16 = 64 KiB) and A block (mc × kc) in L2, B block (kc × nc) in L3.
  static constexpr KernelSet set = make_kernel_set<Avx2, 6, 2>("avx2", 96, 1024, 1024);
  return &set;
}
#else
const KernelSet* kernels_avx2() { return nullptr; }
#endif

} // namespace pillars::cpu::gemm
