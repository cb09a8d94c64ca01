// The bf16 GEMM's kernel for AMX (compiled with -mamx-tile -mamx-bf16; called only after
// cpu_features.h says the CPU has AMX-TILE and AMX-BF16 and Linux granted the tile state). The
// driver and the packed layouts are in gemm_bf16.cpp and gemm_bf16_packed.h.
//
// AMX adds eight tile registers of up to 16 rows × 64 bytes, configured by a 64-byte descriptor
// (_tile_loadconfig), loaded and stored row by row with a byte stride (_tile_loadd, _tile_stored),
// and one multiply, tdpbf16ps (_tile_dpbf16ps):
//     C (16 × 16 fp32) += A (16 rows × 32 bf16) · B (16 rows × 16 pairs of bf16)
// where B's row p holds, for each of the 16 columns, the pair (k = 2p, 2p + 1), and A's row r
// holds its 32 values of k: per element, C[r][c] += Σ_p A[r][2p]·B[p][c].lo + A[r][2p+1]·B[p][c].hi,
// products exact, sums in fp32 (round to nearest even, denormals flushed, MXCSR ignored).
//
// Tiles used: 0-3 hold a 32 × 32 block of C (2 × 2 tiles of 16 × 16), 4-5 two A tiles (rows
// 0-15 and 16-31 of a 32-row A panel), 6-7 two B tiles (columns 0-15 and 16-31 of half a B
// panel). Per 32 values of k: 4 loads, 4 tdpbf16ps (each 16 · 16 · 32 = 8192 multiply-adds).
// The C tiles accumulate over all of K, then go through a 32 × 32 scratch tile to C (alpha, beta,
// and the ragged edge).
#include "kernels/cpu/gemm_bf16_packed.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace pillars::cpu::gemm {

