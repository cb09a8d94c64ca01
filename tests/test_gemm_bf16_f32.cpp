// gemm_bf16_f32 (fp32 operands rounded to bf16 while they are packed), gemm_bf16_f32_prepacked
// (op(B) packed once) and the bf16 weight cache of gemm_at_precision, against what they replace:
// rounding A and B into bf16 copies (cpu::f32_to_bf16, the same kernels/bf16_bits.h rounding) and
// calling gemm_bf16. The operands and sums are the same, so the results must be the same bits, on
// every path (AMX, AVX512-BF16, portable); a path this CPU lacks is reported as skipped.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/cast.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/gemm_bf16.h"
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
    {false, true, 1, 64, 64, 0},    {false, true, 5, 200, 33, 3},  {false, false, 7, 65, 128, 0},
    {true, false, 33, 17, 9, 1},    {true, true, 96, 130, 257, 2}, {false, true, 100, 512, 512, 0},
    {false, true, 3, 1000, 256, 0}, {true, true, 1, 1, 1, 0},      {false, false, 130, 70, 1025, 5},
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

} // namespace

TEST_CASE("gemm_bf16_f32: amx path, the same bits as rounding first, prepacked and cached B too") { check_path(kAmx); }
TEST_CASE("gemm_bf16_f32: avx512_bf16 path, the same bits as rounding first, prepacked and cached B too") {
  check_path(kAvx512Bf16);
}
TEST_CASE("gemm_bf16_f32: portable path, the same bits as rounding first, prepacked and cached B too") {
  check_path(kPortable);
}

TEST_CASE("gemm_bf16_f32: a B packed for another path is packed again from its source") {
  if (!runnable(kAvx512Bf16)) return;
  std::mt19937 rng(5);
  const std::vector<float> A = random_matrix(3, 40, rng), B = random_matrix(70, 40, rng);
  std::vector<float> want(3 * 70), got(3 * 70);
  std::unique_ptr<pillars::cpu::Bf16PackedB> packed;
  {
    pillars::cpu::ScopedIsa forced(Isa::avx512_bf16);
    packed = std::make_unique<pillars::cpu::Bf16PackedB>(true, 70, 40, B.data(), 40);
  }
  pillars::cpu::ScopedIsa portable(Isa::avx512);
  pillars::cpu::gemm_bf16_f32(false, true, 3, 70, 40, 1.0f, A.data(), 40, B.data(), 40, 0.0f, want.data(), 70);
  pillars::cpu::gemm_bf16_f32_prepacked(false, 3, 70, 40, 1.0f, A.data(), 40, *packed, 0.0f, got.data(), 70);
  CHECK(same_bits(got, want));
}
