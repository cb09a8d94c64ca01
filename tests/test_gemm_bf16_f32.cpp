// gemm_bf16_f32 (fp32 operands rounded to bf16 while they are packed), gemm_bf16_f32_prepacked
// (op(B) packed once, from fp32 or from its rounded copy) and the bf16 weight cache of
// gemm_at_precision (B rounded once, packed once per layout), against what they replace:
// rounding A and B into bf16 copies (cpu::f32_to_bf16, the same kernels/bf16_bits.h rounding) and
// calling gemm_bf16. The operands and sums are the same, so the results must be the same bits, on
// every path (AMX, AVX512-BF16, portable); a path this CPU lacks is reported as skipped.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/cast.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/bf16_bits.h"
#include "kernels/cpu/gemm_bf16.h"
#include "kernels/cpu/gemm_bf16_packed.h"
#include "kernels/cpu/gemm_precision.h"
#include "tests/gemm_bf16_cases.h"
#include "tests/skip.h"

namespace {

using pillars::cpu::Isa;
using pillars::testing::gemm_bf16::kAmx, pillars::testing::gemm_bf16::kAvx512Bf16,
    pillars::testing::gemm_bf16::kPortable, pillars::testing::gemm_bf16::Path, pillars::testing::gemm_bf16::isa_for,
    pillars::testing::gemm_bf16::runnable;

struct Shape {
  bool ta, tb;
  int64_t M, N, K, pad; // pad: extra columns of every stored row (ld = cols + pad)
};

const Shape kShapes[] = {
    {false, true, 1, 64, 64, 0},
    {false, true, 5, 200, 33, 3},
    {false, false, 7, 65, 128, 0},
    {true, false, 33, 17, 9, 1},
    {true, true, 96, 130, 257, 2},
    {false, true, 100, 512, 512, 0},
    {false, true, 3, 1000, 256, 0},
    {true, true, 1, 1, 1, 0},
    {false, false, 130, 70, 1025, 5},
    // Tall: at least 4 blocks of 96 rows per thread (up to 5 threads), where an fp32 A is rounded
    // block by block by the thread that uses it (against a bf16 A packed, then read in place).
    {false, true, 2000, 300, 71, 2},
    {false, false, 2000, 130, 64, 0},
};

std::vector<float> random_matrix(int64_t rows, int64_t ld, std::mt19937& rng) {
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(rows * ld));
  for (float& v : x) v = d(rng);
  return x;
}