#if defined(__AMX_TILE__) && defined(__AMX_BF16__)
namespace {

constexpr int kMr = 32;    // A panel: two tiles of 16 rows
constexpr int kChunk = 32; // values of k per A tile row (16 pairs)
constexpr int kNr = kBf16Nr;

int64_t min_i64(int64_t a, int64_t b) { return a < b ? a : b; }

// The tile configuration (palette 1): tile t has rows[t] rows of colsb[t] bytes.
struct alignas(64) TileConfig {
  uint8_t palette_id;
  uint8_t start_row;
  uint8_t reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};
static_assert(sizeof(TileConfig) == 64);

void configure_tiles() {
  TileConfig cfg{};
  cfg.palette_id = 1;
  for (int t = 0; t < 8; ++t) cfg.colsb[t] = 64, cfg.rows[t] = 16; // every tile 16 × 64 bytes
  // GCC 12 does not count ldtilecfg as reading all 64 bytes of cfg: once this function was
  // inlined differently it dropped the stores of colsb[0..7] (seen in the disassembly), and the
  // invalid configuration faulted. The empty asm reads cfg, so every store happens before it.
  asm volatile("" : : "m"(cfg) : "memory");
  _tile_loadconfig(&cfg);
}

// C[0:m, 0:n] = alpha · A_block · B_block + beta · C, 32 × 32 at a time.
void block(const uint16_t* Ap, const uint16_t* Bp, int64_t kpad, int64_t m, int64_t n, float alpha, float beta,
           float* C, int64_t ldc) {
  configure_tiles(); // per thread: the configuration is thread state
  alignas(64) float tile[32 * 32];
  const int64_t chunks = kpad / kChunk;
  constexpr int64_t kBStride = 4 * kNr; // bytes from one pair of k to the next in a B panel
  for (int64_t j = 0; j < n; j += 32) {
    // Columns j .. j + 31: half of B panel j / kNr; column c of a panel at 2c in each pair.
    const uint16_t* b = Bp + (j / kNr) * kNr * kpad + (j % kNr) * 2;
    for (int64_t i = 0; i < m; i += kMr) {
      const uint16_t* a = Ap + i * kpad; // A panel i / kMr; chunk t at t · kMr · kChunk
      _tile_zero(0);
      _tile_zero(1);
      _tile_zero(2);
      _tile_zero(3);
      for (int64_t t = 0; t < chunks; ++t) {
        const uint16_t* at = a + t * kMr * kChunk; // 32 rows × 32 k, 64 bytes per row
        const uint16_t* bt = b + t * 16 * 2 * kNr; // pairs 16t .. 16t + 15
        _tile_loadd(4, at, 64);
        _tile_loadd(5, at + 16 * kChunk, 64);
        _tile_loadd(6, bt, kBStride);
        _tile_loadd(7, bt + 32, kBStride);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
      }
      _tile_stored(0, tile, 128);
      _tile_stored(1, tile + 16, 128);
      _tile_stored(2, tile + 16 * 32, 128);
      _tile_stored(3, tile + 16 * 32 + 16, 128);
      const int64_t mm = min_i64(32, m - i), nn = min_i64(32, n - j);
      for (int64_t r = 0; r < mm; ++r)
        for (int64_t c = 0; c < nn; ++c) {
          float& cij = C[(i + r) * ldc + j + c];
          cij = beta == 0.0f ? alpha * tile[r * 32 + c] : alpha * tile[r * 32 + c] + beta * cij;
        }
    }
  }
  _tile_release();
}

#if defined(__AVX512F__)
// out[c · 16 + e] = in[e · ld + c] for c, e < 16: a 16 × 16 transposition of 32-bit elements in
// registers. Rows r_e, each four 128-bit lanes L of four elements (columns 4L .. 4L + 3):
//   1. unpack 32-bit elements of rows (e, e + 1): lane L then holds columns 4L, 4L+1 (lo) or
//      4L+2, 4L+3 (hi) of the two rows, interleaved;
//   2. unpack 64-bit halves of those: b[4g + m], lane L = column 4L + m of rows 4g .. 4g + 3;
//   3. out row 4L + m = lane L of b[m], b[4 + m], b[8 + m], b[12 + m]: a 4 × 4 transposition of
//      128-bit lanes, two rounds of shuffle_i32x4.
// (GCC 12's avx512fintrin.h makes the unmasked unpacks from the masked ones with an undefined
// source operand, which -Wuninitialized reports once inlined: GCC bug 105593, fixed in GCC 13.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
void transpose16(const uint32_t* in, int64_t ld, uint32_t* out) {
  __m512i r[16], a[16], b[16];
  for (int e = 0; e < 16; ++e) r[e] = _mm512_loadu_si512(in + e * ld);
  for (int e = 0; e < 16; e += 2) {
    a[e] = _mm512_unpacklo_epi32(r[e], r[e + 1]);
    a[e + 1] = _mm512_unpackhi_epi32(r[e], r[e + 1]);
  }
  for (int g = 0; g < 16; g += 4) {
    b[g] = _mm512_unpacklo_epi64(a[g], a[g + 2]);
    b[g + 1] = _mm512_unpackhi_epi64(a[g], a[g + 2]);
    b[g + 2] = _mm512_unpacklo_epi64(a[g + 1], a[g + 3]);
    b[g + 3] = _mm512_unpackhi_epi64(a[g + 1], a[g + 3]);
  }
  for (int m = 0; m < 4; ++m) {
    const __m512i c0 = _mm512_shuffle_i32x4(b[m], b[4 + m], 0x44); // b[m].L0 L1, b[4+m].L0 L1
    const __m512i c1 = _mm512_shuffle_i32x4(b[m], b[4 + m], 0xEE); // b[m].L2 L3, b[4+m].L2 L3
    const __m512i c2 = _mm512_shuffle_i32x4(b[8 + m], b[12 + m], 0x44);
    const __m512i c3 = _mm512_shuffle_i32x4(b[8 + m], b[12 + m], 0xEE);
    _mm512_storeu_si512(out + (0 + m) * 16, _mm512_shuffle_i32x4(c0, c2, 0x88));  // lane 0 of each
    _mm512_storeu_si512(out + (4 + m) * 16, _mm512_shuffle_i32x4(c0, c2, 0xDD));  // lane 1
    _mm512_storeu_si512(out + (8 + m) * 16, _mm512_shuffle_i32x4(c1, c3, 0x88));  // lane 2
    _mm512_storeu_si512(out + (12 + m) * 16, _mm512_shuffle_i32x4(c1, c3, 0xDD)); // lane 3
  }
}
#pragma GCC diagnostic pop

// A panel's chunk (32 lanes × 16 pairs) from 16 rows of pairs: two 16 × 16 transpositions.
void pairs_to_chunk(const uint32_t* pairs, int64_t ld, uint16_t* chunk) {
  uint32_t* out = reinterpret_cast<uint32_t*>(chunk); // 64-byte aligned: chunks are 2 KiB apart
  transpose16(pairs, ld, out);
  transpose16(pairs + 16, ld, out + 16 * 16);
}
constexpr auto kPairsToChunk = &pairs_to_chunk;
#else
constexpr void (*kPairsToChunk)(const uint32_t*, int64_t, uint16_t*) = nullptr; // the driver's loop
#endif

} // namespace

const Bf16KernelSet* bf16_kernels_amx() {
  static constexpr Bf16KernelSet set{"amx", kMr, kChunk, kChunk, &block, nullptr, kPairsToChunk};
  return &set;
}
#else
const Bf16KernelSet* bf16_kernels_amx() { return nullptr; }
#endif

} // namespace pillars::cpu::gemm
