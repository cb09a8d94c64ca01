// The GEMM at the CPU's matmul precision; see gemm_precision.h.
//
// bf16: gemm_bf16_f32 rounds op(A) and op(B) to bf16 as it packs them (no rounded copy first); a B
// the installed weight cache allows is rounded once and packed once per layout, by the cache, and
// not again per call.
#include "kernels/cpu/gemm_precision.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <vector>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/gemm_bf16.h"

namespace pillars::cpu {

namespace {

std::atomic<Precision> g_precision{Precision::fp32};

std::atomic<Bf16WeightCache*> g_weights{nullptr};

} // namespace

void set_matmul_precision(Precision p) { g_precision.store(p, std::memory_order_relaxed); }
Precision matmul_precision() { return g_precision.load(std::memory_order_relaxed); }

void gemm_at_precision(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                       const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  gemm_at_precision_batched(ta, tb, 1, M, N, K, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0);
}

void gemm_at_precision_batched(bool ta, bool tb, int64_t batch, int64_t M, int64_t N, int64_t K, float alpha,
                               const float* A, int64_t lda, int64_t sa, const float* B, int64_t ldb, int64_t sb,
                               float beta, float* C, int64_t ldc, int64_t sc) {
  if (matmul_precision() == Precision::fp32) {
    if (batch == 1) return sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return sgemm_batched(ta, tb, batch, M, N, K, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc);
  }
  if (batch == 0 || M == 0 || N == 0) return;
  Bf16WeightCache* cache = g_weights.load(std::memory_order_acquire);
  const Bf16PackedB* packed =
      cache != nullptr && (batch == 1 || sb == 0) ? cache->find_or_pack(tb, N, K, B, ldb) : nullptr;
  const auto product = [&](int64_t i) {
    if (packed != nullptr)
      return gemm_bf16_f32_prepacked(ta, M, N, K, alpha, A + i * sa, lda, *packed, beta, C + i * sc, ldc);
    gemm_bf16_f32(ta, tb, M, N, K, alpha, A + i * sa, lda, B + i * sb, ldb, beta, C + i * sc, ldc);
  };
  // Many products (the per-head products of attention composed from ops): one per thread at a
  // time, each single-threaded inside the parallel region. Few: one after another, each threaded.
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  if (threads > 1 && batch >= 2 * int64_t(threads)) {
#pragma omp parallel for num_threads(threads) schedule(dynamic)
    for (int64_t i = 0; i < batch; ++i) product(i);
    return;
  }
  for (int64_t i = 0; i < batch; ++i) product(i);
}

// ---- the weight cache ----------------------------------------------------------------------------

void Bf16WeightCache::allow(const float* data) {
  std::lock_guard<std::mutex> lock(mutex_);
  allowed_.insert(data);
}

void Bf16WeightCache::reset(std::span<const float* const> allowed) {
  std::lock_guard<std::mutex> lock(mutex_);
  allowed_.clear();
  allowed_.insert(allowed.begin(), allowed.end());
  // A copy read since the last reset keeps its storage for the next update, marked stale; one that
  // was not (or whose matrix is no longer allowed) goes.
  const auto age = [&](auto& copies) {
    for (auto it = copies.begin(); it != copies.end();) {
      if (!it->second.fresh || !allowed_.contains(it->first)) {
        it = copies.erase(it);
      } else {
        it->second.fresh = false;
        ++it;
      }
    }
  };
  age(rounded_);
  age(packed_);
  bytes_ = 0;
  for (const auto& [key, r] : rounded_) bytes_ += static_cast<int64_t>(r.bits.size()) * 2;
  for (const auto& [key, p] : packed_) bytes_ += p.b->bytes();
}

const Bf16PackedB* Bf16WeightCache::find_or_pack(bool trans_b, int64_t N, int64_t K, const float* B, int64_t ldb) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!allowed_.contains(B)) return nullptr;
  // Both layouts of a weight read the same stored matrix: (N, K) as Bᵀ, (K, N) as B.
  const int64_t rows = trans_b ? N : K, cols = trans_b ? K : N;
  Rounded* r = nullptr;
  const auto [rfirst, rlast] = rounded_.equal_range(B);
  for (auto it = rfirst; it != rlast && r == nullptr; ++it)
    if (it->second.rows == rows && it->second.cols == cols && it->second.ld == ldb) r = &it->second;
  if (r == nullptr) {
    r = &rounded_.emplace(B, Rounded{rows, cols, ldb, std::vector<uint16_t>(static_cast<size_t>(rows * cols))})->second;
    bytes_ += rows * cols * 2;
  }
  if (!r->fresh) { // new, or last update's values: round B's current ones
    round_to_bf16(B, rows, cols, ldb, r->bits.data());
    r->fresh = true;
  }
  const auto [first, last] = packed_.equal_range(B);
  for (auto it = first; it != last; ++it) {
    Packed& p = it->second;
    if (!p.b->matches(trans_b, N, K, B, ldb)) continue;
    if (!p.fresh) { // last update's layout: packed again into the same storage
      const int64_t before = p.b->bytes();
      p.b->repack(r->bits.data(), cols);
      bytes_ += p.b->bytes() - before;
      p.fresh = true;
    }
    return p.b.get();
  }
  auto b = std::make_unique<Bf16PackedB>(trans_b, N, K, r->bits.data(), cols, B, ldb);
  bytes_ += b->bytes();
  return packed_.emplace(B, Packed{std::move(b), true})->second.b.get();
}

int64_t Bf16WeightCache::rounded_matrices() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::count_if(rounded_.begin(), rounded_.end(), [](const auto& e) { return e.second.fresh; });
}

int64_t Bf16WeightCache::packed_matrices() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::count_if(packed_.begin(), packed_.end(), [](const auto& e) { return e.second.fresh; });
}

int64_t Bf16WeightCache::packed_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return bytes_;
}

ScopedBf16Weights::ScopedBf16Weights(Bf16WeightCache* cache) : previous_(g_weights.exchange(cache)) {}
ScopedBf16Weights::~ScopedBf16Weights() { g_weights.store(previous_); }

ScopedMatmulPrecision::ScopedMatmulPrecision(Precision p) : previous_(matmul_precision()) { set_matmul_precision(p); }
ScopedMatmulPrecision::~ScopedMatmulPrecision() { set_matmul_precision(previous_); }

} // namespace pillars::cpu