std::vector<uint16_t> rounded(const std::vector<float>& x) {
  std::vector<uint16_t> y(x.size());
  pillars::cpu::f32_to_bf16({.n = static_cast<int64_t>(x.size())}, x.data(), y.data());
  return y;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

void check_path(const Path& path) {
  if (!runnable(path)) return;
  pillars::cpu::ScopedIsa forced(isa_for(path));
  REQUIRE(std::string(pillars::cpu::gemm_bf16_path()) == path.name);
  std::mt19937 rng(11);
  for (const Shape& s : kShapes) {
    CAPTURE(s.ta);
    CAPTURE(s.tb);
    CAPTURE(s.M);
    CAPTURE(s.N);
    CAPTURE(s.K);
    const int64_t a_rows = s.ta ? s.K : s.M, a_cols = s.ta ? s.M : s.K, lda = a_cols + s.pad;
    const int64_t b_rows = s.tb ? s.N : s.K, b_cols = s.tb ? s.K : s.N, ldb = b_cols + s.pad;
    const int64_t ldc = s.N + s.pad;
    const std::vector<float> A = random_matrix(a_rows, lda, rng), B = random_matrix(b_rows, ldb, rng);
    const std::vector<float> C0 = random_matrix(s.M, ldc, rng);
    const std::vector<uint16_t> A16 = rounded(A), B16 = rounded(B);
    for (const float beta : {0.0f, 0.5f}) {
      std::vector<float> want = C0, got = C0, prepacked = C0, cached = C0;
      pillars::cpu::gemm_bf16(s.ta, s.tb, s.M, s.N, s.K, 1.25f, A16.data(), lda, B16.data(), ldb, beta, want.data(),
                              ldc);
      pillars::cpu::gemm_bf16_f32(s.ta, s.tb, s.M, s.N, s.K, 1.25f, A.data(), lda, B.data(), ldb, beta, got.data(),
                                  ldc);
      CHECK(same_bits(got, want));
      const pillars::cpu::Bf16PackedB packed(s.tb, s.N, s.K, B.data(), ldb);
      CHECK(packed.matches(s.tb, s.N, s.K, B.data(), ldb));
      CHECK_FALSE(packed.matches(!s.tb, s.N, s.K, B.data(), ldb));
      pillars::cpu::gemm_bf16_f32_prepacked(s.ta, s.M, s.N, s.K, 1.25f, A.data(), lda, packed, beta, prepacked.data(),
                                            ldc);
      CHECK(same_bits(prepacked, want));
      // Through gemm_at_precision with B allowed in an installed weight cache: packed once, reused.
      pillars::cpu::Bf16WeightCache cache;
      cache.allow(B.data());
      pillars::cpu::ScopedMatmulPrecision bf16(pillars::Precision::bf16);
      pillars::cpu::ScopedBf16Weights installed(&cache);
      for (int round = 0; round < 2; ++round) {
        cached = C0;
        pillars::cpu::gemm_at_precision(s.ta, s.tb, s.M, s.N, s.K, 1.25f, A.data(), lda, B.data(), ldb, beta,
                                        cached.data(), ldc);
        CHECK(same_bits(cached, want));
      }
      CHECK(cache.rounded_matrices() == 1);
      CHECK(cache.packed_matrices() == 1);
    }
  }
  // A matrix the cache does not allow is never packed by it.
  pillars::cpu::Bf16WeightCache cache;
  pillars::cpu::ScopedMatmulPrecision bf16(pillars::Precision::bf16);
  pillars::cpu::ScopedBf16Weights installed(&cache);
  const std::vector<float> A = random_matrix(4, 8, rng), B = random_matrix(8, 8, rng);
  std::vector<float> C(32);
  pillars::cpu::gemm_at_precision(false, true, 4, 8, 8, 1.0f, A.data(), 8, B.data(), 8, 0.0f, C.data(), 8);
  CHECK(cache.packed_matrices() == 0);
}

// C = A·op(B) + 0.5 · C in bf16 through gemm_at_precision (batch > 1: B shared, stride 0), with the
// cache installed now, if any.
std::vector<float> product(bool tb, int64_t M, int64_t N, int64_t K, const std::vector<float>& A,
                           const std::vector<float>& B, int64_t ldb, int64_t batch) {
  pillars::cpu::ScopedMatmulPrecision bf16(pillars::Precision::bf16);
  std::vector<float> C(static_cast<size_t>(batch * M * N), 0.5f);
  pillars::cpu::gemm_at_precision_batched(false, tb, batch, M, N, K, 1.0f, A.data(), K, M * K, B.data(), ldb, 0, 0.5f,
                                          C.data(), N, M * N);
  return C;
}

// A weight W (out × in, row stride in + 3) read as a training step reads it, under a cache reset
// to it as the trainer resets it each update: x·Wᵀ (trans_b, N = out, K = in) and dY·W (N = in,
// K = out), unbatched and as the shared B of a batch, each twice. Every product gives the bits of
// the uncached one, W is rounded once and packed once per layout; after W changes and the cache is
// reset, the products read the new W (no stale copy), rounded once again, into the same storage.
void check_update_cache(const Path& path) {
  if (!runnable(path)) return;
  pillars::cpu::ScopedIsa forced(isa_for(path));
  REQUIRE(std::string(pillars::cpu::gemm_bf16_path()) == path.name);
  std::mt19937 rng(23);
  const int64_t out = 70, in = 40, ldw = in + 3, M = 5;
  std::vector<float> W = random_matrix(out, ldw, rng);
  const std::vector<float> X = random_matrix(3 * M, in, rng), dY = random_matrix(3 * M, out, rng);
  pillars::cpu::Bf16WeightCache cache;
  std::vector<float> stale; // the first update's x·Wᵀ
  const pillars::cpu::Bf16PackedB* first_packed = nullptr;
  int64_t first_bytes = 0;
  for (int update = 0; update < 2; ++update) {
    CAPTURE(update);
    std::vector<std::vector<float>> want;
    for (const int64_t batch : {1, 3}) {
      want.push_back(product(true, M, out, in, X, W, ldw, batch));
      want.push_back(product(false, M, in, out, dY, W, ldw, batch));
    }
    if (update == 0) stale = want[0];
    const float* allowed[] = {W.data()};
    cache.reset(allowed);
    CHECK(cache.rounded_matrices() == 0);
    CHECK(cache.packed_matrices() == 0);
    pillars::cpu::ScopedBf16Weights installed(&cache);
    for (int round = 0; round < 2; ++round) {
      size_t i = 0;
      for (const int64_t batch : {1, 3}) {
        CHECK(same_bits(product(true, M, out, in, X, W, ldw, batch), want[i++]));
        CHECK(same_bits(product(false, M, in, out, dY, W, ldw, batch), want[i++]));
      }
    }
    CHECK(cache.rounded_matrices() == 1); // one rounding of W
    CHECK(cache.packed_matrices() == 2);  // one packing per layout
    // The second update packs into the first one's storage: nothing allocated.
    const pillars::cpu::Bf16PackedB* packed = cache.find_or_pack(true, out, in, W.data(), ldw);
    if (update == 0) first_packed = packed, first_bytes = cache.packed_bytes();
    CHECK(packed == first_packed);
    CHECK(cache.packed_bytes() == first_bytes);
    if (update == 1) CHECK_FALSE(same_bits(want[0], stale)); // the products did see the new W
    for (float& w : W) w = -1.5f * w + 0.25f;                // the optimizer step, outside the cache's scope
  }
  // Reset to other matrices: W is not read from the cache any more.
  cache.reset({});
  pillars::cpu::ScopedBf16Weights installed(&cache);
  (void)product(true, M, out, in, X, W, ldw, 1);
  CHECK(cache.rounded_matrices() == 0);
  CHECK(cache.packed_matrices() == 0);
}

} // namespace

