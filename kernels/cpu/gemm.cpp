// SGEMM on the CPU: the driver (ISA dispatch, threading, cache blocking), the portable fallback
// kernel, and the reference triple loop.
//
//   C (M × N) = alpha · op(A) (M × K) · op(B) (K × N) + beta · C        row-major, see gemm.h
//
// Layers, outermost first:
//   sgemm            trivial cases (empty C, K == 0, alpha == 0), pick the ISA's KernelSet, pick
//                    the thread count, split C into one rectangle per thread.
//   gemm_threaded    C is cut into a tm × tn grid of rectangles (tm · tn = threads), chosen to
//                    keep each thread's rectangle square-ish, and each thread runs gemm_serial on
//                    its own rectangle: it packs the B columns (and Aᵀ rows) it needs into its
//                    own buffers, so threads never wait on each other (no barriers, unlike BLIS's
//                    shared packed B). The price of that independence is that B (or A) is packed
//                    tm (or tn) times: O((M + N) · K) extra copying against O(M · N · K) FMAs,
//                    a few percent at the shapes we care about; 2 threads run at 1.9-2.0× one.
//                    Rectangle edges fall on MR / NR multiples, so only C's own edges are ragged.
//   gemm_serial      the Goto/BLIS loops over NC, KC and MC blocks (see gemm_blocked.h for the
//                    packed layouts, the macro- and the micro-kernel), packing into per-thread
//                    64-byte-aligned buffers that only grow: no allocation once shapes repeat.
//
// The micro-kernels: gemm_avx512.cpp (6 × 64), gemm_avx2.cpp (6 × 16) and, here, a portable
// 4 × 8 one on 4-float GCC vectors (SSE2 on x86-64). PILLARS_ISA / force_isa() pick among them.
#include "kernels/cpu/gemm.h"

#include "base/error.h"

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/gemm_blocked.h"

#include <omp.h>

#include <algorithm>
#include <cstdlib>

namespace pillars::cpu {

// ---- the reference -------------------------------------------------------------------------------

void sgemm_reference(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                     const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k)
        acc += double(ta ? A[k * lda + i] : A[i * lda + k]) * double(tb ? B[j * ldb + k] : B[k * ldb + j]);
      C[i * ldc + j] = float(alpha * acc + (beta == 0 ? 0.0 : double(beta) * C[i * ldc + j]));
    }
}

namespace gemm {

// ---- the portable kernel -------------------------------------------------------------------------

namespace {
// 4 floats per "register" via GCC vector extensions: SSE2 on x86-64, NEON on AArch64, scalar
// elsewhere. Tile 4 × 8: 8 accumulators + 2 B vectors + 1 broadcast fit the 16 xmm registers.
struct Generic {
  using reg = float __attribute__((vector_size(16)));
  static constexpr int width = 4;
  static reg zero() { return reg{0, 0, 0, 0}; }
  static reg splat(float x) { return reg{x, x, x, x}; }
  static reg broadcast(const float* p) { return splat(*p); }
  static reg load(const float* p) { return *reinterpret_cast<const reg*>(p); }
  static reg loadu(const float* p) {
    reg v;
    __builtin_memcpy(&v, p, sizeof v);
    return v;
  }
  static void storeu(float* p, reg v) { __builtin_memcpy(p, &v, sizeof v); }
  static reg mul(reg a, reg b) { return a * b; }
  static reg fma(reg a, reg b, reg c) { return a * b + c; }
};
} // namespace

const KernelSet* kernels_generic() {
  static constexpr KernelSet set = make_kernel_set<Generic, 4, 2>("generic", 96, 1024, 1024);
  return &set;
}

namespace {

// ---- helpers ---------------------------------------------------------------------------------------

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

// Split `total` into the fewest blocks of at most `max_block`, all the same size (a multiple of
// `multiple`) except the last: e.g. K = 300 with KC = 256 gives 152 + 148, not 256 + 44.
int64_t balanced_block(int64_t total, int64_t max_block, int64_t multiple) {
  const int64_t blocks = ceil_div(total, max_block);
  return round_up(ceil_div(total, blocks), multiple);
}

const KernelSet& kernels_for(Isa isa) {
  const KernelSet* set = nullptr;
  if (static_cast<int>(isa) >= static_cast<int>(Isa::avx512)) set = kernels_avx512(); // bf16 levels too
  if (set == nullptr && static_cast<int>(isa) >= static_cast<int>(Isa::avx2)) set = kernels_avx2();
  if (set == nullptr) set = kernels_generic();
  return *set;
}

// A 64-byte-aligned scratch buffer that only grows. One per thread per operand (thread_local), so
// concurrent sgemm calls never share one; freed only when its thread exits.
class PackBuffer {
 public:
  PackBuffer() = default;
  PackBuffer(const PackBuffer&) = delete;
  PackBuffer& operator=(const PackBuffer&) = delete;
  ~PackBuffer() { std::free(data_); }

