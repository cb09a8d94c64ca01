// The inner loops of the fused attention (kernels/cpu/attention.cpp): the few operations that run on
// (block × block) tiles, where all the time goes. They are written once, with GCC vector
// extensions, and compiled three times:
//
//   attention.cpp          baseline x86-64 (SSE2, 4 lanes)     tiles_generic()
//   attention_avx2.cpp     -mavx2 -mfma (8 lanes)              tiles_avx2()
//   attention_avx512.cpp   -mavx512f ... (16 lanes)            tiles_avx512()
//
// Each including file defines PILLARS_ATTENTION_TILES_IMPL plus the lane count, the register
// block and its FMA, then includes this header. The implementation lives in an anonymous namespace
// and uses nothing from the standard library, so no AVX-512 instruction can leak into baseline code
// through a shared inline function; attention.cpp calls the AVX versions only after a run-time CPU
// check (kernels/cpu/cpu_features.h).
//
// All the tile products share one register-blocked sweep (gemm_sweep) that hands each finished
// accumulator vector to an epilogue: the plain gemm stores it, while the backward's fused products
// (probabilities, softmax_grad) apply the exp2 / softmax-backward step to it before the one store,
// saving a write and a re-read of a whole tile per product.
//
// Contract shared by the tile kernels (dropout_multipliers excepted): the column count n of every
// tile (the queries or keys of a block, or the head dimension, padded) is a multiple of 16 — the
// driver pads its tiles with zeros (or masks the padding), so no kernel needs a masked tail.
#pragma once
#include <cstdint>

namespace pillars::cpu::attention_tiles {

struct TileKernels {
  const char* isa;
  // C (m × n) = alpha · A (m × k) · B (k × n), plus the old C when `accumulate`.
  // A(r, p) = A[r · a_row + p · a_col] (any strides: Aᵀ is free), B row-major with row stride ldb,
  // C row-major with row stride ldc. n % 16 == 0.
  void (*gemm)(int64_t m, int64_t n, int64_t k, float alpha, const float* A, int64_t a_row, int64_t a_col,
               const float* B, int64_t ldb, float* C, int64_t ldc, bool accumulate);
  // One key block of the online softmax, on a *transposed* logits tile: St (cols × n, row stride
  // ld) holds St[j][i] = the log2 logit of key j of the block for query i (n % 16 == 0), and query
  // i sees only the block's first visible[i] keys (visible == nullptr: all of them). Per query i:
  //   m' = max(m[i], max_j St[j][i]),  St[j][i] ← 2^(St[j][i] − m') (0 where masked),
  //   alpha[i] = 2^(m[i] − m'),  l[i] ← alpha[i] · l[i] + Σ_j St[j][i],  m[i] ← m'.
  // A query that has seen no key yet keeps m = −inf and l = 0 and gets alpha = 0 (never NaN).
  void (*online_softmax_columns)(float* St, int64_t ld, int64_t cols, int64_t n, const float* visible, float* m,
                                 float* l, float* alpha);
  // X[r][i] ← alpha[i] · X[r][i] for r < rows, i < n (row stride ld).
  void (*scale_columns)(float* X, int64_t ld, int64_t rows, int64_t n, const float* alpha);
  // x[j] ← 2^(x[j] − shift) in place (exactly 0 where x[j] − shift < −126, so −inf gives 0);
  // returns Σ_j x[j]. `shift` must be finite.
  float (*exp2_row)(float* x, int64_t n, float shift);
  // The backward pass's two fused tile products (a GEMM whose epilogue works on the accumulators
  // while they are still in registers, so neither S nor dP is ever stored and re-read):
  //   probabilities: P (m × n, row stride ldp) = 2^(alpha · A B − shift[r]) in the columns
  //                  j < visible[r] of row r, exactly 0 beyond (visible[r] == 0: the row is 0).
  //   softmax_grad:  dS (m × n, row stride ld) = P ∘ ((A B) ∘ Z − delta[r]), Z (row stride ld)
  //                  the dropout multipliers, or nullptr for none; dS may not alias P.
  // A and B as in gemm; n % 16 == 0. The same arithmetic as gemm followed by the elementwise step
  // (except that the compiler may fuse a multiply and an add of the epilogue into one FMA).
  void (*probabilities)(int64_t m, int64_t n, int64_t k, float alpha, const float* A, int64_t a_row, int64_t a_col,
                        const float* B, int64_t ldb, const float* shift, const float* visible, float* P, int64_t ldp);
  void (*softmax_grad)(int64_t m, int64_t n, int64_t k, const float* A, int64_t a_row, int64_t a_col, const float* B,
                       int64_t ldb, const float* P, const float* mult, const float* delta, float* dS, int64_t ld);
  // dst[c · dst_ld + r] = src[r · src_ld + c] for r < rows, c < cols (any sizes): VW × VW blocks
  // are transposed in registers, the ragged edges element by element.
  void (*transpose)(const float* src, int64_t src_ld, int64_t rows, int64_t cols, float* dst, int64_t dst_ld);
  // The dropout multipliers of elements first .. first + n − 1 of the Philox stream `seed`
  // (kernels/philox.h, bit for bit): mult[j] = keep_scale if (word >> 8) >= threshold, else 0,
  // where word is element (first + j)'s random 32-bit word and threshold = ⌈p · 2^24⌉ (that is
  // u = (word >> 8) · 2^-24 >= p). n may be anything (no padding contract).
  void (*dropout_multipliers)(uint64_t seed, uint64_t first, int64_t n, uint32_t threshold, float keep_scale,
                              float* mult);
};

// The three builds of the kernels, and the one for cpu_features.h's active_isa() (attention.cpp;
// dropout.cpp uses its Philox generator too).
const TileKernels& tiles_generic();
const TileKernels& tiles_avx2();   // call only where the CPU has AVX2 + FMA
const TileKernels& tiles_avx512(); // call only where the CPU has AVX-512 F/BW/VL/DQ
const TileKernels& active_tiles();

// dropout_multipliers' threshold for a drop probability p: ⌈p · 2^24⌉, so that (word >> 8) >=
// threshold ⟺ u = (word >> 8) · 2^-24 >= p (p · 2^24 is exact in float). p >= 1 (or NaN) keeps
// nothing, p <= 0 keeps everything, as u >= p does. (Defined in attention.cpp, the baseline build:
// an inline function here would be compiled with each including file's ISA flags.)
uint32_t keep_threshold(float p);

} // namespace pillars::cpu::attention_tiles

