// SGEMM against the reference triple loop, on every ISA path this machine can run.
//
// Tolerance. The reference accumulates in double and rounds once, so it is the exact result to
// within half a float ulp. Our kernel sums K products in float (FMA chains, split into KC blocks);
// the classic bound for any such summation order is
//     |C − C_exact| <= γ_K · (|alpha| · (|A|·|B|)_ij + |beta · C0_ij|),   γ_K = K·u / (1 − K·u),
// with u = 2⁻²⁴ the unit roundoff (Higham, "Accuracy and Stability of Numerical Algorithms", §3.5).
// We allow (K + 4) · FLT_EPSILON (= 2u per step, plus a few roundings for the alpha/beta update
// and the reference's final rounding) times that magnitude, computed element by element from
// |A| and |B|. It is loose enough to never flake and tight enough to catch a wrong element,
// a dropped K block or a mis-packed edge, which are off by O(|A||B|), not O(K·eps·|A||B|).
#include <doctest/doctest.h>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/gemm.h"

#include <omp.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

using pillars::cpu::Isa;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kSentinel = 12345.0f; // fills the gap between a row's width and its stride in C

std::vector<Isa> isas_to_test() {
  std::vector<Isa> isas;
  for (Isa isa : {Isa::generic, Isa::avx2, Isa::avx512})
    if (pillars::cpu::isa_supported(isa)) isas.push_back(isa);
  return isas;
}

// A row-major (rows × cols) matrix stored with row stride ld >= cols. The gap is filled with
// `gap` (NaN for inputs, so reading it would poison the result; a sentinel for C, to check that
// it is never written).
struct Matrix {
  int64_t rows, cols, ld;
  std::vector<float> data;

  Matrix(int64_t r, int64_t c, int64_t ld_, float gap)
      : rows(r), cols(c), ld(ld_), data(static_cast<size_t>(std::max<int64_t>(r * ld_, 1)), gap) {}
  float& at(int64_t i, int64_t j) { return data[static_cast<size_t>(i * ld + j)]; }
  void fill_random(std::mt19937& rng) {
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) at(i, j) = dist(rng);
  }
  void fill(float x) {
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) at(i, j) = x;
  }
  Matrix abs() const {
    Matrix m = *this;
    for (float& x : m.data) x = std::fabs(x);
    return m;
  }
};

struct Case {
  bool trans_a, trans_b;
  int64_t M, N, K;
  float alpha = 1.0f, beta = 0.0f;
  int64_t pad_a = 0, pad_b = 0, pad_c = 0; // extra leading-dimension elements
};

std::string describe(const Case& c) {
  return std::string(pillars::cpu::isa_name(pillars::cpu::active_isa())) + " " + (c.trans_a ? "T" : "N") +
         (c.trans_b ? "T" : "N") + " M=" + std::to_string(c.M) + " N=" + std::to_string(c.N) +
         " K=" + std::to_string(c.K) + " alpha=" + std::to_string(c.alpha) + " beta=" + std::to_string(c.beta) +
         " pads=" + std::to_string(c.pad_a) + "," + std::to_string(c.pad_b) + "," + std::to_string(c.pad_c);
}

// The operands of one case: A stored (M, K) or (K, M) when transposed, B (K, N) or (N, K), C (M, N).
struct Operands {
  Matrix A, B, C0;
  explicit Operands(const Case& c, std::mt19937& rng)
      : A(c.trans_a ? c.K : c.M, c.trans_a ? c.M : c.K, (c.trans_a ? c.M : c.K) + c.pad_a, kNaN),
        B(c.trans_b ? c.N : c.K, c.trans_b ? c.K : c.N, (c.trans_b ? c.K : c.N) + c.pad_b, kNaN),
        C0(c.M, c.N, c.N + c.pad_c, kSentinel) {
    A.fill_random(rng);
    B.fill_random(rng);
    if (c.beta == 0.0f)
      C0.fill(kNaN); // BLAS: beta == 0 means C is not read
    else
      C0.fill_random(rng);
  }
};