TEST_CASE("gemm_bf16_f32: amx path, the same bits as rounding first, prepacked and cached B too") { check_path(kAmx); }
TEST_CASE("gemm_bf16_f32: avx512_bf16 path, the same bits as rounding first, prepacked and cached B too") {
  check_path(kAvx512Bf16);
}
TEST_CASE("gemm_bf16_f32: portable path, the same bits as rounding first, prepacked and cached B too") {
  check_path(kPortable);
}

TEST_CASE("bf16 weight cache: amx path, one rounding per update, one packing per layout, the same bits") {
  check_update_cache(kAmx);
}
TEST_CASE("bf16 weight cache: avx512_bf16 path, one rounding per update, one packing per layout, the same bits") {
  check_update_cache(kAvx512Bf16);
}
TEST_CASE("bf16 weight cache: portable path, one rounding per update, one packing per layout, the same bits") {
  check_update_cache(kPortable);
}

TEST_CASE("gemm_bf16_f32: a B packed for another path is packed again from its source") {
  if (!runnable(kAvx512Bf16)) return;
  std::mt19937 rng(5);
  const std::vector<float> A = random_matrix(3, 40, rng), B = random_matrix(70, 40, rng);
  std::vector<float> want(3 * 70), got(3 * 70);
  const std::vector<uint16_t> B16 = rounded(B);
  std::unique_ptr<pillars::cpu::Bf16PackedB> packed, from_rounded; // the second as the weight cache makes it
  {
    pillars::cpu::ScopedIsa forced(Isa::avx512_bf16);
    packed = std::make_unique<pillars::cpu::Bf16PackedB>(true, 70, 40, B.data(), 40);
    from_rounded = std::make_unique<pillars::cpu::Bf16PackedB>(true, 70, 40, B16.data(), 40, B.data(), 40);
  }
  pillars::cpu::ScopedIsa portable(Isa::avx512);
  pillars::cpu::gemm_bf16_f32(false, true, 3, 70, 40, 1.0f, A.data(), 40, B.data(), 40, 0.0f, want.data(), 70);
  pillars::cpu::gemm_bf16_f32_prepacked(false, 3, 70, 40, 1.0f, A.data(), 40, *packed, 0.0f, got.data(), 70);
  CHECK(same_bits(got, want));
  std::fill(got.begin(), got.end(), 0.0f);
  pillars::cpu::gemm_bf16_f32_prepacked(false, 3, 70, 40, 1.0f, A.data(), 40, *from_rounded, 0.0f, got.data(), 70);
  CHECK(same_bits(got, want));
}

