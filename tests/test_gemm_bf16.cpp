// The bf16 GEMM against a float64 reference on the same bf16 values, on each of its three paths
// (AMX, AVX512-BF16, portable). A path this CPU cannot run is reported as skipped, with the reason.
//
// Tolerance. The reference widens the bf16 operands (exactly), multiplies in double (each product
// of two 8-bit significands is exact) and sums in double, so it is the exact result to within
// ~K · 2⁻⁵³ before its final rounding. Our paths multiply exactly too and differ from it only by
// summing in fp32, whose error for any order is bounded by
//     |C − C_exact| <= γ_K · (|alpha| · (|A|·|B|)_ij + |beta · C0_ij|),   γ_K ≈ K · 2⁻²⁴
// (Higham §3.5; the same bound as sgemm's test, tests/test_gemm.cpp). We allow (K + 16) ·
// FLT_EPSILON (2⁻²³, twice the unit roundoff per step) times that magnitude, element by element;
// the 16 covers the alpha/beta update, the reference's own rounding and the AVX512-BF16 path's
// passes over K (each pass adds its partial sum onto C: two more roundings). The rounding of the
// operands to bf16 is not an error here: both sides see the same bf16 values. A wrong element, a
// dropped pair of k or a mis-packed edge is off by O(|A||B|) and fails by far.
#include <doctest/doctest.h>

#include "kernels/cpu/convert.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/gemm_bf16.h"
#include "tests/skip.h"

#include <omp.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

using pillars::cpu::Isa;

constexpr uint16_t kNaNBf16 = 0x7fc0; // fills the stride gaps of A and B: reading one poisons C
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kSentinel = 12345.0f; // fills the stride gap of C, which must stay untouched

// ---- the paths -----------------------------------------------------------------------------------

struct Path {
  const char* name; // gemm_bf16_path() while it runs
  Isa isa;          // forced for it
  const char* lacking;
};

const Path kAmx{"amx", Isa::amx, "this CPU has no AMX-BF16 (or Linux did not grant the AMX tile state)"};
const Path kAvx512Bf16{"avx512_bf16", Isa::avx512_bf16, "this CPU has no AVX512-BF16"};
// The portable path runs below avx512_bf16: at the best fp32 level this CPU has.
const Path kPortable{"portable", Isa::avx512, ""};

Isa isa_for(const Path& path) {
  return std::min(path.isa, pillars::cpu::detected_isa(), [](Isa a, Isa b) { return int(a) < int(b); });
}

// False (after marking the case skipped) when the CPU cannot run the path.
bool runnable(const Path& path) {
  if (path.lacking[0] != '\0' && !pillars::cpu::isa_supported(path.isa)) {
    SKIP_TEST(std::string(path.lacking));
    return false;
  }
  return true;
}

// ---- operands ------------------------------------------------------------------------------------

// A row-major (rows × cols) matrix with row stride ld >= cols; the gap holds `gap`.
template <class T>
struct Matrix {
  int64_t rows, cols, ld;
  std::vector<T> data;
  Matrix(int64_t r, int64_t c, int64_t ld_, T gap)
      : rows(r), cols(c), ld(ld_), data(static_cast<size_t>(std::max<int64_t>(r * ld_, 1)), gap) {}
  T& at(int64_t i, int64_t j) { return data[static_cast<size_t>(i * ld + j)]; }
  T at(int64_t i, int64_t j) const { return data[static_cast<size_t>(i * ld + j)]; }
};

uint16_t to_bf16(float x) {
  uint16_t y;
  pillars::cpu::f32_to_bf16(&x, &y, 1);
  return y;
}
float from_bf16(uint16_t x) {
  float y;
  pillars::cpu::bf16_to_f32(&x, &y, 1);
  return y;
}

// Uniform values in [-1, 1), rounded to bf16.
void fill_random(Matrix<uint16_t>& m, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t i = 0; i < m.rows; ++i)
    for (int64_t j = 0; j < m.cols; ++j) m.at(i, j) = to_bf16(dist(rng));
}

Matrix<uint16_t> abs_of(Matrix<uint16_t> m) {
  for (uint16_t& x : m.data) x = x == kNaNBf16 ? x : uint16_t(x & 0x7fff); // clear the sign bit
  return m;
}