// Runs `product(C)` (which must compute the case into C) and compares with the reference.
// Returns the number of wrong elements (and reports the first).
template <class Product>
int64_t check_against_reference(const Case& c, const Operands& op, Product&& product) {
  Matrix C = op.C0, expected = op.C0, bound(c.M, c.N, c.N, 0.0f);
  product(C);
  pillars::cpu::sgemm_reference(c.trans_a, c.trans_b, c.M, c.N, c.K, c.alpha, op.A.data.data(), op.A.ld,
                                op.B.data.data(), op.B.ld, c.beta, expected.data.data(), expected.ld);
  const Matrix absA = op.A.abs(), absB = op.B.abs();
  pillars::cpu::sgemm_reference(c.trans_a, c.trans_b, c.M, c.N, c.K, 1.0f, absA.data.data(), absA.ld, absB.data.data(),
                                absB.ld, 0.0f, bound.data.data(), bound.ld);
  int64_t wrong = 0;
  for (int64_t i = 0; i < c.M; ++i) {
    for (int64_t j = 0; j < c.N; ++j) {
      const float c0 = c.beta == 0.0f ? 0.0f : std::fabs(c.beta * op.C0.data[size_t(i * op.C0.ld + j)]);
      const double tol = (double(c.K) + 4) * FLT_EPSILON * (std::fabs(c.alpha) * bound.at(i, j) + c0) + FLT_MIN;
      const float got = C.at(i, j), want = expected.at(i, j);
      if (!(std::fabs(double(got) - double(want)) <= tol)) { // also catches NaN
        if (wrong++ == 0)
          FAIL_CHECK(describe(c) << ": C(" << i << "," << j << ") = " << got << ", expected " << want << " (tolerance "
                                 << tol << ")");
      }
    }
    for (int64_t j = c.N; j < C.ld; ++j) // the stride gap must be untouched
      if (C.at(i, j) != kSentinel && wrong++ == 0)
        FAIL_CHECK(describe(c) << ": wrote into the stride gap of C at (" << i << "," << j << ")");
  }
  return wrong;
}

int64_t check_sgemm(const Case& c, std::mt19937& rng) {
  const Operands op(c, rng);
  return check_against_reference(c, op, [&](Matrix& C) {
    pillars::cpu::sgemm(c.trans_a, c.trans_b, c.M, c.N, c.K, c.alpha, op.A.data.data(), op.A.ld, op.B.data.data(),
                        op.B.ld, c.beta, C.data.data(), C.ld);
  });
}

constexpr bool kTrans[] = {false, true};

} // namespace

TEST_CASE("gemm: odd sizes, all transpose combinations, every ISA") {
  // 1 and primes around the register tiles (MR 4/6, NR 8/16/64) and vector widths.
  const int64_t sizes[] = {1, 2, 7, 17, 33, 65, 129};
  std::mt19937 rng(1);
  for (Isa isa : isas_to_test()) {
    pillars::cpu::ScopedIsa forced(isa);
    int64_t wrong = 0;
    for (bool ta : kTrans)
      for (bool tb : kTrans)
        for (int64_t M : sizes)
          for (int64_t N : sizes)
            for (int64_t K : sizes) wrong += check_sgemm({ta, tb, M, N, K}, rng);
    CHECK_MESSAGE(wrong == 0, pillars::cpu::isa_name(isa));
  }
}

TEST_CASE("gemm: shapes spanning several cache blocks, every ISA") {
  // Larger than the cache blocks (AVX-512/AVX2: MC 96, KC 1024, NC 1024; the blocks are evened
  // out, so e.g. K = 1500 runs as 750 + 750): several M, K and N blocks, ragged everywhere, and
  // tall-skinny and wide-short shapes that make the threading grid split M or N.
  const Case shapes[] = {
      {false, false, 257, 257, 257}, {true, false, 300, 129, 513},  {false, true, 129, 300, 600},
      {true, true, 311, 97, 300},    {false, false, 3, 4100, 20},   {false, true, 1, 5000, 33},
      {true, false, 2000, 1, 65},    {false, false, 1000, 70, 260}, {true, false, 70, 300, 1500},
      {false, true, 13, 1100, 2100}, {true, true, 200, 7, 1030},
  };
  std::mt19937 rng(2);
  for (Isa isa : isas_to_test()) {
    pillars::cpu::ScopedIsa forced(isa);
    for (Case c : shapes) {
      c.alpha = 0.75f, c.beta = 0.5f;
      CHECK(check_sgemm(c, rng) == 0);
    }
  }
}

