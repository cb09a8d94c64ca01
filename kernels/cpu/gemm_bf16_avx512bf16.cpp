// The bf16 GEMM's kernel for AVX512-BF16 (compiled with -mavx512f -mavx512bf16; called only
// after cpu_features.h says the CPU has them). The driver and the packed layouts are in
// gemm_bf16.cpp and gemm_bf16_packed.h.
//
// The instruction: vdpbf16ps acc, a, b (_mm512_dpbf16_ps) treats a and b as 16 lanes of bf16
// pairs and does, per lane c,
//     acc[c] += a[c].lo · b[c].lo + a[c].hi · b[c].hi        (products exact, sums in fp32)
// i.e. two steps of k at once. Broadcasting row r's pair (A(r, 2p), A(r, 2p + 1)) into a and
// loading the packed pair p of 16 columns of B as b gives 16 columns of row r advanced by 2 k.
// (Like all AVX512-BF16 instructions it ignores MXCSR: round to nearest even, denormal inputs read
// as zero, denormal results flushed to zero.)
//
// Register tile 6 × 64, as sgemm's AVX-512 one: 24 accumulators + 4 B vectors + 1 broadcast of the
// 32 zmm registers; per pair of k: 4 aligned loads of B, 6 broadcasts of A, 24 vdpbf16ps (768
// multiply-adds, twice an fp32 FMA's 384).
#include "kernels/cpu/gemm_bf16_packed.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace pillars::cpu::gemm {

#if defined(__AVX512BF16__)
namespace {

constexpr int kMr = 6, kNv = 4, kNr = kBf16Nr; // kNr = kNv · 16 columns
static_assert(kNr == kNv * 16);
// Pairs of k per pass over C: one A panel's slice (6 rows × 512 pairs = 12 KiB) stays in L1 and
// one B panel's slice (512 pairs × 64 columns = 128 KiB) in L2 while the block's rows sweep it.
// (On one Zen 4 core 512 measured 2-4% faster than 256 on 1024³ TN and 256 × 1024 × 4000 TN.)
constexpr int64_t kKcPairs = 512;

int64_t min_i64(int64_t a, int64_t b) { return a < b ? a : b; }

// Where the micro-kernel reads its 6 rows' pairs of k from.
struct PackedPanel { // a panel of packed A: row r's pair p at p · 12 + 2r
  const uint16_t* p;
  const uint16_t* at(int r, int64_t pair) const { return p + pair * 2 * kMr + 2 * r; }
};
// A itself (not transposed, K even): row r's pair p at first + r · lda + 2p. A ragged last panel
// (rows = m < 6) repeats its last row, whose results are not stored. The rows are computed here, in
// the kernel, rather than passed as an array of pointers: the caller's stores of such an array and
// the kernel's wider load of it defeat store-to-load forwarding, and the load then waits until
// every older store, the previous tile's C among them, has reached the cache (measured: a quarter
// of the time of a K = 256 product).
struct RowsOfA {
  const uint16_t* first;
  int64_t lda;
  int64_t rows;
  const uint16_t* at(int r, int64_t pair) const { return first + min_i64(r, rows - 1) * lda + 2 * pair; }
};

// C[0:m, 0:n] (m ≤ 6, n ≤ 64) = alpha · Σ_p A_panel(r, pair p) · B_panel(pair p, c) + beta · C
// a: the 6 rows from pair p0 on; b: the B panel at pair p0, 64 pairs per step.
template <class APanel>
[[gnu::always_inline]] inline void micro_kernel(int64_t pairs, const APanel a, const uint16_t* b, float alpha,
                                                float beta, float* c, int64_t ldc, int64_t m, int64_t n) {
  __m512 acc[kMr][kNv];
#pragma GCC unroll 8
  for (int r = 0; r < kMr; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < kNv; ++v) acc[r][v] = _mm512_setzero_ps();

#pragma GCC unroll 1
  for (int64_t p = 0; p < pairs; ++p, b += 2 * kNr) {
    __m512bh bv[kNv];
#pragma GCC unroll 4
    for (int v = 0; v < kNv; ++v) bv[v] = (__m512bh)_mm512_load_si512(b + 32 * v);
#pragma GCC unroll 8
    for (int r = 0; r < kMr; ++r) {
      int32_t pair; // A(r, 2p) in the low half, A(r, 2p + 1) in the high half
      __builtin_memcpy(&pair, a.at(r, p), 4);
      const __m512bh ar = (__m512bh)_mm512_set1_epi32(pair);
#pragma GCC unroll 4
      for (int v = 0; v < kNv; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], ar, bv[v]);
    }
  }