struct Case {
  bool trans_a, trans_b;
  int64_t M, N, K;
  float alpha = 1.0f, beta = 0.0f;
  int64_t pad_a = 0, pad_b = 0, pad_c = 0; // extra leading-dimension elements
};

std::string describe(const Case& c) {
  return std::string(pillars::cpu::gemm_bf16_path()) + " " + (c.trans_a ? "T" : "N") + (c.trans_b ? "T" : "N") +
         " M=" + std::to_string(c.M) + " N=" + std::to_string(c.N) + " K=" + std::to_string(c.K) +
         " alpha=" + std::to_string(c.alpha) + " beta=" + std::to_string(c.beta) + " pads=" + std::to_string(c.pad_a) +
         "," + std::to_string(c.pad_b) + "," + std::to_string(c.pad_c);
}

// A stored (M, K) or (K, M) when transposed, B (K, N) or (N, K), C (M, N).
struct Operands {
  Matrix<uint16_t> A, B;
  Matrix<float> C0;
  Operands(const Case& c, std::mt19937& rng)
      : A(c.trans_a ? c.K : c.M, c.trans_a ? c.M : c.K, (c.trans_a ? c.M : c.K) + c.pad_a, kNaNBf16),
        B(c.trans_b ? c.N : c.K, c.trans_b ? c.K : c.N, (c.trans_b ? c.K : c.N) + c.pad_b, kNaNBf16),
        C0(c.M, c.N, c.N + c.pad_c, kSentinel) {
    fill_random(A, rng);
    fill_random(B, rng);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (int64_t i = 0; i < c.M; ++i)
      for (int64_t j = 0; j < c.N; ++j) C0.at(i, j) = c.beta == 0.0f ? kNaN : dist(rng); // beta 0: C unread
  }
};

// Compares C (computed by the path) with the reference; returns the number of wrong elements.
int64_t compare(const Case& c, const Operands& op, const Matrix<float>& C) {
  Matrix<float> expected = op.C0, bound(c.M, c.N, c.N, 0.0f);
  pillars::cpu::gemm_bf16_reference(c.trans_a, c.trans_b, c.M, c.N, c.K, c.alpha, op.A.data.data(), op.A.ld,
                                    op.B.data.data(), op.B.ld, c.beta, expected.data.data(), expected.ld);
  const Matrix<uint16_t> absA = abs_of(op.A), absB = abs_of(op.B);
  pillars::cpu::gemm_bf16_reference(c.trans_a, c.trans_b, c.M, c.N, c.K, 1.0f, absA.data.data(), absA.ld,
                                    absB.data.data(), absB.ld, 0.0f, bound.data.data(), bound.ld);
  int64_t wrong = 0;
  for (int64_t i = 0; i < c.M; ++i) {
    for (int64_t j = 0; j < c.N; ++j) {
      const double c0 = c.beta == 0.0f ? 0.0 : std::fabs(double(c.beta) * op.C0.at(i, j));
      const double tol = (double(c.K) + 16) * FLT_EPSILON * (std::fabs(c.alpha) * bound.at(i, j) + c0) + FLT_MIN;
      const float got = C.at(i, j), want = expected.at(i, j);
      if (!(std::fabs(double(got) - double(want)) <= tol) && wrong++ == 0) // also catches NaN
        FAIL_CHECK(describe(c) << ": C(" << i << "," << j << ") = " << got << ", expected " << want << " (tolerance "
                               << tol << ")");
    }
    for (int64_t j = c.N; j < C.ld; ++j)
      if (C.at(i, j) != kSentinel && wrong++ == 0)
        FAIL_CHECK(describe(c) << ": wrote into the stride gap of C at (" << i << "," << j << ")");
  }
  return wrong;
}

int64_t check(const Case& c, std::mt19937& rng) {
  const Operands op(c, rng);
  Matrix<float> C = op.C0;
  pillars::cpu::gemm_bf16(c.trans_a, c.trans_b, c.M, c.N, c.K, c.alpha, op.A.data.data(), op.A.ld,
                          op.B.data.data(), op.B.ld, c.beta, C.data.data(), C.ld);
  return compare(c, op, C);
}

