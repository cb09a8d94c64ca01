// Hopper's warpgroup MMA (kernels/cuda/wgmma_layout.h, wgmma.cuh, wgmma_check.h).
//
//  * On the host, in every build: the K-major core-matrix layout puts every element of a tile at its
//    own offset inside the tile's bytes, in 128-byte core matrices of 8 rows of 16 bytes; the
//    descriptor holds its fields where the PTX ISA's "Matrix Descriptor Format" puts them; the
//    accumulator mapping covers the 64 × N output once over the warpgroup's 128 threads; the
//    128-byte swizzle permutes the 16-byte chunks of each row and nothing else.
//  * On a Hopper GPU: one 64 × 64 tile product through wgmma (K = 16, 64, 256; A from shared memory,
//    then from registers, the form attention's P takes; without swizzle, then in the 128-byte
//    swizzle the TMA writes, with B MN-major when A is in registers, as V is read) equals the
//    float64 product of the same bf16 operands to fp32 accumulation rounding. A wrong layout, descriptor reading or A fragment gives
//    errors of the size of the values themselves, not ~1e-6.
#include <doctest/doctest.h>

#include "skip.h"

#include <cmath>
#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include "engine/tensor.h" // f32_to_bf16, bf16_to_f32
#include "kernels/cuda/wgmma_layout.h"

#ifdef PILLARS_HAVE_CUDA
#include "kernels/cuda/wgmma_check.h"
#endif

using namespace pillars;
namespace wg = pillars::cuda::wgmma;

TEST_CASE("cuda wgmma: the K-major layout, the descriptor and the accumulator map (host)") {
  for (int K : {16, 64, 128}) {
    const int R = 64;
    std::set<uint32_t> offsets;
    for (int r = 0; r < R; ++r)
      for (int k = 0; k < K; ++k) {
        const uint32_t o = wg::kmajor_offset(r, k, K);
        CHECK(o % 2 == 0);
        CHECK(o < static_cast<uint32_t>(R * K * 2));
        offsets.insert(o);
        // Inside its core matrix (128 bytes): row r mod 8 at 16-byte steps, column k mod 8 at 2.
        CHECK(o % wg::kCoreBytes == static_cast<uint32_t>((r % 8) * 16 + (k % 8) * 2));
        // The core matrix: (r/8) bands of SBO, (k/8) steps of LBO.
        CHECK(o / wg::kCoreBytes * wg::kCoreBytes == (r / 8) * wg::kmajor_sbo(K) + (k / 8) * wg::kmajor_lbo());
      }
    CHECK(offsets.size() == static_cast<size_t>(R * K)); // every element its own 2 bytes
  }
  // Fields: start 0x1230 (>> 4 = 0x123) in bits 0–13, LBO 128 (8) in 16–29, SBO 1024 (64) in 32–45,
  // nothing else set (base offset 0, no swizzle).
  const uint64_t d = wg::descriptor(0x1230, 128, 1024);
  CHECK((d & 0x3FFF) == 0x123);
  CHECK(((d >> 16) & 0x3FFF) == 8);
  CHECK(((d >> 32) & 0x3FFF) == 64);
  CHECK((d & ~(uint64_t{0x3FFF} | uint64_t{0x3FFF} << 16 | uint64_t{0x3FFF} << 32)) == 0);
  // The 128-byte swizzle: a panel of 64 rows × 64 columns fills its 8 KB once; row r stays in bytes
  // [128 r, 128 r + 128); chunk c (8 columns) moves to c XOR (r mod 8), so the 8 rows of an atom
  // put any one chunk column in 8 different 16-byte slots (bank groups).
  std::set<uint32_t> swizzled;
  for (int r = 0; r < 64; ++r)
    for (int c = 0; c < 64; ++c) {
      const uint32_t o = wg::sw128_offset(r, c);
      CHECK(o / 128 == static_cast<uint32_t>(r));
      CHECK(o % 16 == static_cast<uint32_t>(c % 8) * 2);
      swizzled.insert(o);
    }
  CHECK(swizzled.size() == 64u * 64u);
  for (int c = 0; c < 64; c += 8) {
    std::set<uint32_t> slots;
    for (int r = 0; r < 8; ++r) slots.insert(wg::sw128_offset(r, c) % 128 / 16);
    CHECK(slots.size() == 8u);
  }
  CHECK(wg::sw128_offset(3, 8) == 3 * 128 + (1 ^ 3) * 16); // worked example: chunk 1 of row 3 in slot 2
  // Its descriptor: SBO 1,024 (64), swizzle mode 1 in bits 62–63, the rest as given.
  const uint64_t sw = wg::descriptor_sw128(0x4020, 16);
  CHECK((sw & 0x3FFF) == 0x402);
  CHECK(((sw >> 16) & 0x3FFF) == 1);
  CHECK(((sw >> 32) & 0x3FFF) == 64);
  CHECK((sw >> 62) == 1);
  CHECK(((sw >> 46) & 0xFFFF) == 0); // base offset and the bits up to the mode: 0
  // The accumulator: 128 threads × 32 registers cover the 64 × 64 tile once.
  std::set<int> cells;
  for (int t = 0; t < 128; ++t)
    for (int r = 0; r < 32; ++r) {
      const int row = wg::accumulator_row(t, r), col = wg::accumulator_col(t, r);
      CHECK((row >= 0 && row < 64 && col >= 0 && col < 64));
      cells.insert(row * 64 + col);
    }
  CHECK(cells.size() == 64u * 64u);
}

#ifdef PILLARS_HAVE_CUDA

TEST_CASE("cuda wgmma: a 64 x 64 tile product equals the float64 product of its bf16 operands") {
  const std::string why = cuda::wgmma_unavailable_reason();
  if (!why.empty()) {
    SKIP_TEST(why);
    return;
  }
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const bool swizzled : {false, true})
    for (const bool a_in_registers : {false, true})
      for (int K : {16, 64, 256}) {
        if (swizzled && !a_in_registers && K % 64 != 0) continue; // K-major swizzled panels: 64 columns
        INFO("K = " << K << (a_in_registers ? ", A from registers" : ", A from shared memory")
                    << (swizzled ? (a_in_registers ? ", B MN-major" : ", K-major") : "")
                    << (swizzled ? ", 128-byte swizzle" : ", no swizzle"));
        std::vector<uint16_t> a(64 * K), bt(64 * K);
        for (auto& x : a) x = f32_to_bf16(normal(rng));
        for (auto& x : bt) x = f32_to_bf16(normal(rng));
        const std::vector<float> d = cuda::wgmma_tile_product(a, bt, K, a_in_registers, swizzled);
        // Products of bf16 values are exact in fp32; only the fp32 sums round: |error| ≤ ~K · 2^-24 ·
        // Σ|a·b|. Bound: 1e-5 of Σ|a·b| per element (a wrong layout is off by O(Σ|a·b|)).
        int wrong = 0;
        double worst = 0;
        for (int i = 0; i < 64; ++i)
          for (int j = 0; j < 64; ++j) {
            double exact = 0, magnitude = 0;
            for (int k = 0; k < K; ++k) {
              const double p = double(bf16_to_f32(a[i * K + k])) * double(bf16_to_f32(bt[j * K + k]));
              exact += p, magnitude += std::abs(p);
            }
            const double err = std::abs(double(d[i * 64 + j]) - exact) / magnitude;
            worst = std::max(worst, err);
            wrong += err > 1e-5;
          }
        CHECK_MESSAGE(wrong == 0, wrong, " of 4096 elements off; worst ", worst, " of Σ|a·b|");
      }
}

#endif // PILLARS_HAVE_CUDA