  // C = alpha · acc + beta · C on the valid m × n part (masks cut the last columns).
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
  for (int r = 0; r < m; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < kNv; ++v) {
      const int64_t cols = n - 16 * v;
      if (cols <= 0) break;
      const __mmask16 mask = cols >= 16 ? __mmask16(0xffff) : __mmask16((1u << cols) - 1);
      float* cp = c + r * ldc + 16 * v;
      const __m512 ab = _mm512_mul_ps(va, acc[r][v]);
      _mm512_mask_storeu_ps(cp, mask, beta == 0.0f ? ab : _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(mask, cp), ab));
    }
}

// C[0:m, 0:n] = alpha · A_block · B_block + beta · C, in passes of kKcPairs pairs of k; the later
// passes add onto the first (beta = 1). A is packed (Ap, lda unused) or read in place (row i at
// A + i · lda; a ragged last panel repeats its last row, whose results are not stored).
template <bool kAInPlace>
void block(const uint16_t* A, int64_t lda, const uint16_t* Bp, int64_t kpad, int64_t m, int64_t n, float alpha,
           float beta, float* C, int64_t ldc) {
  const int64_t pairs = kpad / 2;
  const int64_t passes = (pairs + kKcPairs - 1) / kKcPairs;
  const int64_t kc_max = (pairs + passes - 1) / passes; // even passes: 514 pairs is 257 + 257, not 512 + 2
  for (int64_t p0 = 0; p0 < pairs; p0 += kc_max) {
    const int64_t kc = min_i64(kc_max, pairs - p0);
    const float pass_beta = p0 == 0 ? beta : 1.0f;
    for (int64_t j = 0; j < n; j += kNr)
      for (int64_t i = 0; i < m; i += kMr) {
        const int64_t mr = min_i64(kMr, m - i), nr = min_i64(kNr, n - j);
        const uint16_t* b = Bp + j * kpad + p0 * 2 * kNr; // panel j / kNr at pair p0
        if constexpr (kAInPlace) {
          micro_kernel(kc, RowsOfA{A + i * lda + 2 * p0, lda, mr}, b, alpha, pass_beta, C + i * ldc + j, ldc, mr, nr);
        } else { // panel i / kMr at pair p0: i · kpad + p0 · 2 · kMr
          micro_kernel(kc, PackedPanel{A + i * kpad + p0 * 2 * kMr}, b, alpha, pass_beta, C + i * ldc + j, ldc, mr, nr);
        }
      }
  }
}

void block_packed(const uint16_t* Ap, const uint16_t* Bp, int64_t kpad, int64_t m, int64_t n, float alpha, float beta,
                  float* C, int64_t ldc) {
  block<false>(Ap, 0, Bp, kpad, m, n, alpha, beta, C, ldc);
}

} // namespace

const Bf16KernelSet* bf16_kernels_avx512() {
  static constexpr Bf16KernelSet set{"avx512_bf16", kMr, 2, 2, &block_packed, &block<true>, nullptr};
  return &set;
}
#else
const Bf16KernelSet* bf16_kernels_avx512() { return nullptr; }
#endif

} // namespace pillars::cpu::gemm