// ================================================================================================
#ifdef PILLARS_ATTENTION_TILES_IMPL
// Parameters from the including file:
//   PILLARS_TILES_VW        float lanes of one vector (4, 8, 16)
//   PILLARS_TILES_NV        vectors per register-block row (the block is 6 rows × NV vectors)
//   PILLARS_TILES_FMA(a,b,c) a·b + c as one fused instruction where the ISA has it
//   PILLARS_TILES_NAME      the getter this file defines (tiles_generic, ...)
//   PILLARS_TILES_ISA       its name as a string

namespace pillars::cpu::attention_tiles {
namespace {

constexpr int VW = PILLARS_TILES_VW;
constexpr int NV = PILLARS_TILES_NV;
constexpr int MR = 6; // rows of the register block

typedef float vf __attribute__((vector_size(VW * 4)));
typedef float vf_unaligned __attribute__((vector_size(VW * 4), aligned(4), may_alias));
typedef int32_t vi __attribute__((vector_size(VW * 4)));

inline vf load(const float* p) { return *reinterpret_cast<const vf_unaligned*>(p); }
inline void store(float* p, vf v) { *reinterpret_cast<vf_unaligned*>(p) = v; }
inline vf splat(float x) { return x - vf{}; } // (x − 0 folds to a broadcast; 0 + x would not: −0)
inline vf fmadd(vf a, vf b, vf c) { return PILLARS_TILES_FMA(a, b, c); }
inline float sum_lanes(vf v) {
  float s = 0;
  for (int l = 0; l < VW; ++l) s += v[l];
  return s;
}

// 2^x. Write x = n + f with n = round(x), f ∈ [−½, ½]; then 2^x = 2^n · 2^f, where 2^n is built
// directly in the exponent bits and 2^f = 1 + f·P(f) is the Cephes exp2f minimax polynomial
// (relative error 1.4e-7 on [−½, ½], i.e. about 1 ulp). Inputs below −126 (including −inf) give 0.
inline vf exp2v(vf x) {
  const vf lo = splat(-126.0f), hi = splat(127.0f);
  vf xc = x < lo ? lo : x;
  xc = xc > hi ? hi : xc;
  const vf round_magic = splat(12582912.0f); // 1.5 · 2^23: x + it has no fraction bits left
  const vf n = (xc + round_magic) - round_magic;
  const vf f = xc - n;
  vf poly = splat(1.535336188319500e-4f);
  poly = fmadd(poly, f, splat(1.339887440266574e-3f));
  poly = fmadd(poly, f, splat(9.618437357674640e-3f));
  poly = fmadd(poly, f, splat(5.550332471162809e-2f));
  poly = fmadd(poly, f, splat(2.402264791363012e-1f));
  poly = fmadd(poly, f, splat(6.931472028550421e-1f));
  const vf two_f = fmadd(poly, f, splat(1.0f));
  const vi exponent = (__builtin_convertvector(n, vi) + 127) << 23;
  const vf two_n = (vf)exponent; // a vector cast reinterprets the bits
  return x < lo ? splat(0.0f) : two_f * two_n;
}

// ---- the tile product: a 6 × (NV·VW) register block swept over C ------------------------------
//
// One sweep serves every product of the kernels: it accumulates A B in registers and hands each
// finished accumulator vector to an *epilogue*, epilogue(i, j, acc) for the VW columns j .. j+VW−1
// of row i of the product. The plain gemm's epilogue stores alpha · acc (or adds it); the
// backward's fused ones turn the logits into probabilities, or dP into dS, on the way out.

// The R × V accumulators of rows [i, i + R) and vectors [j, j + V·VW) live in registers; each step
// loads V vectors of B and broadcasts R scalars of A.
template <int R, int V, class Epilogue>
void gemm_block(int64_t i, int64_t j, int64_t k, const float* A, int64_t a_row, int64_t a_col, const float* B,
                int64_t ldb, const Epilogue& epilogue) {
  A += i * a_row;
  B += j;
  vf acc[R][V];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) acc[r][v] = splat(0.0f);
  for (int64_t p = 0; p < k; ++p) {
    vf b[V];
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) b[v] = load(B + p * ldb + v * VW);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const vf a = splat(A[r * a_row + p * a_col]);
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v) acc[r][v] = fmadd(a, b[v], acc[r][v]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) epilogue(i + r, j + v * VW, acc[r][v]);
}