// NN, NT, TN (the three a training step uses) and TT.
constexpr bool kLayouts[4][2] = {{false, false}, {false, true}, {true, false}, {true, true}};

// ---- the checks, run once per path ----------------------------------------------------------------

void check_layouts_and_shapes(const Path& path) {
  if (!runnable(path)) return;
  pillars::cpu::ScopedIsa forced(isa_for(path));
  REQUIRE(std::string(pillars::cpu::gemm_bf16_path()) == path.name);
  std::mt19937 rng(1);

  // Ragged everywhere: around the AVX-512 tile (6 × 64), the AMX tiles (32 × 32, 32 values of k)
  // and odd K, whose last pair is padded with a zero.
  const int64_t mn_sizes[] = {1, 5, 7, 33, 65};
  const int64_t k_sizes[] = {1, 2, 3, 31, 33, 64};
  for (const auto& layout : kLayouts) {
    int64_t wrong = 0;
    for (int64_t M : mn_sizes)
      for (int64_t N : mn_sizes)
        for (int64_t K : k_sizes) wrong += check({layout[0], layout[1], M, N, K}, rng);
    CHECK_MESSAGE(wrong == 0, path.name, " ", layout[0] ? "T" : "N", layout[1] ? "T" : "N");
  }

  // A training step's products, M reduced for the reference's sake: the FFN's x·W (4096 × 256 ×
  // 1024), the logits x·Wᵀ (d_model 256, N cut from 10000), a weight gradient xᵀ·dy (K from the
  // tokens), and shapes that cross the drivers' blocks (96 × 256) and the AVX512-BF16 path's
  // passes over K (256 pairs: K = 515 runs as 129 + 129 pairs, the last one padded).
  const Case model_shapes[] = {
      {false, false, 100, 256, 1024}, {false, true, 70, 1000, 256},      {true, false, 256, 300, 515},
      {false, false, 97, 257, 515},   {true, true, 193, 65, 1030},       {false, true, 1, 700, 2049},
      {true, false, 300, 1, 77},      {false, false, 4096 / 32, 256, 1024},
  };
  for (Case c : model_shapes) {
    c.alpha = 0.75f, c.beta = 0.5f;
    CHECK(check(c, rng) == 0);
  }
}

void check_scalars_strides_and_threads(const Path& path) {
  if (!runnable(path)) return;
  pillars::cpu::ScopedIsa forced(isa_for(path));
  REQUIRE(std::string(pillars::cpu::gemm_bf16_path()) == path.name);
  std::mt19937 rng(2);

  // alpha and beta (beta = 0 over a NaN-filled C), over more than one pass of K.
  for (float alpha : {1.0f, -0.5f, 2.0f})
    for (float beta : {0.0f, 1.0f, -1.5f})
      for (const auto& layout : kLayouts) CHECK(check({layout[0], layout[1], 13, 70, 600, alpha, beta}, rng) == 0);

  // Leading dimensions wider than the rows (NaN in A's and B's gaps, a sentinel in C's).
  for (const auto& layout : kLayouts)
    for (Case c : {Case{layout[0], layout[1], 33, 65, 17, 1.0f, 0.0f, 3, 5, 7},
                   Case{layout[0], layout[1], 150, 70, 261, -1.0f, 2.0f, 1, 64, 16},
                   Case{layout[0], layout[1], 1, 1, 1, 1.0f, 1.0f, 9, 9, 9}})
      CHECK(check(c, rng) == 0);

  // BLAS's empty cases: M or N == 0 touches nothing; K == 0 or alpha == 0 leaves beta · C and
  // reads neither A nor B (NaNs there must not leak).
  pillars::cpu::gemm_bf16(false, false, 0, 5, 5, 1.0f, nullptr, 5, nullptr, 5, 0.0f, nullptr, 5);
  std::vector<float> C = {1, 2, kNaN, 4};
  pillars::cpu::gemm_bf16(false, false, 2, 2, 0, 1.0f, nullptr, 1, nullptr, 2, 0.0f, C.data(), 2);
  CHECK(C == std::vector<float>{0, 0, 0, 0});
  const std::vector<uint16_t> nan_operand(6, kNaNBf16);
  C = {1, 2, 3, 4};
  pillars::cpu::gemm_bf16(false, true, 2, 2, 3, 0.0f, nan_operand.data(), 3, nan_operand.data(), 3, -1.0f, C.data(), 2);
  CHECK(C == std::vector<float>{-1, -2, -3, -4});

  // 1 × 1 × 1 exactly: 0.5 · 3 (both exact in bf16) is 1.5.
  const uint16_t a = to_bf16(0.5f), b = to_bf16(3.0f);
  float c = kNaN;
  pillars::cpu::gemm_bf16(false, false, 1, 1, 1, 1.0f, &a, 1, &b, 1, 0.0f, &c, 1);
  CHECK(c == 1.5f);
  CHECK(from_bf16(a) == 0.5f);

  // Inside an OpenMP parallel region each call runs on its own thread (per-thread buffers).
  constexpr int kProducts = 4;
  std::vector<Case> cases;
  std::vector<Operands> ops;
  for (int i = 0; i < kProducts; ++i) {
    cases.push_back({i % 2 == 1, i % 3 == 1, 100 + i, 90 + 3 * i, 301 - 7 * i, 1.0f, 0.0f});
    ops.emplace_back(cases.back(), rng);
  }
  std::vector<Matrix<float>> results;
  for (const Operands& op : ops) results.push_back(op.C0);
#pragma omp parallel for schedule(static, 1)
  for (int i = 0; i < kProducts; ++i) {
    const Case& k = cases[size_t(i)];
    const Operands& op = ops[size_t(i)];
    pillars::cpu::gemm_bf16(k.trans_a, k.trans_b, k.M, k.N, k.K, k.alpha, op.A.data.data(), op.A.ld,
                            op.B.data.data(), op.B.ld, k.beta, results[size_t(i)].data.data(), results[size_t(i)].ld);
  }
  for (int i = 0; i < kProducts; ++i) CHECK(compare(cases[size_t(i)], ops[size_t(i)], results[size_t(i)]) == 0);
}

} // namespace