  float* get(int64_t floats) {
    if (floats > capacity_) {
      std::free(data_);
      const int64_t bytes = round_up(floats * int64_t(sizeof(float)), 64);
      data_ = static_cast<float*>(std::aligned_alloc(64, static_cast<size_t>(bytes)));
      if (data_ == nullptr) {
        capacity_ = 0;
        throw Error(str_cat("sgemm: out of memory allocating a ", bytes, "-byte packing buffer"));
      }
      capacity_ = floats;
    }
    return data_;
  }

 private:
  float* data_ = nullptr;
  int64_t capacity_ = 0;
};

thread_local PackBuffer t_packed_a, t_packed_b;

// One product in the caller's layout, plus addressing of op(A) and op(B).
struct Product {
  bool trans_a, trans_b;
  int64_t M, N, K;
  float alpha;
  const float* A;
  int64_t lda;
  const float* B;
  int64_t ldb;
  float beta;
  float* C;
  int64_t ldc;

  const float* a_at(int64_t i, int64_t k) const { return trans_a ? A + k * lda + i : A + i * lda + k; }
  const float* b_at(int64_t k, int64_t j) const { return trans_b ? B + j * ldb + k : B + k * ldb + j; }

  // The product restricted to C[i0:i0+m, j0:j0+n].
  Product part(int64_t i0, int64_t m, int64_t j0, int64_t n) const {
    Product p = *this;
    p.M = m, p.N = n;
    p.A = a_at(i0, 0), p.B = b_at(0, j0), p.C = C + i0 * ldc + j0;
    return p;
  }
};

// C = beta · C: what is left of GEMM when K == 0 or alpha == 0 (A and B are not read).
void scale_c(const Product& p) {
  for (int64_t i = 0; i < p.M; ++i) {
    float* row = p.C + i * p.ldc;
    for (int64_t j = 0; j < p.N; ++j) row[j] = p.beta == 0.0f ? 0.0f : p.beta * row[j];
  }
}

// ---- the blocked algorithm, one thread ---------------------------------------------------------

void gemm_serial(const KernelSet& ks, const Product& p) {
  // Block sizes for this shape: at most ks.mc/kc/nc, evened out so no block is a sliver.
  const int64_t nc_max = balanced_block(p.N, ks.nc, ks.nr);
  const int64_t kc_max = balanced_block(p.K, ks.kc, 1);
  const int64_t mc_max = balanced_block(p.M, ks.mc, ks.mr);
  float* Bp = t_packed_b.get(kc_max * nc_max); // kc × nc, NR-wide panels
  // A needs packing only when transposed: a row-major op(A) already has each row contiguous in
  // k, which is all the micro-kernel's broadcasts need, so it reads those rows in place.
  float* Ap = p.trans_a ? t_packed_a.get(round_up(mc_max, ks.mr) * kc_max) : nullptr; // mc × kc

  for (int64_t jc = 0; jc < p.N; jc += nc_max) {
    const int64_t nc = std::min(nc_max, p.N - jc);
    for (int64_t pc = 0; pc < p.K; pc += kc_max) {
      const int64_t kc = std::min(kc_max, p.K - pc);
      const float beta = pc == 0 ? p.beta : 1.0f; // later K blocks accumulate onto the first
      ks.pack_b(p.trans_b, p.b_at(pc, jc), p.ldb, kc, nc, Bp);
      for (int64_t ic = 0; ic < p.M; ic += mc_max) {
        const int64_t mc = std::min(mc_max, p.M - ic);
        float* C = p.C + ic * p.ldc + jc;
        if (p.trans_a) {
          ks.pack_a(p.trans_a, p.a_at(ic, pc), p.lda, mc, kc, Ap);
          ks.macro_kernel(mc, nc, kc, p.alpha, Ap, /*a_packed=*/true, 0, Bp, beta, C, p.ldc);
        } else {
          ks.macro_kernel(mc, nc, kc, p.alpha, p.a_at(ic, pc), /*a_packed=*/false, p.lda, Bp, beta, C, p.ldc);
        }
      }
    }
  }
}

// ---- threading -----------------------------------------------------------------------------------

// Below this many multiply-adds per thread, starting threads costs more than it saves.
constexpr int64_t kMinFmasPerThread = int64_t(1) << 19;

int threads_for(int64_t fmas) {
  if (omp_in_parallel()) return 1;
  const int64_t by_work = std::max<int64_t>(1, fmas / kMinFmasPerThread);
  return static_cast<int>(std::min<int64_t>(omp_get_max_threads(), by_work));
}

// A tm × tn grid of thread rectangles over C, each (rows × cols) with rows % MR == 0 and
// cols % NR == 0 except at C's edge.
struct Grid {
  int64_t tm, tn, rows, cols;
};

// Of the factorisations threads = tm · tn, take the one with the least per-thread cost: the
// rectangle's FMAs plus the packing of its A rows and B columns (one packed element costs about
// as much as kPackCost FMAs; the K factor is common to both and dropped). Rounding rectangles up to
// whole MR / NR tiles counts as work, so lopsided splits of small dimensions lose.
Grid choose_grid(const KernelSet& ks, int64_t M, int64_t N, int threads) {
  constexpr double kPackCost = 16.0;
  Grid best{1, 1, M, N};
  double best_cost = -1;
  for (int64_t tm = 1; tm <= threads; ++tm) {
    if (threads % tm != 0) continue;
    const int64_t tn = threads / tm;
    const int64_t rows = round_up(ceil_div(M, tm), ks.mr), cols = round_up(ceil_div(N, tn), ks.nr);
    if (ceil_div(M, rows) < tm || ceil_div(N, cols) < tn) continue; // some thread would idle
    const double cost = double(rows) * double(cols) + kPackCost * double(rows + cols);
    if (best_cost < 0 || cost < best_cost) best = Grid{tm, tn, rows, cols}, best_cost = cost;
  }
  return best;
}

void gemm_threaded(const KernelSet& ks, const Product& p, int threads) {
  const Grid g = choose_grid(ks, p.M, p.N, threads);
  if (g.tm * g.tn == 1) return gemm_serial(ks, p);
#pragma omp parallel num_threads(static_cast <int>(g.tm * g.tn))
  {
    const int64_t t = omp_get_thread_num();
    const int64_t i0 = (t / g.tn) * g.rows, j0 = (t % g.tn) * g.cols;
    if (i0 < p.M && j0 < p.N) gemm_serial(ks, p.part(i0, std::min(g.rows, p.M - i0), j0, std::min(g.cols, p.N - j0)));
  }
}

void run(const Product& p, int threads) {
  if (p.M == 0 || p.N == 0) return;
  if (p.K == 0 || p.alpha == 0.0f) return scale_c(p);
  gemm_threaded(kernels_for(active_isa()), p, threads);
}

} // namespace
} // namespace gemm