TEST_CASE("gemm: alpha and beta, including beta = 0 over a NaN-filled C") {
  std::mt19937 rng(3);
  for (Isa isa : isas_to_test()) {
    pillars::cpu::ScopedIsa forced(isa);
    for (float alpha : {1.0f, -0.5f, 2.0f})
      for (float beta : {0.0f, 1.0f, -1.5f, 0.25f})
        for (bool ta : kTrans)
          for (bool tb : kTrans) {
            Case c{ta, tb, 13, 70, 1100, alpha, beta}; // two K blocks: beta applies only to the first
            CHECK(check_sgemm(c, rng) == 0);
          }
  }
}

TEST_CASE("gemm: leading dimensions larger than the width") {
  std::mt19937 rng(4);
  for (Isa isa : isas_to_test()) {
    pillars::cpu::ScopedIsa forced(isa);
    for (bool ta : kTrans)
      for (bool tb : kTrans)
        for (Case c : {Case{ta, tb, 33, 65, 17, 1.0f, 0.0f, 3, 5, 7},
                       Case{ta, tb, 150, 70, 260, -1.0f, 2.0f, 1, 64, 16}, Case{ta, tb, 1, 1, 1, 1.0f, 1.0f, 9, 9, 9}})
          CHECK(check_sgemm(c, rng) == 0);
  }
}

TEST_CASE("gemm: empty products and alpha = 0 follow BLAS") {
  for (Isa isa : isas_to_test()) {
    pillars::cpu::ScopedIsa forced(isa);
    // M or N == 0: nothing is touched (null pointers are fine).
    pillars::cpu::sgemm(false, false, 0, 5, 5, 1.0f, nullptr, 5, nullptr, 5, 0.0f, nullptr, 5);
    pillars::cpu::sgemm(true, true, 5, 0, 5, 1.0f, nullptr, 5, nullptr, 5, 0.0f, nullptr, 1);

    // K == 0: C = beta · C; beta == 0 clears even NaNs. A and B are not read.
    std::vector<float> C = {1, 2, kNaN, 4};
    pillars::cpu::sgemm(false, false, 2, 2, 0, 1.0f, nullptr, 1, nullptr, 2, 0.0f, C.data(), 2);
    CHECK(C == std::vector<float>{0, 0, 0, 0});
    C = {1, 2, 3, 4};
    pillars::cpu::sgemm(false, true, 2, 2, 0, 1.0f, nullptr, 1, nullptr, 1, 2.0f, C.data(), 2);
    CHECK(C == std::vector<float>{2, 4, 6, 8});

    // alpha == 0: C = beta · C, A and B are not read (NaNs there must not leak into C).
    const std::vector<float> nan_operand(6, kNaN);
    C = {1, 2, 3, 4};
    pillars::cpu::sgemm(false, false, 2, 2, 3, 0.0f, nan_operand.data(), 3, nan_operand.data(), 2, -1.0f, C.data(), 2);
    CHECK(C == std::vector<float>{-1, -2, -3, -4});
  }
}

