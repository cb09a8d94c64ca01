// SGEMM building blocks for AVX-512 (compiled with -mavx512f/bw/vl/dq; called only after
// cpu_features.h says the CPU has them). The algorithm is in gemm_blocked.h; this file supplies the
// vector traits and the tuned sizes.
//
// Register tile 6 × 64 (MR = 6 rows of A, NR = 4 zmm = 64 columns of B):
//   24 accumulators + 4 B vectors + 1 broadcast = 29 of the 32 zmm registers.
//   Per k: 4 aligned loads of B, 6 broadcasts of A, 24 FMAs. Zen 5 retires 2 512-bit FMAs per
//   cycle with 4-cycle latency, so 24 independent chains keep both pipes busy (>= 8 needed) and
//   the 10 loads per 12 cycles stay well under the 2 loads/cycle the L1 can serve.
//   With operands in cache, 6 × 64, 8 × 48, 12 × 32, 14 × 32, 4 × 96 and 5 × 80 all ran at the
//   same ~220 GFLOP/s per core (≈ peak); 6 × 64 is kept because it needs the fewest A rows
//   (6 row pointers when A is read in place) and the longest contiguous B rows.
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
  // Cache blocks, measured on Zen 5 (48 KiB L1d, 1 MiB L2 per core; see tools/bench/bench_gemm.cpp):
  //   kc = 1024: one A panel (6 × kc = 24 KiB) stays in L1 while a B panel (kc × 64 = 256 KiB)
  //              streams from L2; a long kc also means fewer passes over C (kc = 256 or 512
  //              measured 3-5% slower on 1024³).
  //   mc = 96:   the A block (96 × kc = 384 KiB) and the B panel share L2.
  //   nc = 1024: the packed B block (kc × nc = 4 MiB per thread) lives in L3.
  static constexpr KernelSet set = make_kernel_set<Avx512, 6, 4>("avx512", 96, 1024, 1024);
  return &set;
}
#else
const KernelSet* kernels_avx512() { return nullptr; }
#endif

} // namespace pillars::cpu::gemm
