// The bf16 GEMM (gemm_bf16.h): path choice, packing, threading, the portable path, the reference.
//
//   C (M × N, fp32) = alpha · op(A) (M × K, bf16) · op(B) (K × N, bf16) + beta · C
//
// The two bf16 paths run the same driver:
//   1. pack all of op(B), and of op(A) unless the kernel reads it in place, once, in the kernel's
//      layout (gemm_bf16_packed.h), into per-thread buffers that only grow; the threads share
//      the packing, panel by panel. (A kernel that reads A's rows in place gets an fp32 op(A) = A
//      rounded row by row instead: the same values, without the scatter into panels. A tall op(A),
//      transposed or fp32, is packed or rounded block by block in step 2.)
//   2. cut C into blocks of kBlockRows × kBlockCols and hand them to the threads; each block is
//      the kernel's `block` call, which sweeps its panels over all of K.
// Packing everything first costs O((M + N) · K) copying against O(M · N · K) multiply-adds and
// keeps the driver simple: no packing inside the blocked loops, no barriers between threads.
// Each element of C is computed by one thread in a fixed order, so results do not depend on the
// thread count.
//
// The portable path widens op(A) and op(B) to fp32 (exactly: bf16 is fp32's upper half) and
// calls sgemm, which picks its own fp32 kernel.
#include "kernels/cpu/gemm_bf16.h"

#include "base/error.h"

#include "kernels/bf16_bits.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/gemm_bf16_packed.h"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <type_traits>