TEST_CASE("round_to_bf16: the rounding of cpu::f32_to_bf16, over a strided matrix") {
  std::mt19937 rng(3);
  std::vector<float> X = random_matrix(9, 13, rng);
  X[0] = std::numeric_limits<float>::quiet_NaN(), X[1] = std::numeric_limits<float>::infinity(), X[2] = 1e-40f;
  X[3] = 1.0f + 0x1p-8f; // a tie: to even (1.0)
  const std::vector<uint16_t> all = rounded(X);
  std::vector<uint16_t> got(9 * 11);
  pillars::cpu::round_to_bf16(X.data(), 9, 11, 13, got.data());
  for (int64_t r = 0; r < 9; ++r)
    for (int64_t c = 0; c < 11; ++c)
      CHECK(got[static_cast<size_t>(r * 11 + c)] == all[static_cast<size_t>(r * 13 + c)]);
}

// The packing's AVX-512 rounding (gemm_bf16_round_avx512.cpp) rewrites kernels/bf16_bits.h's
// formula for 16 lanes; it must give that formula's bits for every kind of input: each exponent
// with the mantissas around a rounding tie, subnormals, ±0, infinities, quiet and signalling NaNs
// with payloads, and random patterns; over every length up to 40 (the masked tails) without
// writing past the end.
TEST_CASE("gemm_bf16 packing: the AVX-512 rounding gives kernels/bf16_bits.h's bits, tails included") {
  using pillars::bf16_bits_of_f32_bits;
  if (!pillars::cpu::isa_supported(Isa::avx512)) {
    SKIP_TEST("this CPU has no AVX-512");
    return;
  }
  const pillars::cpu::gemm::Bf16Rounding* rounding = pillars::cpu::gemm::bf16_rounding_avx512();
  REQUIRE(rounding != nullptr);

  std::vector<uint32_t> bits;
  for (uint32_t sign : {0u, 0x80000000u})
    for (uint32_t exponent = 0; exponent < 256; ++exponent)
      for (uint32_t mantissa : {0u, 1u, 0x7fffu, 0x8000u, 0x8001u, 0x17fffu, 0x18000u, 0x18001u, 0x400000u, 0x7fffffu})
        bits.push_back(sign | exponent << 23 | mantissa);
  std::mt19937 rng(11);
  for (int i = 0; i < 4000; ++i) bits.push_back(static_cast<uint32_t>(rng()));
  std::vector<float> x(bits.size());
  std::memcpy(x.data(), bits.data(), bits.size() * 4);

  // The whole run, then every short length at one offset.
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<uint16_t> y(static_cast<size_t>(n) + 1, 0xabcd);
  rounding->run(x.data(), n, y.data());
  int wrong = 0;
  for (int64_t i = 0; i < n; ++i) wrong += y[size_t(i)] != bf16_bits_of_f32_bits(bits[size_t(i)]);
  CHECK(wrong == 0);
  CHECK(y[size_t(n)] == 0xabcd);
  std::vector<uint32_t> pairs(41);
  for (int64_t len = 0; len <= 40; ++len) {
    std::fill(y.begin(), y.end(), uint16_t{0xabcd});
    rounding->run(x.data() + 3, len, y.data());
    for (int64_t i = 0; i < len; ++i) CHECK(y[size_t(i)] == bf16_bits_of_f32_bits(bits[size_t(3 + i)]));
    CHECK(y[size_t(len)] == 0xabcd);

    for (const bool odd_row : {true, false}) {
      std::fill(pairs.begin(), pairs.end(), 0xdeadbeefu);
      rounding->pairs(x.data() + 5, odd_row ? x.data() + 700 : nullptr, len, pairs.data());
      for (int64_t l = 0; l < len; ++l) {
        const uint32_t high = odd_row ? bf16_bits_of_f32_bits(bits[size_t(700 + l)]) : 0u;
        CHECK(pairs[size_t(l)] == (uint32_t{bf16_bits_of_f32_bits(bits[size_t(5 + l)])} | high << 16));
      }
      CHECK(pairs[size_t(len)] == 0xdeadbeefu);
    }
  }
}
