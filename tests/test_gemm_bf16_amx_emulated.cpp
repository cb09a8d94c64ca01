// The AMX kernel of the bf16 GEMM (kernels/cpu/gemm_bf16_amx.cpp) run on any x86-64 CPU, its tile
// instructions replaced by software that does what Intel's manual says they do. The real
// instructions are tested by test_gemm_bf16.cpp where the CPU has them; this test checks, on
// every machine, what most often goes wrong in such a kernel and what the emulation reproduces
// exactly: the tile configuration, the base addresses and strides of every tile load and store,
// the operand roles of tdpbf16ps, and the edges. It cannot check the hardware's own summation order
// or speed.
//
// How: this file includes the kernel's source after GCC's <immintrin.h>, with the tile intrinsics
// redefined as the functions below and the AMX feature macros set, so the kernel compiles here
// as it would with -mamx-tile -mamx-bf16; its kernel set is renamed so as not to clash with the
// real one, and the driver's gemm_bf16_packed runs it (packing, blocks, threads as in production).
// Tiles are thread_local, like the hardware's per-thread tile state.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)

#include <doctest/doctest.h>
#include <immintrin.h>

#include <atomic>
#include <cstdint>
#include <cstring>

namespace {

// Uses of the tile instructions the manual forbids (an unconfigured tile, mismatched shapes). They
// are counted, not asserted, because they happen on OpenMP threads; the test checks the count.
std::atomic<int> g_violations{0};
bool allowed(bool ok) {
  if (!ok) ++g_violations;
  return ok;
}

// One tile: up to 16 rows of up to 64 bytes, as configured.
struct EmulatedTile {
  int rows = 0, colsb = 0;
  unsigned char data[16][64];
};
thread_local EmulatedTile t_tiles[8];
thread_local bool t_configured = false;

float bf16_at(const unsigned char* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  const uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// ldtilecfg: palette 1; bytes 16..47 the tiles' row widths in bytes, 48..63 their row counts.
void emulated_loadconfig(const void* config) {
  const auto* c = static_cast<const unsigned char*>(config);
  if (!allowed(c[0] == 1)) return;
  for (int t = 0; t < 8; ++t) {
    uint16_t colsb;
    std::memcpy(&colsb, c + 16 + 2 * t, 2);
    if (!allowed(colsb <= 64 && c[48 + t] <= 16)) return;
    t_tiles[t].colsb = colsb, t_tiles[t].rows = c[48 + t];
  }
  t_configured = true;
}

void emulated_loadd(int t, const void* base, long stride) {
  if (!allowed(t_configured)) return;
  for (int r = 0; r < t_tiles[t].rows; ++r)
    std::memcpy(t_tiles[t].data[r], static_cast<const char*>(base) + r * stride, size_t(t_tiles[t].colsb));
}

void emulated_stored(int t, void* base, long stride) {
  if (!allowed(t_configured)) return;
  for (int r = 0; r < t_tiles[t].rows; ++r)
    std::memcpy(static_cast<char*>(base) + r * stride, t_tiles[t].data[r], size_t(t_tiles[t].colsb));
}

void emulated_zero(int t) { std::memset(t_tiles[t].data, 0, sizeof t_tiles[t].data); }

// tdpbf16ps c, a, b: C (M × N fp32) += A (M × K pairs of bf16) · B (K rows × N pairs of bf16),
//   C[m][n] += Σ_p A[m][p].lo · B[p][n].lo + A[m][p].hi · B[p][n].hi
// with the shapes the manual requires: M = a.rows = c.rows, K = a.colsb / 4 = b.rows,
// N = b.colsb / 4 = c.colsb / 4.
void emulated_dpbf16ps(int c, int a, int b) {
  EmulatedTile &C = t_tiles[c], &A = t_tiles[a], &B = t_tiles[b];
  const int M = A.rows, K = A.colsb / 4, N = B.colsb / 4;
  if (!allowed(t_configured && C.rows == M && B.rows == K && C.colsb == 4 * N)) return;
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      float acc;
      std::memcpy(&acc, C.data[m] + 4 * n, 4);
      for (int p = 0; p < K; ++p) {
        acc += bf16_at(A.data[m] + 4 * p) * bf16_at(B.data[p] + 4 * n);
        acc += bf16_at(A.data[m] + 4 * p + 2) * bf16_at(B.data[p] + 4 * n + 2);
      }
      std::memcpy(C.data[m] + 4 * n, &acc, 4);
    }
}

} // namespace

#undef _tile_loadd
#undef _tile_stored
#undef _tile_zero
#undef _tile_dpbf16ps
#define _tile_loadconfig(config) emulated_loadconfig(config)
#define _tile_loadd(t, base, stride) emulated_loadd(t, base, stride)
#define _tile_stored(t, base, stride) emulated_stored(t, base, stride)
#define _tile_zero(t) emulated_zero(t)
#define _tile_dpbf16ps(c, a, b) emulated_dpbf16ps(c, a, b)
#define _tile_release() (void)(t_configured = false)

#define __AMX_TILE__ 1
#define __AMX_BF16__ 1
#define bf16_kernels_amx bf16_kernels_amx_emulated
#include "kernels/cpu/gemm_bf16_amx.cpp"
#undef bf16_kernels_amx
#undef __AMX_BF16__
#undef __AMX_TILE__

#include "tests/gemm_bf16_cases.h"

#include <random>

namespace {

using namespace pillars::testing::gemm_bf16;

int64_t check_emulated(const Case& c, std::mt19937& rng) {
  const pillars::cpu::gemm::Bf16KernelSet& amx = *pillars::cpu::gemm::bf16_kernels_amx_emulated();
  return check("amx (emulated)", c, rng,
               [&](bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const uint16_t* A, int64_t lda,
                   const uint16_t* B, int64_t ldb, float beta, float* C, int64_t ldc) {
                 pillars::cpu::gemm::gemm_bf16_packed(amx, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
               });
}

} // namespace

TEST_CASE("gemm_bf16: the amx kernel on emulated tiles, every layout, ragged shapes, alpha and beta, strides") {
  std::mt19937 rng(3);
  // Around the tiles (16 rows and columns, 32 values of k), the kernel's 32 × 32 block and the
  // driver's 96 × 256 blocks; odd K leaves a zero in the last pair.
  const int64_t mn_sizes[] = {1, 16, 17, 33, 100};
  const int64_t k_sizes[] = {1, 3, 32, 33, 65};
  for (const auto& layout : kLayouts) {
    int64_t wrong = 0;
    for (int64_t M : mn_sizes)
      for (int64_t N : mn_sizes)
        for (int64_t K : k_sizes)
          wrong += check_emulated({layout[0], layout[1], M, N, K, 0.75f, K % 2 ? 0.5f : 0.0f}, rng);
    CHECK_MESSAGE(wrong == 0, (layout[0] ? "T" : "N"), (layout[1] ? "T" : "N"));
    CHECK(check_emulated({layout[0], layout[1], 97, 260, 300, -1.0f, 2.0f, 3, 5, 7}, rng) == 0); // strided
  }
  CHECK(g_violations.load() == 0);
}

#endif