// ---- the public entry points -----------------------------------------------------------------------

void sgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda, const float* B,
           int64_t ldb, float beta, float* C, int64_t ldc) {
  const gemm::Product p{ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc};
  gemm::run(p, gemm::threads_for(M * N * K));
}

// Many small products: one product per thread at a time (no packing redundancy, no
// synchronization inside a product). Few large ones: one after another, each threaded.
void sgemm_batched(bool ta, bool tb, int64_t batch, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                   int64_t lda, int64_t sa, const float* B, int64_t ldb, int64_t sb, float beta, float* C, int64_t ldc,
                   int64_t sc) {
  const auto product = [&](int64_t i) {
    return gemm::Product{ta, tb, M, N, K, alpha, A + i * sa, lda, B + i * sb, ldb, beta, C + i * sc, ldc};
  };
  const int per_product = gemm::threads_for(M * N * K);
  const int across = gemm::threads_for(batch * M * N * K);
  // Threading across the batch balances well when each thread gets several products, or when a
  // single product is too small to thread on its own.
  if (across > 1 && (per_product == 1 || batch >= 4 * int64_t(across))) {
#pragma omp parallel for num_threads(across) schedule(dynamic)
    for (int64_t i = 0; i < batch; ++i) gemm::run(product(i), 1);
    return;
  }
  for (int64_t i = 0; i < batch; ++i) gemm::run(product(i), per_product);
}

} // namespace pillars::cpu