TEST_CASE("gemm: single-threaded and correct inside an OpenMP parallel region") {
  // Each thread of an outer parallel loop computes its own product (as a per-head kernel would).
  constexpr int kProducts = 6;
  std::mt19937 rng(5);
  std::vector<Case> cases;
  std::vector<Operands> ops;
  for (int i = 0; i < kProducts; ++i) {
    cases.push_back({i % 2 == 1, i % 3 == 1, 100 + i, 90 + 3 * i, 300 - 7 * i, 1.0f, 0.0f});
    ops.emplace_back(cases.back(), rng);
  }
  std::vector<Matrix> results;
  for (int i = 0; i < kProducts; ++i) results.push_back(ops[size_t(i)].C0);
#pragma omp parallel for schedule(static, 1)
  for (int i = 0; i < kProducts; ++i) {
    const Case& c = cases[size_t(i)];
    const Operands& op = ops[size_t(i)];
    pillars::cpu::sgemm(c.trans_a, c.trans_b, c.M, c.N, c.K, c.alpha, op.A.data.data(), op.A.ld, op.B.data.data(),
                        op.B.ld, c.beta, results[size_t(i)].data.data(), results[size_t(i)].ld);
  }
  for (int i = 0; i < kProducts; ++i)
    CHECK(check_against_reference(cases[size_t(i)], ops[size_t(i)], [&](Matrix& C) { C = results[size_t(i)]; }) == 0);
}

TEST_CASE("gemm: batched products, small (threaded across the batch) and large (threaded within)") {
  std::mt19937 rng(6);
  struct BatchCase {
    Case c;
    int64_t batch;
  };
  const BatchCase batches[] = {
      {{false, true, 17, 33, 16, 1.0f, 0.0f}, 12}, // attention-like: many tiny products
      {{true, false, 7, 5, 9, 0.5f, 1.0f}, 3},
      {{false, false, 130, 200, 300, 1.0f, 0.5f}, 2}, // large: each product threaded
      {{true, true, 1, 1, 1, 2.0f, 0.0f}, 5},
  };
  for (Isa isa : isas_to_test()) {
    pillars::cpu::ScopedIsa forced(isa);
    for (const BatchCase& bc : batches) {
      const Case& c = bc.c;
      std::vector<Operands> ops;
      for (int64_t i = 0; i < bc.batch; ++i) ops.emplace_back(c, rng);
      // Pack the batch into strided buffers with a gap of 3 floats between consecutive operands.
      const int64_t sa = int64_t(ops[0].A.data.size()) + 3, sb = int64_t(ops[0].B.data.size()) + 3,
                    sc = int64_t(ops[0].C0.data.size()) + 3;
      std::vector<float> A(size_t(sa * bc.batch), kNaN), B(size_t(sb * bc.batch), kNaN), C(size_t(sc * bc.batch));
      for (int64_t i = 0; i < bc.batch; ++i) {
        const Operands& op = ops[size_t(i)];
        std::copy(op.A.data.begin(), op.A.data.end(), A.begin() + i * sa);
        std::copy(op.B.data.begin(), op.B.data.end(), B.begin() + i * sb);
        std::copy(op.C0.data.begin(), op.C0.data.end(), C.begin() + i * sc);
      }
      pillars::cpu::sgemm_batched(c.trans_a, c.trans_b, bc.batch, c.M, c.N, c.K, c.alpha, A.data(), ops[0].A.ld, sa,
                                  B.data(), ops[0].B.ld, sb, c.beta, C.data(), ops[0].C0.ld, sc);
      for (int64_t i = 0; i < bc.batch; ++i)
        CHECK(check_against_reference(c, ops[size_t(i)], [&](Matrix& out) {
                std::copy(C.begin() + i * sc, C.begin() + i * sc + int64_t(out.data.size()), out.data.begin());
              }) == 0);
    }
  }
}

TEST_CASE("gemm: PILLARS_ISA-style forcing selects and restores the path") {
  const Isa before = pillars::cpu::active_isa();
  {
    pillars::cpu::ScopedIsa forced(Isa::generic);
    CHECK(pillars::cpu::active_isa() == Isa::generic);
  }
  CHECK(pillars::cpu::active_isa() == before);
  CHECK(pillars::cpu::isa_supported(Isa::generic));
  CHECK(pillars::cpu::isa_supported(pillars::cpu::detected_isa()));
}
