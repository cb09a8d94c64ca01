// The bf16 GEMM against a float64 reference on the same bf16 values, on each of its three paths
// (AMX, AVX512-BF16, portable). A path this CPU cannot run is reported as skipped, with the reason.
// The tolerance and its reason: tests/gemm_bf16_cases.h.
#include <doctest/doctest.h>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/gemm_bf16.h"
#include "tests/alloc_counter.h"
#include "tests/gemm_bf16_cases.h"
#include "tests/skip.h"

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

using pillars::cpu::Isa;
using namespace pillars::testing::gemm_bf16;

int64_t check(const Case& c, std::mt19937& rng) {
  return pillars::testing::gemm_bf16::check(pillars::cpu::gemm_bf16_path(), c, rng, pillars::cpu::gemm_bf16);
}

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
    CHECK_MESSAGE(wrong == 0, path.name, " ", (layout[0] ? "T" : "N"), (layout[1] ? "T" : "N"));
  }

  // A training step's products, M reduced for the reference's sake: the FFN's x·W (4096 × 256 ×
  // 1024), the logits x·Wᵀ (d_model 256, N cut from 10000), a weight gradient xᵀ·dy (K from the
  // tokens), and shapes that cross the drivers' blocks (96 × 256) and the AVX512-BF16 path's
  // passes over K (at most 512 pairs: K = 1030 runs as 258 + 257 pairs, K = 2049 as 342 + 342 +
  // 341, its last pair padded), and a transposed A shaped like the LM head's weight gradient
  // dlogitsᵀ·h, more rows than columns (AMX packs its chunks by transposing rows of pairs; 1000
  // rows cross eleven blocks of 96).
  const Case model_shapes[] = {
      {false, false, 100, 256, 1024}, {false, true, 70, 1000, 256},         {true, false, 256, 300, 515},
      {false, false, 97, 257, 515},   {true, true, 193, 65, 1030},          {false, true, 1, 700, 2049},
      {true, false, 300, 1, 77},      {false, false, 4096 / 32, 256, 1024}, {true, false, 1000, 200, 129},
  };
  for (Case c : model_shapes) {
    c.alpha = 0.75f, c.beta = 0.5f;
    CHECK(check(c, rng) == 0);
  }

  // That tall transposed A again: its blocks of rows are packed by the threads that use them
  // (gemm_bf16.cpp, a_per_block). The same bits as the product cut into slices of 96 rows, each
  // too small for that and packed whole before the kernel runs.
  const Case tall{true, false, 1000, 200, 129, 0.75f, 0.5f, 3, 0, 5};
  const Operands op(tall, rng);
  Matrix<float> whole = op.C0, sliced = op.C0;
  pillars::cpu::gemm_bf16(true, false, tall.M, tall.N, tall.K, tall.alpha, op.A.data.data(), op.A.ld, op.B.data.data(),
                          op.B.ld, tall.beta, whole.data.data(), whole.ld);
  for (int64_t i0 = 0; i0 < tall.M; i0 += 96)
    pillars::cpu::gemm_bf16(true, false, std::min<int64_t>(96, tall.M - i0), tall.N, tall.K, tall.alpha,
                            op.A.data.data() + i0, op.A.ld, op.B.data.data(), op.B.ld, tall.beta,
                            sliced.data.data() + i0 * sliced.ld, sliced.ld);
  CHECK(compare(path.name, tall, op, whole) == 0);
  CHECK(std::memcmp(whole.data.data(), sliced.data.data(), whole.data.size() * sizeof(float)) == 0);
}

void check_scalars_strides_and_threads(const Path& path) {
  if (!runnable(path)) return;
  pillars::cpu::ScopedIsa forced(isa_for(path));
  REQUIRE(std::string(pillars::cpu::gemm_bf16_path()) == path.name);
  std::mt19937 rng(2);

  // alpha and beta (beta = 0 over a NaN-filled C), over more than one pass of K.
  for (float alpha : {1.0f, -0.5f, 2.0f})
    for (float beta : {0.0f, 1.0f, -1.5f})
      for (const auto& layout : kLayouts) CHECK(check({layout[0], layout[1], 13, 70, 1100, alpha, beta}, rng) == 0);

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
    pillars::cpu::gemm_bf16(k.trans_a, k.trans_b, k.M, k.N, k.K, k.alpha, op.A.data.data(), op.A.ld, op.B.data.data(),
                            op.B.ld, k.beta, results[size_t(i)].data.data(), results[size_t(i)].ld);
  }
  for (int i = 0; i < kProducts; ++i)
    CHECK(compare(path.name, cases[size_t(i)], ops[size_t(i)], results[size_t(i)]) == 0);
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

TEST_CASE("gemm_bf16: no allocation once shapes repeat, on every path this CPU has") {
  // The packing (and, on the portable path, widening) buffers grow on the first call of a shape
  // and are reused afterwards.
  std::mt19937 rng(4);
  const Case big{false, true, 300, 200, 301}, small{true, false, 50, 70, 33};
  const Operands a(big, rng), b(small, rng);
  Matrix<float> C = a.C0;
  const auto run = [&](const Case& c, const Operands& op) {
    pillars::cpu::gemm_bf16(c.trans_a, c.trans_b, c.M, c.N, c.K, 1.0f, op.A.data.data(), op.A.ld, op.B.data.data(),
                            op.B.ld, 0.0f, C.data.data(), C.ld);
  };
  for (const Path& path : {kAmx, kAvx512Bf16, kPortable}) {
    if (path.lacking[0] != '\0' && !pillars::cpu::isa_supported(path.isa)) {
      MESSAGE((std::string("not checked here: the ") + path.name + " path (" + path.lacking + ")"));
      continue;
    }
    pillars::cpu::ScopedIsa forced(isa_for(path));
    run(big, a); // warm-up: buffers (and OpenMP's thread team) reach their size
    run(small, b);
    pillars::testing::AllocationCounter counter;
    if (!counter.active()) {
      MESSAGE("operator new is not ours (sanitizer build): allocation count not checked");
      return;
    }
    run(big, a);
    run(small, b);
    const long allocations = counter.stop(); // before CHECK_MESSAGE, which allocates its message
    CHECK_MESSAGE(allocations == 0, path.name);
  }
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