TEST_CASE("gemm_bf16: amx path, every layout, ragged and model shapes") { check_layouts_and_shapes(kAmx); }
TEST_CASE("gemm_bf16: amx path, alpha and beta, strides, empty products, threads") {
  check_scalars_strides_and_threads(kAmx);
}
TEST_CASE("gemm_bf16: avx512_bf16 path, every layout, ragged and model shapes") {
  check_layouts_and_shapes(kAvx512Bf16);
}
TEST_CASE("gemm_bf16: avx512_bf16 path, alpha and beta, strides, empty products, threads") {
  check_scalars_strides_and_threads(kAvx512Bf16);
}
TEST_CASE("gemm_bf16: portable path, every layout, ragged and model shapes") { check_layouts_and_shapes(kPortable); }
TEST_CASE("gemm_bf16: portable path, alpha and beta, strides, empty products, threads") {
  check_scalars_strides_and_threads(kPortable);
}

TEST_CASE("cpu_features: the bf16 levels are named, ordered and clamped to the CPU") {
  using pillars::cpu::isa_name;
  CHECK(std::string(isa_name(Isa::avx512_bf16)) == "avx512_bf16");
  CHECK(std::string(isa_name(Isa::amx)) == "amx");
  CHECK(int(Isa::avx512) < int(Isa::avx512_bf16));
  CHECK(int(Isa::avx512_bf16) < int(Isa::amx));
  const Isa best = pillars::cpu::detected_isa();
  for (Isa isa : {Isa::avx512_bf16, Isa::amx}) {
    pillars::cpu::ScopedIsa forced(isa); // more than the CPU has falls back to what it has
    CHECK(int(pillars::cpu::active_isa()) == std::min(int(isa), int(best)));
    CHECK(pillars::cpu::isa_supported(isa) == (int(isa) <= int(best)));
  }
  // The bf16 path follows the level; below avx512_bf16 it is the portable one.
  {
    pillars::cpu::ScopedIsa forced(Isa::generic);
    CHECK(std::string(pillars::cpu::gemm_bf16_path()) == "portable");
  }
  if (pillars::cpu::isa_supported(Isa::avx512_bf16)) {
    pillars::cpu::ScopedIsa forced(Isa::avx512_bf16);
    CHECK(std::string(pillars::cpu::gemm_bf16_path()) == "avx512_bf16");
  }
}