namespace pillars::cpu {

namespace {

float widen(uint16_t x) {
  const uint32_t bits = static_cast<uint32_t>(x) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// An operand element as bf16: bf16 already, or fp32 rounded to nearest even (kernels/bf16_bits.h).
uint16_t to_bf16(uint16_t x) { return x; }
uint16_t to_bf16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  return bf16_bits_of_f32_bits(bits);
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

// A 64-byte-aligned scratch buffer that only grows; one per thread per operand (thread_local).
template <class T>
class Scratch {
 public:
  Scratch() = default;
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  ~Scratch() { std::free(data_); }

  T* get(int64_t count) {
    if (count > capacity_) {
      std::free(data_);
      const int64_t bytes = round_up(std::max<int64_t>(count, 1) * int64_t(sizeof(T)), 64);
      data_ = static_cast<T*>(std::aligned_alloc(64, static_cast<size_t>(bytes)));
      if (data_ == nullptr) {
        capacity_ = 0;
        throw Error(str_cat("gemm_bf16: out of memory allocating a ", bytes, "-byte buffer"));
      }
      capacity_ = count;
    }
    return data_;
  }

 private:
  T* data_ = nullptr;
  int64_t capacity_ = 0;
};

thread_local Scratch<uint16_t> t_packed_a, t_packed_b;
thread_local Scratch<uint16_t> t_block_a; // one block of op(A)'s rows, packed by the thread that uses it
thread_local Scratch<float> t_wide_a, t_wide_b;

// Below this many multiply-adds per thread, starting threads costs more than it saves (sgemm's).
constexpr int64_t kMinFmasPerThread = int64_t(1) << 19;

int threads_for(int64_t fmas) {
  if (omp_in_parallel()) return 1;
  return static_cast<int>(std::min<int64_t>(omp_get_max_threads(), std::max<int64_t>(1, fmas / kMinFmasPerThread)));
}

// f(i) for i in [0, n) on `threads` threads (static split); one thread runs a plain loop, without
// entering an OpenMP region.
template <class F>
void parallel_for(int threads, int64_t n, F&& f) {
  if (threads <= 1) {
    for (int64_t i = 0; i < n; ++i) f(i);
    return;
  }
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < n; ++i) f(i);
}

// One product in the caller's layout; T: the operands' type (uint16_t bf16, or float rounded to bf16
// as they are packed or widened).
template <class T>
struct Product {
  bool trans_a, trans_b;
  int64_t M, N, K;
  float alpha;
  const T* A;
  int64_t lda;
  const T* B;
  int64_t ldb;
  float beta;
  float* C;
  int64_t ldc;
};

// C = beta · C: what is left when K == 0 or alpha == 0 (A and B are not read).
template <class T>
void scale_c(const Product<T>& p) {
  for (int64_t i = 0; i < p.M; ++i)
    for (int64_t j = 0; j < p.N; ++j) p.C[i * p.ldc + j] = p.beta == 0.0f ? 0.0f : p.beta * p.C[i * p.ldc + j];
}

// ---- packing -------------------------------------------------------------------------------------

thread_local Scratch<uint16_t> t_stage; // one contiguous run of op(X), already in bf16
thread_local Scratch<uint32_t> t_pairs; // rows of op(X) as bf16 pairs, two rows of X in each

// The AVX-512 rounding (gemm_bf16_round_avx512.cpp) where the CPU has it, else nullptr. It gives
// the bits the loops below give, 16 values per instruction instead of SSE2's 4.
const gemm::Bf16Rounding* avx512_rounding() {
  return static_cast<int>(active_isa()) >= static_cast<int>(Isa::avx512) ? gemm::bf16_rounding_avx512() : nullptr;
}

// y[0:n] = bf16(x[0:n]): a contiguous run, copied or rounded. The rounding is branch-free
// (kernels/bf16_bits.h), so this loop vectorizes; the packing loops below only move 16-bit values.
template <class T>
void to_bf16_run(const T* x, int64_t n, uint16_t* y) {
  if constexpr (std::is_same_v<T, uint16_t>) {
    std::memcpy(y, x, size_t(n) * 2);
  } else if (const gemm::Bf16Rounding* rounding = avx512_rounding()) {
    rounding->run(x, n, y);
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = to_bf16(x[i]);
  }
}

// pairs[0:padded] = the bf16 pairs of rows 2p and 2p + 1 of X (k_stride apart, lanes contiguous):
// pairs[l] = X(2p, l) | X(2p + 1, l) << 16, a row at or past K reading as zeros, lanes from `lanes`
// on zero. One loop that rounds and interleaves (it vectorizes).
template <class T>
void pair_row(const T* X, int64_t k_stride, int64_t lanes, int64_t K, int64_t p, int64_t padded, uint32_t* pairs) {
  int64_t l = 0;
  if (2 * p < K) {
    const T* even = X + 2 * p * k_stride;
    const T* odd = 2 * p + 1 < K ? even + k_stride : nullptr; // row K (odd K) reads as zeros
    if constexpr (std::is_same_v<T, float>) {
      if (const gemm::Bf16Rounding* rounding = avx512_rounding()) {
        rounding->pairs(even, odd, lanes, pairs);
        l = lanes;
      }
    }
    if (odd != nullptr) {
      for (; l < lanes; ++l) pairs[l] = uint32_t{to_bf16(even[l])} | uint32_t{to_bf16(odd[l])} << 16;
    } else {
      for (; l < lanes; ++l) pairs[l] = uint32_t{to_bf16(even[l])};
    }
  }
  std::fill(pairs + l, pairs + padded, uint32_t{0});
}

// `lanes` lanes of op(X) over K, where (lane l, k) is X[l · lane_stride + k · k_stride], into
// panels of W lanes and chunks of KW values of k, zero-padded to whole panels and to kpad:
//   dst[(l / W) · W · kpad + (k / KW) · W · KW + (l % W) · KW + k % KW] = op(X)(l, k).
// One of the two strides is 1 (X is row-major, op(X) = X or Xᵀ), and the loops follow it:
//   k_stride == 1 (rows of A, columns of Bᵀ): lane by lane, each lane's run over k rounded once
//     into a staging run, in order, and then scattered from there;
//   lane_stride == 1 (columns of B, rows of Aᵀ): chunk by chunk, the rows of X that hold the
//     chunk's values of k for every lane, two rows at a time rounded straight into 32-bit pairs
//     (pair_row). For KW = 2 a chunk is one such row of pairs, and each panel's pairs are one
//     contiguous copy; for KW > 2 (AMX's A) each panel's block of KW / 2 rows of pairs is
//     transposed, 32-bit element by element (the kernel's pairs_to_chunk, or the loop here).
template <class T>
void pack(const T* X, int64_t lane_stride, int64_t k_stride, int64_t lanes, int64_t K, int64_t W, int64_t KW,
          int64_t kpad, uint16_t* dst, int threads,
          void (*pairs_to_chunk)(const uint32_t*, int64_t, uint16_t*) = nullptr) {
  const int64_t panels = ceil_div(lanes, W), chunks = kpad / KW;
  if (k_stride == 1) {
    parallel_for(threads, panels, [&](int64_t q) {
      uint16_t* panel = dst + q * W * kpad;
      uint16_t* run = t_stage.get(kpad);
      const int64_t w = std::min(W, lanes - q * W); // valid lanes in this panel
      for (int64_t c = 0; c < W; ++c) {
        if (c < w) {
          to_bf16_run(X + (q * W + c) * lane_stride, K, run);
          std::fill(run + K, run + kpad, uint16_t{0});
        } else {
          std::fill(run, run + kpad, uint16_t{0}); // lanes past the last one
        }
        if (KW == 2) { // one 32-bit pair per chunk
          for (int64_t t = 0; t < chunks; ++t) std::memcpy(panel + t * W * 2 + c * 2, run + t * 2, 4);
        } else {
          for (int64_t t = 0; t < chunks; ++t) std::memcpy(panel + t * W * KW + c * KW, run + t * KW, size_t(KW) * 2);
        }
      }
    });
    return;
  }
  PILLARS_CHECK(lane_stride == 1, "gemm_bf16: an operand with neither stride 1");
  const int64_t padded = panels * W, half = KW / 2; // rows of pairs per chunk
  parallel_for(threads, chunks, [&](int64_t t) {
    uint32_t* pairs = t_pairs.get(half * padded); // pairs[e · padded + l]: lane l's pair e of chunk t
    // The rows two chunks ahead, asked for now: a few lanes of rows far apart (one block of a tall
    // operand) are too short a run for the hardware's prefetcher to follow.
    for (int64_t k = (t + 2) * KW; k < std::min(K, (t + 3) * KW); ++k)
      for (int64_t l = 0; l < lanes; l += 64 / int64_t(sizeof(T))) __builtin_prefetch(X + k * k_stride + l);
    for (int64_t e = 0; e < half; ++e) pair_row(X, k_stride, lanes, K, t * half + e, padded, pairs + e * padded);
    for (int64_t q = 0; q < panels; ++q) {
      uint16_t* chunk = dst + q * W * kpad + t * W * KW;
      const uint32_t* block = pairs + q * W;
      if (KW == 2) {
        std::memcpy(chunk, block, size_t(W) * 4);
      } else if (pairs_to_chunk != nullptr) {
        pairs_to_chunk(block, padded, chunk);
      } else {
        for (int64_t c = 0; c < W; ++c)
          for (int64_t e = 0; e < half; ++e) std::memcpy(chunk + c * KW + 2 * e, block + e * padded + c, 4);
      }
    }
  });
}

// ---- the packed paths ----------------------------------------------------------------------------

// C blocks handed to threads: 96 rows (16 AVX-512 panels of 6, 3 AMX panels of 32) by 256
// columns (4 B panels). A block's A rows (96 · K bf16: 192 KiB at K = 1024) stay in L2 while its B
// panels stream past them.
constexpr int64_t kBlockRows = 96, kBlockCols = 4 * gemm::kBf16Nr;

// Packs op(B) into Bp (round_up(N, kBf16Nr) · kpad values) for the kernel set ks.
template <class T>
void pack_b(const gemm::Bf16KernelSet& ks, bool trans_b, int64_t N, int64_t K, const T* B, int64_t ldb, uint16_t* Bp,
            int threads) {
  // op(B)(k, j) = B[k·ldb + j], or B[j·ldb + k] when transposed (lanes of B are its columns j).
  pack(B, trans_b ? ldb : 1, trans_b ? 1 : ldb, N, K, gemm::kBf16Nr, 2, round_up(K, ks.k_multiple), Bp, threads);
}

// packed_b: op(B) already packed by pack_b for ks (then p.B is not read), or nullptr.
template <class T>
void run_packed(const gemm::Bf16KernelSet& ks, const Product<T>& p, int threads, const uint16_t* packed_b = nullptr) {
  const int64_t kpad = round_up(p.K, ks.k_multiple);
  // A row-major op(A) of bf16 whose K needs no padding already has the kernel's pairs where it
  // wants them. A row-major fp32 op(A) is rounded into that form, row by row (rows kpad long, the
  // k past K zero): one vectorized pass, where packing would scatter each row's pairs into panels.
  const bool kernel_reads_rows = ks.block_a_in_place != nullptr && !p.trans_a;
  const bool a_in_place = std::is_same_v<T, uint16_t> && kernel_reads_rows && kpad == p.K;
  const bool a_rounded_rows = std::is_same_v<T, float> && kernel_reads_rows;
  const int64_t block_rows = round_up(kBlockRows, ks.mr);
  const int64_t bm = ceil_div(p.M, block_rows), bn = ceil_div(p.N, kBlockCols);
  // A transposed op(A) with many row blocks and one column block (the LM head's weight gradient
  // dzᵀ·h: M = vocabulary, N = d_model) uses each block of A's rows once: each thread packs its
  // block right before the kernel reads it, into a buffer of its own that stays in L2, instead of
  // packing all of A to memory first and reading it back. The packed block is the same slice of
  // panels either way (blocks start at multiples of mr), so the results are the same bits.
  const bool a_per_block = p.trans_a && !a_in_place && !a_rounded_rows && bn == 1 && bm >= 4 * threads;
  // Likewise a tall fp32 op(A) = A (the activations and their gradients in a training step: M =
  // tokens) is rounded block of rows by block of rows, each by the thread that then runs all of the
  // block's columns on it from L2, instead of rounded into memory in a pass of its own and read back.
  const bool a_rounded_per_block = a_rounded_rows && bm >= 4 * threads;
  uint16_t* Ap =
      a_in_place || a_per_block || a_rounded_per_block ? nullptr : t_packed_a.get(round_up(p.M, ks.mr) * kpad);
  const uint16_t* Bp = packed_b;
  if (Bp == nullptr) {
    uint16_t* b = t_packed_b.get(round_up(p.N, gemm::kBf16Nr) * kpad);
    pack_b(ks, p.trans_b, p.N, p.K, p.B, p.ldb, b, threads);
    Bp = b;
  }
  // op(A)'s row i (A[i·lda + k], fp32) rounded into `row` (kpad long, the k past K zero).
  const auto round_row = [&](int64_t i, uint16_t* row) {
    to_bf16_run(p.A + i * p.lda, p.K, row);
    std::fill(row + p.K, row + kpad, uint16_t{0});
  };
  if (a_rounded_per_block) {
    parallel_for(threads, bm, [&](int64_t bi) {
      const int64_t i0 = bi * block_rows, m = std::min(block_rows, p.M - i0);
      uint16_t* rows = t_block_a.get(m * kpad);
      for (int64_t i = 0; i < m; ++i) round_row(i0 + i, rows + i * kpad);
      for (int64_t j0 = 0; j0 < p.N; j0 += kBlockCols)
        ks.block_a_in_place(rows, kpad, Bp + j0 * kpad, kpad, m, std::min(kBlockCols, p.N - j0), p.alpha, p.beta,
                            p.C + i0 * p.ldc + j0, p.ldc);
    });
    return;
  }
  // op(A)(i, k) = A[i·lda + k], or A[k·lda + i] when transposed.
  if (a_rounded_rows) {
    parallel_for(threads, p.M, [&](int64_t i) { round_row(i, Ap + i * kpad); });
  } else if (!a_in_place && !a_per_block) {
    pack(p.A, p.trans_a ? 1 : p.lda, p.trans_a ? p.lda : 1, p.M, p.K, ks.mr, ks.a_chunk, kpad, Ap, threads,
         ks.pairs_to_chunk);
  }

  parallel_for(threads, bm * bn, [&](int64_t b) {
    const int64_t i0 = (b / bn) * block_rows, j0 = (b % bn) * kBlockCols;
    const int64_t m = std::min(block_rows, p.M - i0), n = std::min(kBlockCols, p.N - j0);
    float* C = p.C + i0 * p.ldc + j0;
    if (a_per_block) { // op(A)'s rows i0 … i0 + m are A's columns: lanes from A + i0
      uint16_t* block = t_block_a.get(round_up(m, ks.mr) * kpad);
      pack(p.A + i0, 1, p.lda, m, p.K, ks.mr, ks.a_chunk, kpad, block, /*threads=*/1, ks.pairs_to_chunk);
      ks.block(block, Bp + j0 * kpad, kpad, m, n, p.alpha, p.beta, C, p.ldc);
      return;
    }
    // Panel i0 / mr starts at (i0 / mr) · mr · kpad = i0 · kpad; likewise for B.
    if constexpr (std::is_same_v<T, uint16_t>) {
      if (a_in_place) {
        ks.block_a_in_place(p.A + i0 * p.lda, p.lda, Bp + j0 * kpad, kpad, m, n, p.alpha, p.beta, C, p.ldc);
        return;
      }
    }
    if (a_rounded_rows) {
      ks.block_a_in_place(Ap + i0 * kpad, kpad, Bp + j0 * kpad, kpad, m, n, p.alpha, p.beta, C, p.ldc);
      return;
    }
    ks.block(Ap + i0 * kpad, Bp + j0 * kpad, kpad, m, n, p.alpha, p.beta, C, p.ldc);
  });
}

// ---- the portable path ---------------------------------------------------------------------------

// rows × cols of X (row stride ld) as bf16 values, widened into dst (row stride cols).
template <class T>
void widen_matrix(const T* X, int64_t rows, int64_t cols, int64_t ld, float* dst, int threads) {
  parallel_for(threads, rows, [&](int64_t r) {
    for (int64_t c = 0; c < cols; ++c) dst[r * cols + c] = widen(to_bf16(X[r * ld + c]));
  });
}

// wide_b: op(B) already widened by widen_matrix (stored shape, dense), or nullptr.
template <class T>
void run_portable(const Product<T>& p, int threads, const float* wide_b = nullptr) {
  // A is stored (M, K), or (K, M) when transposed; B (K, N), or (N, K).
  const int64_t a_rows = p.trans_a ? p.K : p.M, a_cols = p.trans_a ? p.M : p.K;
  const int64_t b_rows = p.trans_b ? p.N : p.K, b_cols = p.trans_b ? p.K : p.N;
  float* A = t_wide_a.get(a_rows * a_cols);
  widen_matrix(p.A, a_rows, a_cols, p.lda, A, threads);
  const float* B = wide_b;
  if (B == nullptr) {
    float* b = t_wide_b.get(b_rows * b_cols);
    widen_matrix(p.B, b_rows, b_cols, p.ldb, b, threads);
    B = b;
  }
  sgemm(p.trans_a, p.trans_b, p.M, p.N, p.K, p.alpha, A, a_cols, B, b_cols, p.beta, p.C, p.ldc);
}

// The kernel set for the active ISA; nullptr: the portable path.
const gemm::Bf16KernelSet* kernels_for(Isa isa) {
  const gemm::Bf16KernelSet* set = nullptr;
  if (isa == Isa::amx) set = gemm::bf16_kernels_amx();
  if (set == nullptr && static_cast<int>(isa) >= static_cast<int>(Isa::avx512_bf16)) set = gemm::bf16_kernels_avx512();
  return set;
}

template <class T>
void gemm_bf16_any(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const T* A, int64_t lda, const T* B,
                   int64_t ldb, float beta, float* C, int64_t ldc) {
  const Product<T> p{ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc};
  if (M == 0 || N == 0) return;
  if (K == 0 || alpha == 0.0f) return scale_c(p);
  if (const gemm::Bf16KernelSet* ks = kernels_for(active_isa())) return run_packed(*ks, p, threads_for(M * N * K));
  run_portable(p, threads_for(M * N * K));
}

} // namespace

// ---- the public entry points -----------------------------------------------------------------------

void gemm_bf16(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const uint16_t* A, int64_t lda,
               const uint16_t* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  gemm_bf16_any(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void gemm_bf16_f32(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                   const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  gemm_bf16_any(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void gemm::gemm_bf16_packed(const Bf16KernelSet& ks, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                            const uint16_t* A, int64_t lda, const uint16_t* B, int64_t ldb, float beta, float* C,
                            int64_t ldc) {
  const Product<uint16_t> p{ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc};
  if (M == 0 || N == 0) return;
  if (K == 0 || alpha == 0.0f) return scale_c(p);
  run_packed(ks, p, threads_for(M * N * K));
}

// ---- op(B) packed once -------------------------------------------------------------------------------

void Bf16PackedB::Free::operator()(void* p) const { std::free(p); }

Bf16PackedB::Bf16PackedB(bool trans_b, int64_t N, int64_t K, const float* B, int64_t ldb)
    : trans_b_(trans_b), N_(N), K_(K), ldb_(ldb), source_(B) {
  pack_from(B, ldb);
}

Bf16PackedB::Bf16PackedB(bool trans_b, int64_t N, int64_t K, const uint16_t* rounded, int64_t ld_rounded,
                         const float* B, int64_t ldb)
    : trans_b_(trans_b), N_(N), K_(K), ldb_(ldb), source_(B) {
  pack_from(rounded, ld_rounded);
}

// X: B as fp32 (rounded as it is packed) or its bf16 copy (moved only): the same bf16 values.
// Packing again for the same path reuses the storage.
template <class T>
void Bf16PackedB::pack_from(const T* X, int64_t ldx) {
  PILLARS_CHECK(N_ >= 0 && K_ >= 0, "Bf16PackedB: negative shape");
  const gemm::Bf16KernelSet* ks = kernels_for(active_isa());
  const bool same_path = packed_ != nullptr && kernels_ == ks;
  kernels_ = ks;
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  if (ks != nullptr) {
    const int64_t count = std::max<int64_t>(1, round_up(N_, gemm::kBf16Nr) * round_up(K_, ks->k_multiple));
    if (!same_path) {
      void* data = std::aligned_alloc(64, static_cast<size_t>(round_up(count * 2, 64)));
      if (data == nullptr) throw Error("Bf16PackedB: out of memory");
      packed_.reset(static_cast<uint16_t*>(data));
    }
    bytes_ = count * 2;
    pack_b(*ks, trans_b_, N_, K_, X, ldx, packed_.get(), threads);
  } else {
    const int64_t rows = trans_b_ ? N_ : K_, cols = trans_b_ ? K_ : N_;
    packed_.reset();
    wide_.resize(static_cast<size_t>(rows * cols));
    bytes_ = rows * cols * 4;
    widen_matrix(X, rows, cols, ldx, wide_.data(), threads);
  }
}

void round_to_bf16(const float* X, int64_t rows, int64_t cols, int64_t ld, uint16_t* dst) {
  PILLARS_CHECK(rows >= 0 && cols >= 0, "round_to_bf16: negative shape");
  parallel_for(threads_for(rows * cols), rows, [&](int64_t r) { to_bf16_run(X + r * ld, cols, dst + r * cols); });
}

bool Bf16PackedB::matches(bool trans_b, int64_t N, int64_t K, const float* B, int64_t ldb) const {
  return trans_b == trans_b_ && N == N_ && K == K_ && B == source_ && ldb == ldb_;
}

void gemm_bf16_f32_prepacked(bool ta, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                             const Bf16PackedB& B, float beta, float* C, int64_t ldc) {
  PILLARS_CHECK(N == B.N_ && K == B.K_, "gemm_bf16_f32_prepacked: op(B) is ", B.K_, " x ", B.N_, ", the product wants ",
                K, " x ", N);
  const gemm::Bf16KernelSet* ks = kernels_for(active_isa());
  if (ks != B.kernels_) // packed for another path (the ISA was forced since): pack from the source
    return gemm_bf16_f32(ta, B.trans_b_, M, N, K, alpha, A, lda, B.source_, B.ldb_, beta, C, ldc);
  const Product<float> p{ta, B.trans_b_, M, N, K, alpha, A, lda, nullptr, B.ldb_, beta, C, ldc};
  if (M == 0 || N == 0) return;
  if (K == 0 || alpha == 0.0f) return scale_c(p);
  if (ks != nullptr) return run_packed(*ks, p, threads_for(M * N * K), B.packed_.get());
  run_portable(p, threads_for(M * N * K), B.wide_.data());
}

const char* gemm_bf16_path() {
  const gemm::Bf16KernelSet* ks = kernels_for(active_isa());
  return ks != nullptr ? ks->name : "portable";
}

void gemm_bf16_reference(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const uint16_t* A, int64_t lda,
                         const uint16_t* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0; // each bf16 product is exact in double; the sum errs by ~K · 2⁻⁵³
      for (int64_t k = 0; k < K; ++k)
        acc +=
            double(widen(ta ? A[k * lda + i] : A[i * lda + k])) * double(widen(tb ? B[j * ldb + k] : B[k * ldb + j]));
      C[i * ldc + j] = float(alpha * acc + (beta == 0 ? 0.0 : double(beta) * C[i * ldc + j]));
    }
}

} // namespace pillars::cpu
