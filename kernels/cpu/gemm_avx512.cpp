// SGEMM building blocks for AVX-512 (compiled with -mavx512f/bw/vl/dq; called only after
// cpu_features.h says the CPU has them). The algorithm is in gemm_blocked.h; this file supplies the
// vector traits and the tuned sizes.
//
// Register tile 6 × 64 (MR = 6 rows of A, NR = 4 zmm = 64 columns of B):
//   24 accumulators + 4 B vectors + 1 broadcast = 29 of the 32 zmm registers.
//   Per k: 4 aligned loads of B, 6 broadcasts of A, 24 FMAs. Zen 5 retires 2 512-bit FMAs per
//   cycle with 4-cycle latency, so 24 independent chains keep both pipes busy (>= 8 needed) and
//   the 10 loads per 12 cycles stay well under the 2 loads/cycle the L1 can serve.
#include "kernels/cpu/gemm_blocked.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace pillars::cpu::gemm {

#if defined(__AVX512F__)
namespace {
struct Avx512 {
  using reg = __m512;
  static constexpr int width = 16;
  static reg zero() { return _mm512_setzero_ps(); }
  static reg splat(float x) { return _mm512_set1_ps(x); }
  static reg broadcast(const float* p) { return _mm512_set1_ps(*p); }
  static reg load(const float* p) { return _mm512_load_ps(p); }
  static reg loadu(const float* p) { return _mm512_loadu_ps(p); }
  static void storeu(float* p, reg v) { _mm512_storeu_ps(p, v); }
  static reg mul(reg a, reg b) { return _mm512_mul_ps(a, b); }
  static reg fma(reg a, reg b, reg c) { return _mm512_fmadd_ps(a, b, c); }
};
} // namespace

const KernelSet* kernels_avx512() {
  // Blocks: Bp panel 64 × kc floats (kc = 256: 64 KiB) streams through L1/L2; Ap (mc × kc) stays in L2.
  static constexpr KernelSet set = make_kernel_set<Avx512, 6, 4>("avx512", 144, 256, 4096);
  return &set;
}
#else
const KernelSet* kernels_avx512() { return nullptr; }
#endif

} // namespace pillars::cpu::gemm