// Picks the block shape for a tail: `rows` ≤ R rows and `vecs` ≤ V vectors, at compile time.
template <int R, int V, class Epilogue>
void gemm_block_fitting(int rows, int vecs, int64_t i, int64_t j, int64_t k, const float* A, int64_t a_row,
                        int64_t a_col, const float* B, int64_t ldb, const Epilogue& epilogue) {
  if constexpr (R > 1)
    if (rows < R) return gemm_block_fitting<R - 1, V>(rows, vecs, i, j, k, A, a_row, a_col, B, ldb, epilogue);
  if constexpr (V > 1)
    if (vecs < V) return gemm_block_fitting<R, V - 1>(rows, vecs, i, j, k, A, a_row, a_col, B, ldb, epilogue);
  gemm_block<R, V>(i, j, k, A, a_row, a_col, B, ldb, epilogue);
}

// The (m × n) product A B, block by block, through `epilogue`.
template <class Epilogue>
void gemm_sweep(int64_t m, int64_t n, int64_t k, const float* A, int64_t a_row, int64_t a_col, const float* B,
                int64_t ldb, const Epilogue& epilogue) {
  for (int64_t j = 0; j < n; j += NV * VW) { // a column panel of B stays in L1 ...
    const int vecs = static_cast<int>((n - j) / VW < NV ? (n - j) / VW : NV);
    for (int64_t i = 0; i < m; i += MR) { // ... while the row blocks sweep over it
      const int rows = static_cast<int>(m - i < MR ? m - i : MR);
      gemm_block_fitting<MR, NV>(rows, vecs, i, j, k, A, a_row, a_col, B, ldb, epilogue);
    }
  }
}

void gemm(int64_t m, int64_t n, int64_t k, float alpha, const float* A, int64_t a_row, int64_t a_col, const float* B,
          int64_t ldb, float* C, int64_t ldc, bool accumulate) {
  const vf scale = splat(alpha);
  if (accumulate)
    gemm_sweep(m, n, k, A, a_row, a_col, B, ldb, [=](int64_t i, int64_t j, vf acc) {
      float* c = C + i * ldc + j;
      store(c, load(c) + scale * acc);
    });
  else
    gemm_sweep(m, n, k, A, a_row, a_col, B, ldb,
               [=](int64_t i, int64_t j, vf acc) { store(C + i * ldc + j, scale * acc); });
}

// ---- row operations ----------------------------------------------------------------------------

