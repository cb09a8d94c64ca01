// What the bf16 GEMM's tests share (test_gemm_bf16.cpp, test_gemm_bf16_amx_emulated.cpp): random
// bf16 operands with NaN-filled stride gaps, and the comparison with the float64 reference.
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
#pragma once

#include <doctest/doctest.h>

#include "kernels/cpu/cast.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/gemm_bf16.h"
#include "tests/skip.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace pillars::testing::gemm_bf16 {

inline constexpr uint16_t kNaNBf16 = 0x7fc0; // fills the stride gaps of A and B: reading one poisons C
inline constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
inline constexpr float kSentinel = 12345.0f; // fills the stride gap of C, which must stay untouched

// ---- the paths -----------------------------------------------------------------------------------

struct Path {
  const char* name;    // gemm_bf16_path() while it runs
  cpu::Isa isa;        // forced for it
  const char* lacking; // why a CPU cannot run it ("" for the portable path, which runs everywhere)
};

inline const Path kAmx{"amx", cpu::Isa::amx, "this CPU has no AMX-BF16 (or Linux did not grant the AMX tile state)"};
inline const Path kAvx512Bf16{"avx512_bf16", cpu::Isa::avx512_bf16, "this CPU has no AVX512-BF16"};
// The portable path runs below avx512_bf16: at the best fp32 level this CPU has.
inline const Path kPortable{"portable", cpu::Isa::avx512, ""};

inline cpu::Isa isa_for(const Path& path) {
  return std::min(path.isa, cpu::detected_isa(), [](cpu::Isa a, cpu::Isa b) { return int(a) < int(b); });
}

// False (after marking the case skipped) when the CPU cannot run the path.
inline bool runnable(const Path& path) {
  if (path.lacking[0] != '\0' && !cpu::isa_supported(path.isa)) {
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

inline uint16_t to_bf16(float x) {
  uint16_t y;
  pillars::cpu::f32_to_bf16({.n = 1}, &x, &y);
  return y;
}
inline float from_bf16(uint16_t x) {
  float y;
  pillars::cpu::bf16_to_f32({.n = 1}, &x, &y);
  return y;
}

// Uniform values in [-1, 1), rounded to bf16.
inline void fill_random(Matrix<uint16_t>& m, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t i = 0; i < m.rows; ++i)
    for (int64_t j = 0; j < m.cols; ++j) m.at(i, j) = to_bf16(dist(rng));
}

inline Matrix<uint16_t> abs_of(Matrix<uint16_t> m) {
  for (uint16_t& x : m.data) x = x == kNaNBf16 ? x : uint16_t(x & 0x7fff); // clear the sign bit
  return m;
}

struct Case {
  bool trans_a, trans_b;
  int64_t M, N, K;
  float alpha = 1.0f, beta = 0.0f;
  int64_t pad_a = 0, pad_b = 0, pad_c = 0; // extra leading-dimension elements
};

inline std::string describe(const char* path, const Case& c) {
  return std::string(path) + " " + (c.trans_a ? "T" : "N") + (c.trans_b ? "T" : "N") + " M=" + std::to_string(c.M) +
         " N=" + std::to_string(c.N) + " K=" + std::to_string(c.K) + " alpha=" + std::to_string(c.alpha) +
         " beta=" + std::to_string(c.beta) + " pads=" + std::to_string(c.pad_a) + "," + std::to_string(c.pad_b) + "," +
         std::to_string(c.pad_c);
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

// Compares C (computed by `path`) with the reference; returns the number of wrong elements.
inline int64_t compare(const char* path, const Case& c, const Operands& op, const Matrix<float>& C) {
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
        FAIL_CHECK(describe(path, c) << ": C(" << i << "," << j << ") = " << got << ", expected " << want
                                     << " (tolerance " << tol << ")");
    }
    for (int64_t j = c.N; j < C.ld; ++j)
      if (C.at(i, j) != kSentinel && wrong++ == 0)
        FAIL_CHECK(describe(path, c) << ": wrote into the stride gap of C at (" << i << "," << j << ")");
  }
  return wrong;
}

// Runs one case through `product` (gemm_bf16's signature) and compares; returns the wrong count.
template <class Product>
int64_t check(const char* path, const Case& c, std::mt19937& rng, Product&& product) {
  const Operands op(c, rng);
  Matrix<float> C = op.C0;
  product(c.trans_a, c.trans_b, c.M, c.N, c.K, c.alpha, op.A.data.data(), op.A.ld, op.B.data.data(), op.B.ld, c.beta,
          C.data.data(), C.ld);
  return compare(path, c, op, C);
}

// NN, NT, TN (the three a training step uses) and TT.
constexpr bool kLayouts[4][2] = {{false, false}, {false, true}, {true, false}, {true, true}};

} // namespace pillars::testing::gemm_bf16