// Column maxima and the exponentials of online_softmax_columns, for the VW queries starting at
// column i; kMasked: apply `visible` (key j of query i is masked iff j >= visible[i]).
template <bool kMasked>
void online_softmax_vector(float* St, int64_t ld, int64_t cols, const float* visible, float* m, float* l,
                           float* alpha) {
  const vf neg_inf = splat(-__builtin_inff());
  const vf seen = kMasked ? load(visible) : neg_inf;
  auto logit = [&](int64_t j) {
    const vf s = load(St + j * ld);
    return kMasked ? (splat(float(j)) < seen ? s : neg_inf) : s;
  };
  const vf m_old = load(m);
  vf m_new = m_old;
  for (int64_t j = 0; j < cols; ++j) {
    const vf s = logit(j);
    m_new = s > m_new ? s : m_new;
  }
  const vf shift = m_new == neg_inf ? splat(0.0f) : m_new; // a query with no key yet: stays −inf
  const vf a = exp2v(m_old - shift);
  vf sum = splat(0.0f);
  for (int64_t j = 0; j < cols; ++j) {
    const vf e = exp2v(logit(j) - shift);
    store(St + j * ld, e);
    sum += e;
  }
  store(alpha, a);
  store(l, a * load(l) + sum);
  store(m, m_new);
}

void online_softmax_columns(float* St, int64_t ld, int64_t cols, int64_t n, const float* visible, float* m, float* l,
                            float* alpha) {
  for (int64_t i = 0; i < n; i += VW) {
    if (visible)
      online_softmax_vector<true>(St + i, ld, cols, visible + i, m + i, l + i, alpha + i);
    else
      online_softmax_vector<false>(St + i, ld, cols, nullptr, m + i, l + i, alpha + i);
  }
}

void scale_columns(float* X, int64_t ld, int64_t rows, int64_t n, const float* alpha) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < n; i += VW) store(X + r * ld + i, load(X + r * ld + i) * load(alpha + i));
}

float exp2_row(float* x, int64_t n, float shift) {
  vf sum = splat(0.0f);
  for (int64_t j = 0; j < n; j += VW) {
    const vf e = exp2v(load(x + j) - shift);
    store(x + j, e);
    sum += e;
  }
  return sum_lanes(sum);
}

// The lane numbers 0, 1, ..., VW − 1.
inline vf lane_index() {
  vf x;
  for (int l = 0; l < VW; ++l) x[l] = float(l);
  return x;
}

void probabilities(int64_t m, int64_t n, int64_t k, float alpha, const float* A, int64_t a_row, int64_t a_col,
                   const float* B, int64_t ldb, const float* shift, const float* visible, float* P, int64_t ldp) {
  const vf scale = splat(alpha), lanes = lane_index();
  gemm_sweep(m, n, k, A, a_row, a_col, B, ldb, [=](int64_t i, int64_t j, vf acc) {
    const vf e = exp2v(scale * acc - shift[i]);
    store(P + i * ldp + j, splat(float(j)) + lanes < visible[i] ? e : splat(0.0f));
  });
}

void softmax_grad(int64_t m, int64_t n, int64_t k, const float* A, int64_t a_row, int64_t a_col, const float* B,
                  int64_t ldb, const float* P, const float* mult, const float* delta, float* dS, int64_t ld) {
  if (mult)
    gemm_sweep(m, n, k, A, a_row, a_col, B, ldb, [=](int64_t i, int64_t j, vf acc) {
      const int64_t at = i * ld + j;
      store(dS + at, load(P + at) * (acc * load(mult + at) - delta[i]));
    });
  else
    gemm_sweep(m, n, k, A, a_row, a_col, B, ldb, [=](int64_t i, int64_t j, vf acc) {
      const int64_t at = i * ld + j;
      store(dS + at, load(P + at) * (acc - delta[i]));
    });
}

// ---- transpose -----------------------------------------------------------------------------------

// Interleaves lanes: zip(a, b, half)[2i] = a[half·VW/2 + i], zip(a, b, half)[2i + 1] = b[half·VW/2 + i].
inline vf zip(vf a, vf b, int half) {
  vi index;
  for (int i = 0; i < VW; ++i) index[i] = (i % 2) * VW + half * (VW / 2) + i / 2;
  return __builtin_shuffle(a, b, index);
}

// x (VW × VW, one row per vector) ← its transpose: log2(VW) rounds of "row 2i, 2i+1 ← the lane
// interleavings of rows i and i + VW/2" (the perfect shuffle; each round moves one bit of the
// row index into the column index).
inline void transpose_vectors(vf x[VW]) {
  for (int round = 1; round < VW; round *= 2) {
    vf y[VW];
#pragma GCC unroll 16
    for (int i = 0; i < VW; ++i) y[i] = zip(x[i / 2], x[i / 2 + VW / 2], i % 2);
#pragma GCC unroll 16
    for (int i = 0; i < VW; ++i) x[i] = y[i];
  }
}

void transpose(const float* src, int64_t src_ld, int64_t rows, int64_t cols, float* dst, int64_t dst_ld) {
  int64_t r = 0;
  for (; r + VW <= rows; r += VW) {
    int64_t c = 0;
    for (; c + VW <= cols; c += VW) {
      vf x[VW];
#pragma GCC unroll 16
      for (int i = 0; i < VW; ++i) x[i] = load(src + (r + i) * src_ld + c);
      transpose_vectors(x);
#pragma GCC unroll 16
      for (int i = 0; i < VW; ++i) store(dst + (c + i) * dst_ld + r, x[i]);
    }
    for (; c < cols; ++c)
      for (int i = 0; i < VW; ++i) dst[c * dst_ld + r + i] = src[(r + i) * src_ld + c];
  }
  for (; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) dst[c * dst_ld + r] = src[r * src_ld + c];
}

// ---- dropout: Philox4x32-10 on VW counters at once ----------------------------------------------

typedef uint32_t vu __attribute__((vector_size(VW * 4)));
typedef uint64_t vq __attribute__((vector_size(VW * 4))); // the same register as VW/2 64-bit lanes

// hi:lo = a · b for each of the VW 32-bit lanes of b (the full 64-bit products). The even and odd
// lanes are multiplied separately as zero-extended 64-bit lanes, which every x86 SIMD level does in
// one instruction (pmuludq), then the halves are put back in place.
inline vu mulhilo(uint32_t a, vu b, vu& hi) {
  const vq mask = vq{} + 0xffffffffull;
  const vq even = ((vq)b & mask) * static_cast<uint64_t>(a);
  const vq odd = ((vq)b >> 32) * static_cast<uint64_t>(a);
  hi = (vu)((even >> 32) | (odd & ~mask));
  return (vu)((even & mask) | (odd << 32));
}

// The four random words of the VW Philox counters first_counter, first_counter + 1, ...: word w of
// counter first_counter + lane is words[w][lane]. The rounds and constants of philox4x32_10.
void philox_block(uint64_t first_counter, uint64_t seed, vu words[4]) {
  vu c0, c1, c2 = vu{}, c3 = vu{};
  for (int lane = 0; lane < VW; ++lane) {
    const uint64_t counter = first_counter + static_cast<uint64_t>(lane);
    c0[lane] = static_cast<uint32_t>(counter);
    c1[lane] = static_cast<uint32_t>(counter >> 32);
  }
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    vu hi0, hi1;
    const vu lo0 = mulhilo(0xD2511F53u, c0, hi0);
    const vu lo1 = mulhilo(0xCD9E8D57u, c2, hi1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  words[0] = c0, words[1] = c1, words[2] = c2, words[3] = c3;
}

void dropout_multipliers(uint64_t seed, uint64_t first, int64_t n, uint32_t threshold, float keep_scale, float* mult) {
  const uint64_t end = first + static_cast<uint64_t>(n);
  for (uint64_t counter = first >> 2; 4 * counter < end; counter += VW) {
    vu words[4];
    philox_block(counter, seed, words);
    vf m[4]; // m[w][lane]: multiplier of element 4 · (counter + lane) + w
    for (int w = 0; w < 4; ++w) m[w] = (words[w] >> 8) >= threshold ? splat(keep_scale) : splat(0.0f);
    // Into element order (a 4 × VW transpose): two rounds of interleaving.
    const vf even[2] = {zip(m[0], m[2], 0), zip(m[0], m[2], 1)};
    const vf odd[2] = {zip(m[1], m[3], 0), zip(m[1], m[3], 1)};
    const vf in_order[4] = {zip(even[0], odd[0], 0), zip(even[0], odd[0], 1), zip(even[1], odd[1], 0),
                            zip(even[1], odd[1], 1)};
    const uint64_t e0 = 4 * counter; // the first element of this block
    if (e0 >= first && e0 + 4 * VW <= end) {
      for (int v = 0; v < 4; ++v) store(mult + (e0 - first) + v * VW, in_order[v]);
    } else { // the block straddles an end of the range
      float block[4 * VW];
      for (int v = 0; v < 4; ++v) store(block + v * VW, in_order[v]);
      for (uint64_t e = e0 > first ? e0 : first; e < e0 + 4 * VW && e < end; ++e) mult[e - first] = block[e - e0];
    }
  }
}

} // namespace

const TileKernels& PILLARS_TILES_NAME() {
  static const TileKernels kernels{PILLARS_TILES_ISA, gemm,      online_softmax_columns,
                                   scale_columns,     exp2_row,  probabilities,
                                   softmax_grad,      transpose, dropout_multipliers};
  return kernels;
}

} // namespace pillars::cpu::attention_tiles
#endif // PILLARS_ATTENTION_TILES_IMPL
