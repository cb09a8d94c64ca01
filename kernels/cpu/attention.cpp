// Fused multi-head attention on the CPU: FlashAttention's algorithm (Dao et al. 2022; Dao 2023)
// with OpenMP across heads and query blocks and SIMD tile kernels (attention_tiles.h).
//
// FORWARD. For one query row q and keys k_1..k_T the output is o = Σ_j a_j v_j with
// a_j = exp(s_j − m) / l, s_j = scale · q·k_j, m = max_j s_j, l = Σ_j exp(s_j − m). The online
// softmax computes this in one sweep over key blocks, never holding a whole row of s: it keeps a
// running max m, a running sum l and an unnormalized accumulator õ = Σ_j exp(s_j − m) v_j over
// the blocks seen so far. A new block with logits s_j (j in the block) changes the max to
// m' = max(m, max_j s_j); every term seen so far was computed relative to m, so it is rescaled by
// α = exp(m − m'):
//     l' = α · l + Σ_j exp(s_j − m'),      õ' = α · õ + Σ_j exp(s_j − m') v_j.
// After the last block o = õ / l, and lse = m + log l is saved for the backward pass. Memory is
// O(block_q × block_k) per thread, not O(Tq × Tk). Everything runs in base 2 (logits are scaled by
// log2 e once, so each exponential is one exp2 — exp(x) = 2^(x · log2 e)).
// With dropout, o = Σ_j a_j z_j v_j where z_j ∈ {0, 1/(1−p)} is the Philox mask: the statistics
// m and l use the un-dropped terms and only the accumulation into õ is masked.
// The forward's tiles are transposed (keys × queries): Sᵀ = K_blk Qᵀ and Õᵀ += V_blkᵀ Pᵀ. Then the
// per-query statistics m, l, α of 16 queries fill one vector and the softmax step is pure SIMD,
// and the tile products read K and V rows straight from the (strided) input: only Qᵀ is packed,
// once per query block.
//
// BACKWARD. With P = softmax(S) (masked), Z the dropout multipliers, O = (P∘Z) V:
//     dV = (P∘Z)ᵀ dO,    dP = (dO Vᵀ)∘Z,    dS = P ∘ (dP − δ),    dQ = scale · dS K,
//     dK = scale · dSᵀ Q,
// where δ_i = Σ_j P_ij dP_ij is the softmax Jacobian's correction term. It needs no row of P:
//     δ_i = Σ_j P_ij Z_ij (dO_i · v_j) = dO_i · Σ_j (P_ij Z_ij) v_j = dO_i · O_i = rowsum(dO ∘ O)_i,
// so it is computed once per row from O and dO. P itself is recomputed tile by tile from Q, K and
// the saved lse, P_ij = exp(s_ij − lse_i), instead of being stored (FlashAttention-2's backward).
// Each thread owns whole (batch, head) pairs: it sweeps key blocks (accumulating that block's dK
// and dV in a tile) and, inside, query blocks (accumulating dQ of the head in a (Tq × D) buffer),
// so no two threads ever write the same gradient element. The backward's tiles are (queries × keys).
// Where its time goes is the five (64 × 64 × 64) tile products per (key block, query block) pair,
// so everything else is kept off that path:
//   * Q and dO of the head are packed once per head (not once per pair), with δ computed and the
//     strided input rows software-prefetched on the way; K and V once per key block, and their
//     transposes are done in registers (tiles.transpose) from the packed copies.
//   * S = Q Kᵀ and dP = dO Vᵀ are never stored: the tile products that make them finish in an
//     epilogue that turns the accumulators into P = exp(S − lse) (masked) and dS = P ∘ (dP∘Z − δ)
//     while they are still in registers (tiles.probabilities, tiles.softmax_grad).
//   * dK, dV of a key block are written (not zero-filled and accumulated) by its first query block.
//
// MASKS are prefixes of the key axis (attention.h): row i sees keys [0, n_i). A key block beyond
// every row's n_i is skipped (causal: the blocks above the diagonal; padding: the blocks past
// key_lengths[b]); inside a block, the logits past n_i count as −inf, which the exp2 maps to 0.
// Key and value rows past key_lengths[b] are never read: the forward's key loop stops before them
// and the backward packs zeros in their place (their dK and dV are written as zeros), because a
// masked probability of 0 times a NaN left in a padding slot would still be NaN.
#include "kernels/cpu/attention.h"

#include <omp.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <memory>
#include <utility>

#include "kernels/cpu/cast.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/philox.h"

// The baseline (SSE2) build of the tile kernels.
#define PILLARS_ATTENTION_TILES_IMPL
#define PILLARS_TILES_VW 4
#define PILLARS_TILES_NV 2
#define PILLARS_TILES_FMA(a, b, c) ((a) * (b) + (c))
#define PILLARS_TILES_NAME tiles_generic
#define PILLARS_TILES_ISA "generic"
#include "kernels/cpu/attention_tiles.h"

namespace pillars::cpu {

// ---- which tile kernels run --------------------------------------------------------------------

using attention_tiles::TileKernels;

// The build of the tile kernels for the active ISA (cpu_features.h: detection, PILLARS_ISA, tests'
// force_isa); active_isa() never names an ISA this CPU lacks.
const TileKernels& attention_tiles::active_tiles() {
  switch (active_isa()) {
    case Isa::amx:
    case Isa::avx512_bf16: // bf16 levels: attention is fp32, their AVX-512 build
    case Isa::avx512:
      return attention_tiles::tiles_avx512();
    case Isa::avx2:
      return attention_tiles::tiles_avx2();
    case Isa::generic:
      break;
  }
  return attention_tiles::tiles_generic();
}

uint32_t attention_tiles::keep_threshold(float p) {
  if (!(p < 1.0f)) return uint32_t{1} << 24;
  if (!(p > 0.0f)) return 0;
  return static_cast<uint32_t>(std::ceil(p * 16777216.0f));
}

const char* attention_isa() { return attention_tiles::active_tiles().isa; }

AttentionParams attention_params_contiguous(int64_t B, int64_t H, int64_t Tq, int64_t Tk, int64_t D) {
  AttentionParams p;
  p.B = B, p.H = H, p.Tq = Tq, p.Tk = Tk, p.D = D;
  p.scale = 1.0f / std::sqrt(static_cast<float>(D));
  p.q_token_stride = p.o_token_stride = H * D;
  p.k_token_stride = p.v_token_stride = H * D;
  p.q_batch_stride = p.o_batch_stride = Tq * H * D;
  p.k_batch_stride = p.v_batch_stride = Tk * H * D;
  return p;
}

namespace {

constexpr int64_t kBlockQ = 64;   // query rows per tile
constexpr int64_t kBlockK = 64;   // keys per tile (a multiple of kPad)
constexpr int64_t kPad = 16;      // tile widths are padded to a multiple of 16 floats (64 bytes)
constexpr int64_t kRowsAhead = 8; // software prefetch distance of the row-by-row loops, in rows
constexpr float kLog2e = 1.44269504088896340736f;
constexpr float kLn2 = 0.69314718055994530942f;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }
int64_t clamp(int64_t x, int64_t lo, int64_t hi) { return std::min(std::max(x, lo), hi); }
void fill(float* x, int64_t n, float value) { std::fill(x, x + n, value); }

// ---- views of one head ---------------------------------------------------------------------------

// The rows of head h of batch b inside a (B, T, H, D) tensor: row i starts at base + i · stride.
template <class T>
struct HeadRows {
  T* base;
  int64_t stride;
  T* operator[](int64_t i) const { return base + i * stride; }
};

template <class T>
HeadRows<T> head_rows(T* x, int64_t batch_stride, int64_t token_stride, const AttentionParams& p, int64_t b,
                      int64_t h) {
  return {x + b * batch_stride + h * p.D, token_stride};
}

// Requests the cache lines of rows [r0, r0 + n) of x all at once, before a loop that reads them:
// the first touch of a block of rows then costs about one memory latency instead of one per line.
void prefetch_rows(HeadRows<const float> x, int64_t r0, int64_t n, int64_t D) {
  for (int64_t r = 0; r < n; ++r)
    for (int64_t d = 0; d < D; d += 16) __builtin_prefetch(x[r0 + r] + d);
}

// dst (n_pad, Dp) ← rows [r0, r0 + n) of x, zero-padded to n_pad rows and Dp columns.
void pack_rows(HeadRows<const float> x, int64_t r0, int64_t n, int64_t n_pad, int64_t D, int64_t Dp, float* dst) {
  for (int64_t r = 0; r < n_pad; ++r) {
    float* out = dst + r * Dp;
    if (r < n) {
      std::memcpy(out, x[r0 + r], D * sizeof(float));
      if (Dp > D) fill(out + D, Dp - D, 0.0f);
    } else {
      fill(out, Dp, 0.0f);
    }
  }
}

// Rows [r0, r0 + n) of y ← alpha · src (n, ld) (its first D columns).
void unpack_rows(const float* src, int64_t ld, int64_t n, float alpha, int64_t D, HeadRows<float> y, int64_t r0) {
  for (int64_t r = 0; r < n; ++r) {
    float* out = y[r0 + r];
    if (r + kRowsAhead < n)
      for (int64_t d = 0; d < D; d += kPad) __builtin_prefetch(y[r0 + r + kRowsAhead] + d, 1);
#pragma omp simd
    for (int64_t d = 0; d < D; ++d) out[d] = alpha * src[r * ld + d];
  }
}

// Rows [0, rows) of x (row stride ld), columns [0, cols), rounded to bf16 values.
void round_rows_to_bf16(float* x, int64_t rows, int64_t cols, int64_t ld) {
  for (int64_t r = 0; r < rows; ++r) round_to_bf16(x + r * ld, cols);
}

// ---- dropout -------------------------------------------------------------------------------------

// mult[0:n] ← the dropout multipliers of keys [j0, j0 + n) of query row i of head (b, h): 0 where
// dropped, 1 / (1 − p) where kept, from the Philox stream of kernels/philox.h (the tile kernel
// vectorizes the generator; the tests check it against philox_uniform element by element).
void dropout_multipliers(const AttentionParams& p, const TileKernels& tiles, int64_t b, int64_t h, int64_t i,
                         int64_t j0, int64_t n, float* mult) {
  const uint64_t first = p.rng_offset + static_cast<uint64_t>(((b * p.H + h) * p.Tq + i) * p.Tk + j0);
  tiles.dropout_multipliers(p.seed, first, n, attention_tiles::keep_threshold(p.dropout_p), 1.0f / (1.0f - p.dropout_p),
                            mult);
}

// ---- per-thread scratch --------------------------------------------------------------------------

// One 64-byte aligned block per thread that only ever grows: once shapes repeat, no call allocates.
// (Plain new[] plus manual alignment, so the tests' operator-new counter sees every allocation.)
float* thread_scratch(int64_t floats) {
  struct Block {
    std::unique_ptr<float[]> storage;
    float* data = nullptr;
    int64_t capacity = 0;
  };
  thread_local Block block;
  if (floats > block.capacity) {
    block.storage.reset(new float[floats + kPad]); // kPad floats = 64 bytes of room to align
    const auto address = reinterpret_cast<std::uintptr_t>(block.storage.get());
    block.data = reinterpret_cast<float*>((address + 63) & ~std::uintptr_t{63});
    block.capacity = floats;
  }
  return block.data;
}

// Lays out buffers one after another from `base` (each 64-byte aligned); returns the float count.
// With base == nullptr it only measures (the pointers are left null).
int64_t carve(float* base, std::initializer_list<std::pair<float**, int64_t>> buffers) {
  int64_t used = 0;
  for (auto [pointer, floats] : buffers) {
    *pointer = base ? base + used : nullptr;
    used += round_up(floats, kPad);
  }
  return used;
}

// The forward pass's tiles for one query block. They are kept transposed — queries along the
// columns — so the online-softmax statistics of 16 queries fill one vector, and K and V are read
// straight from the input (no packing, no padding of D).
struct ForwardTiles {
  float* qt;      // (D, kBlockQ)       Qᵀ of the query block
  float* st;      // (kBlockK, kBlockQ) Sᵀ: logits (log2 units), then probabilities
  float* ot;      // (D, kBlockQ)       Õᵀ, the unnormalized output accumulator
  float* m;       // (kBlockQ)          running max (log2 units)
  float* l;       // (kBlockQ)          running sum
  float* alpha;   // (kBlockQ)          rescaling factors of the current key block
  float* visible; // (kBlockQ)          keys of the current block each query sees
  float* mult;    // (kBlockK)          dropout multipliers of one query
  float* kb;      // (kBlockK, D)       bf16 only: the key block, rounded
  float* vb;      // (kBlockK, D)       bf16 only: the value block, rounded

  int64_t layout(float* base, int64_t D, bool bf16) {
    const int64_t block = bf16 ? kBlockK * D : 0;
    return carve(base, {{&qt, D * kBlockQ},
                        {&st, kBlockK * kBlockQ},
                        {&ot, D * kBlockQ},
                        {&m, kBlockQ},
                        {&l, kBlockQ},
                        {&alpha, kBlockQ},
                        {&visible, kBlockQ},
                        {&mult, kBlockK},
                        {&kb, block},
                        {&vb, block}});
  }
};

// The backward pass's tiles for one (batch, head) pair. Q and dO of the head are packed once per
// head (every key block reads every query block of them); K and V once per key block.
struct BackwardTiles {
  float* q;       // (Tq, Dp)           the head's queries
  float* dout;    // (Tq, Dp)           the head's dO
  float* k;       // (kBlockK, Dp)      the key block (for dQ += dS K)
  float* kt;      // (Dp, kBlockK)      the key block, transposed (for S = Q Kᵀ)
  float* v;       // (kBlockK, Dp)      the value block (staging for vt)
  float* vt;      // (Dp, kBlockK)      the value block, transposed (for dP = dO Vᵀ)
  float* dk;      // (kBlockK, Dp)      dK accumulator of the key block (unscaled)
  float* dv;      // (kBlockK, Dp)      dV accumulator of the key block
  float* p;       // (kBlockQ, kBlockK) probabilities P
  float* pz;      // (kBlockQ, kBlockK) P ∘ Z (dropout, or bf16: P (∘ Z) rounded)
  float* mult;    // (kBlockQ, kBlockK) dropout multipliers Z (dropout only)
  float* ds;      // (kBlockQ, kBlockK) dS
  float* visible; // (kBlockQ)          keys of the current key block each query sees
  float* delta;   // (Tq)               δ_i = rowsum(dO ∘ O)_i
  float* lse2;    // (Tq)               lse in log2 units (0 for rows that see nothing)
  float* dq;      // (Tq, Dp)           dQ accumulator of the head (unscaled)

  int64_t layout(float* base, int64_t Dp, int64_t Tq, bool dropout, bool bf16) {
    const int64_t tile = kBlockQ * kBlockK, dropout_tile = dropout ? tile : 0;
    return carve(base, {{&q, Tq * Dp},
                        {&dout, Tq * Dp},
                        {&k, kBlockK * Dp},
                        {&kt, Dp * kBlockK},
                        {&v, kBlockK * Dp},
                        {&vt, Dp * kBlockK},
                        {&dk, kBlockK * Dp},
                        {&dv, kBlockK * Dp},
                        {&p, tile},
                        {&pz, dropout || bf16 ? tile : 0},
                        {&mult, dropout_tile},
                        {&ds, tile},
                        {&visible, kBlockQ},
                        {&delta, Tq},
                        {&lse2, Tq},
                        {&dq, Tq * Dp}});
  }
};

int64_t padded_head_dim(const AttentionParams& p) { return round_up(std::max<int64_t>(p.D, 1), kPad); }

template <class Tiles, class... Shape>
Tiles thread_tiles(Shape... shape) {
  Tiles t;
  t.layout(thread_scratch(t.layout(nullptr, shape...)), shape...);
  return t;
}

// ---- forward -------------------------------------------------------------------------------------

// The per-query outputs of a query block: O = õ / l, lse = ln 2 · (m + log2 l), and, when asked
// for, the probabilities 2^(s − m) / l from the log2 logits stashed in `probs` during the sweep.
void finish_query_block(const AttentionParams& p, const ForwardTiles& t, int64_t b, int64_t h, int64_t i0, int64_t rows,
                        int64_t ld, const int64_t* visible, HeadRows<float> out, float* lse, float* probs) {
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = i0 + r, row = (b * p.H + h) * p.Tq + i;
    const bool sees_nothing = visible[r] == 0;
    const float inv_l = sees_nothing ? 0.0f : 1.0f / t.l[r];
    for (int64_t d = 0; d < p.D; ++d) out[i][d] = t.ot[d * ld + r] * inv_l;
    lse[row] = sees_nothing ? kNegInf : kLn2 * (t.m[r] + std::log2(t.l[r]));
    if (probs) {
      float* a = probs + row * p.Tk;
      for (int64_t j = 0; j < visible[r]; ++j) a[j] = std::exp2(a[j] - t.m[r]) * inv_l;
      fill(a + visible[r], p.Tk - visible[r], 0.0f);
    }
  }
}

// t.visible[r] ← how many keys of block [j0, j0 + cols) query r sees (0 for the padding columns
// r ≥ rows); returns whether any query sees only part of the block (the softmax must mask).
bool block_visibility(const int64_t* visible, int64_t rows, int64_t ld, int64_t j0, int64_t cols,
                      const ForwardTiles& t) {
  bool masked = false;
  for (int64_t r = 0; r < ld; ++r) {
    t.visible[r] = r < rows ? static_cast<float>(clamp(visible[r] - j0, 0, cols)) : 0.0f;
    masked = masked || t.visible[r] < cols;
  }
  return masked;
}

// Pᵀ ← Pᵀ ∘ Zᵀ for the queries of the block (column r of Pᵀ is query i0 + r).
void dropout_columns(const AttentionParams& p, const TileKernels& tiles, const ForwardTiles& t, int64_t b, int64_t h,
                     int64_t i0, int64_t rows, int64_t ld, int64_t j0) {
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t n = static_cast<int64_t>(t.visible[r]);
    dropout_multipliers(p, tiles, b, h, i0 + r, j0, n, t.mult);
    for (int64_t j = 0; j < n; ++j) t.st[j * ld + r] *= t.mult[j];
  }
}

// The forward pass of query rows [i0, i0 + kBlockQ) of head (b, h), on transposed tiles: per key
// block, Sᵀ = K_blk Qᵀ, the online-softmax step on its columns, then Õᵀ = α ∘ Õᵀ + V_blkᵀ Pᵀ.
void forward_query_block(const AttentionParams& p, const TileKernels& tiles, const ForwardTiles& t, int64_t b,
                         int64_t h, int64_t i0, const float* Q, const float* K, const float* V, float* O, float* lse,
                         float* probs) {
  const int64_t D = p.D, rows = std::min(kBlockQ, p.Tq - i0), ld = round_up(rows, kPad);
  const auto k = head_rows(K, p.k_batch_stride, p.k_token_stride, p, b, h);
  const auto v = head_rows(V, p.v_batch_stride, p.v_token_stride, p, b, h);
  int64_t visible[kBlockQ], last_key = 0; // query r sees keys [0, visible[r])
  for (int64_t r = 0; r < rows; ++r) {
    visible[r] = attention_visible_keys(p, b, i0 + r);
    last_key = std::max(last_key, visible[r]);
  }
  // Qᵀ (D, ld) of the block, straight from the input; the padding queries [rows, ld) are zero.
  const auto q = head_rows(Q, p.q_batch_stride, p.q_token_stride, p, b, h);
  prefetch_rows(q, i0, rows, D);
  tiles.transpose(q[i0], p.q_token_stride, rows, D, t.qt, ld);
  if (rows < ld)
    for (int64_t d = 0; d < D; ++d) fill(t.qt + d * ld + rows, ld - rows, 0.0f);
  if (p.bf16) round_to_bf16(t.qt, D * ld);
  fill(t.m, ld, kNegInf);
  fill(t.l, ld, 0.0f);
  fill(t.ot, D * ld, 0.0f);

  for (int64_t j0 = 0; j0 < last_key; j0 += kBlockK) { // blocks past every query's mask: skipped
    const int64_t cols = std::min(kBlockK, last_key - j0);
    const bool masked = block_visibility(visible, rows, ld, j0, cols, t);
    // bf16: K and V of the block rounded into kb, vb (rows D apart), read from there; when they
    // already hold bf16 values (kv_rounded), read in place: the same operands, the same products.
    const float *kblk = k[j0], *vblk = v[j0];
    int64_t k_stride = p.k_token_stride, v_stride = p.v_token_stride;
    if (p.bf16 && !p.kv_rounded) {
      pack_rows(k, j0, cols, cols, D, D, t.kb);
      pack_rows(v, j0, cols, cols, D, D, t.vb);
      round_to_bf16(t.kb, cols * D);
      round_to_bf16(t.vb, cols * D);
      kblk = t.kb, vblk = t.vb, k_stride = v_stride = D;
    }
    // Sᵀ (cols, ld) = log2 e · scale · K_blk Qᵀ   (logits in log2 units)
    tiles.gemm(cols, ld, D, p.scale * kLog2e, kblk, k_stride, 1, t.qt, ld, t.st, ld, false);
    if (probs) // stash the logits; finish_query_block turns them into probabilities
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < static_cast<int64_t>(t.visible[r]); ++j)
          probs[((b * p.H + h) * p.Tq + i0 + r) * p.Tk + j0 + j] = t.st[j * ld + r];
    tiles.online_softmax_columns(t.st, ld, cols, ld, masked ? t.visible : nullptr, t.m, t.l, t.alpha);
    tiles.scale_columns(t.ot, ld, D, ld, t.alpha);
    if (p.dropout_p > 0.0f) dropout_columns(p, tiles, t, b, h, i0, rows, ld, j0);
    if (p.bf16) round_to_bf16(t.st, cols * ld); // Pᵀ (after l has summed the fp32 values)
    // Õᵀ (D, ld) += V_blkᵀ Pᵀ
    tiles.gemm(D, ld, cols, 1.0f, vblk, 1, v_stride, t.st, ld, t.ot, ld, true);
  }
  finish_query_block(p, t, b, h, i0, rows, ld, visible, head_rows(O, p.o_batch_stride, p.o_token_stride, p, b, h), lse,
                     probs);
}

// ---- backward ------------------------------------------------------------------------------------

// The first query row that sees key j (rows see prefixes that grow with i, so a binary search).
int64_t first_row_seeing(const AttentionParams& p, int64_t b, int64_t j) {
  int64_t lo = 0, hi = p.Tq;
  while (lo < hi) {
    const int64_t mid = (lo + hi) / 2;
    if (attention_visible_keys(p, b, mid) > j)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

// With dropout: Z (the multipliers) and P ∘ Z for query rows [i0, i0 + rows) against the key block
// at j0 (P is already in t.p; t.visible holds how many keys of the block each row sees).
void dropout_tile(const AttentionParams& p, const TileKernels& tiles, const BackwardTiles& t, int64_t b, int64_t h,
                  int64_t i0, int64_t rows, int64_t j0, int64_t cols_pad) {
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t n = static_cast<int64_t>(t.visible[r]);
    float* mult = t.mult + r * kBlockK;
    dropout_multipliers(p, tiles, b, h, i0 + r, j0, n, mult);
    fill(mult + n, cols_pad - n, 0.0f);
    for (int64_t j = 0; j < cols_pad; ++j) t.pz[r * kBlockK + j] = t.p[r * kBlockK + j] * mult[j];
  }
}

// The backward pass of key block [j0, j0 + kBlockK) of head (b, h) against every query block that
// sees it: dK, dV of the block are complete afterwards; dQ of the head accumulates in t.dq.
// Per query block, five tile products; the two that produce a (queries × keys) tile apply the
// elementwise step in their epilogue, so S and dP never leave the registers:
//   P  = exp(S − lse), S = scale · Q Kᵀ     (probabilities: GEMM + exp2 + mask)
//   dV += (P∘Z)ᵀ dO
//   dS = P ∘ (dO Vᵀ ∘ Z − δ)                (softmax_grad: GEMM + the softmax backward)
//   dQ += dS K,   dK += dSᵀ Q               (scale applied on the way out)
void backward_key_block(const AttentionParams& p, const TileKernels& tiles, const BackwardTiles& t, int64_t b,
                        int64_t h, int64_t j0, const float* K, const float* V, float* dK, float* dV) {
  const int64_t D = p.D, Dp = padded_head_dim(p);
  const int64_t cols = std::min(kBlockK, p.Tk - j0), cols_pad = round_up(cols, kPad);
  const auto k = head_rows(K, p.k_batch_stride, p.k_token_stride, p, b, h);
  const auto v = head_rows(V, p.v_batch_stride, p.v_token_stride, p, b, h);
  const bool dropout = p.dropout_p > 0.0f;
  const float* pz = dropout || p.bf16 ? t.pz : t.p;
  // The block's keys that exist; the padding slots past them are packed as zeros, never read.
  const int64_t real = clamp(attention_key_limit(p, b) - j0, 0, cols);

  // K and V of the block, zero-padded, and their transposes (from the packed copies, so the
  // padding comes along and the transpose reads L1).
  prefetch_rows(k, j0, real, D);
  prefetch_rows(v, j0, real, D);
  pack_rows(k, j0, real, cols_pad, D, Dp, t.k);
  pack_rows(v, j0, real, cols_pad, D, Dp, t.v);
  if (p.bf16 && !p.kv_rounded) {
    round_to_bf16(t.k, cols_pad * Dp);
    round_to_bf16(t.v, cols_pad * Dp);
  }
  tiles.transpose(t.k, Dp, cols_pad, Dp, t.kt, kBlockK);
  tiles.transpose(t.v, Dp, cols_pad, Dp, t.vt, kBlockK);

  bool first = true; // the first query block writes dK, dV; the others accumulate
  for (int64_t i0 = first_row_seeing(p, b, j0); i0 < p.Tq; i0 += kBlockQ) {
    const int64_t rows = std::min(kBlockQ, p.Tq - i0);
    const float* q = t.q + i0 * Dp;
    const float* dout = t.dout + i0 * Dp;
    for (int64_t r = 0; r < rows; ++r)
      t.visible[r] = static_cast<float>(clamp(attention_visible_keys(p, b, i0 + r) - j0, 0, cols));
    tiles.probabilities(rows, cols_pad, Dp, p.scale * kLog2e, q, Dp, 1, t.kt, kBlockK, t.lse2 + i0, t.visible, t.p,
                        kBlockK);
    if (dropout) dropout_tile(p, tiles, t, b, h, i0, rows, j0, cols_pad);
    if (p.bf16) { // P (∘ Z) rounded for dV; the softmax gradient reads the fp32 P
      if (!dropout)
        for (int64_t r = 0; r < rows; ++r) std::memcpy(t.pz + r * kBlockK, t.p + r * kBlockK, cols_pad * sizeof(float));
      round_rows_to_bf16(t.pz, rows, cols_pad, kBlockK);
    }
    tiles.gemm(cols_pad, Dp, rows, 1.0f, pz, 1, kBlockK, dout, Dp, t.dv, Dp, !first);
    tiles.softmax_grad(rows, cols_pad, Dp, dout, Dp, 1, t.vt, kBlockK, t.p, dropout ? t.mult : nullptr, t.delta + i0,
                       t.ds, kBlockK);
    if (p.bf16) round_rows_to_bf16(t.ds, rows, cols_pad, kBlockK);
    tiles.gemm(rows, Dp, cols_pad, 1.0f, t.ds, kBlockK, 1, t.k, Dp, t.dq + i0 * Dp, Dp, true);
    tiles.gemm(cols_pad, Dp, rows, 1.0f, t.ds, 1, kBlockK, q, Dp, t.dk, Dp, !first);
    first = false;
  }
  if (first) { // no query sees this key block: its gradients are zero
    fill(t.dk, cols_pad * Dp, 0.0f);
    fill(t.dv, cols_pad * Dp, 0.0f);
  }
  unpack_rows(t.dk, Dp, cols, p.scale, D, head_rows(dK, p.k_batch_stride, p.k_token_stride, p, b, h), j0);
  unpack_rows(t.dv, Dp, cols, 1.0f, D, head_rows(dV, p.v_batch_stride, p.v_token_stride, p, b, h), j0);
}

// The whole backward pass of head (b, h): pack Q and dO of the head (computing δ on the way),
// sweep the key blocks, write dQ.
void backward_head(const AttentionParams& p, const TileKernels& tiles, const BackwardTiles& t, int64_t b, int64_t h,
                   const float* Q, const float* K, const float* V, const float* O, const float* lse, const float* dO,
                   float* dQ, float* dK, float* dV) {
  const int64_t D = p.D, Dp = padded_head_dim(p);
  const auto q = head_rows(Q, p.q_batch_stride, p.q_token_stride, p, b, h);
  const auto out = head_rows(O, p.o_batch_stride, p.o_token_stride, p, b, h);
  const auto dout = head_rows(dO, p.o_batch_stride, p.o_token_stride, p, b, h);
  for (int64_t i = 0; i < p.Tq; ++i) {
    // The rows are a token stride apart (often half a page), which the hardware prefetchers
    // follow poorly: request the lines a few rows ahead by hand.
    if (i + kRowsAhead < p.Tq)
      for (int64_t d = 0; d < D; d += kPad) {
        __builtin_prefetch(q[i + kRowsAhead] + d);
        __builtin_prefetch(dout[i + kRowsAhead] + d);
        __builtin_prefetch(out[i + kRowsAhead] + d);
      }
    pack_rows(q, i, 1, 1, D, Dp, t.q + i * Dp);
    pack_rows(dout, i, 1, 1, D, Dp, t.dout + i * Dp);
    const float* g = t.dout + i * Dp;
    const float* o = out[i];
    float delta = 0.0f;
#pragma omp simd reduction(+ : delta)
    for (int64_t d = 0; d < D; ++d) delta += g[d] * o[d];
    t.delta[i] = delta;
    if (p.bf16) { // after δ, which uses the fp32 dO
      round_to_bf16(t.q + i * Dp, D);
      round_to_bf16(t.dout + i * Dp, D);
    }
    const float l = lse[(b * p.H + h) * p.Tq + i];
    t.lse2[i] = l == kNegInf ? 0.0f : l * kLog2e; // a row that sees nothing is masked anyway
  }
  fill(t.dq, p.Tq * Dp, 0.0f);
  for (int64_t j0 = 0; j0 < p.Tk; j0 += kBlockK) backward_key_block(p, tiles, t, b, h, j0, K, V, dK, dV);
  unpack_rows(t.dq, Dp, p.Tq, p.scale, D, head_rows(dQ, p.q_batch_stride, p.q_token_stride, p, b, h), 0);
}

} // namespace

int64_t attention_scratch_bytes_per_thread(const AttentionParams& p, bool backward) {
  const int64_t Dp = padded_head_dim(p);
  const int64_t floats = backward ? BackwardTiles{}.layout(nullptr, Dp, p.Tq, p.dropout_p > 0.0f, p.bf16)
                                  : ForwardTiles{}.layout(nullptr, p.D, p.bf16);
  return floats * static_cast<int64_t>(sizeof(float));
}

void attention_forward(const AttentionParams& p, const float* Q, const float* K, const float* V, float* O, float* lse,
                       float* probs) {
  const TileKernels& tiles = attention_tiles::active_tiles();
  const int64_t query_blocks = (p.Tq + kBlockQ - 1) / kBlockQ, tasks = p.B * p.H * query_blocks;
#pragma omp parallel
  {
    const ForwardTiles t = thread_tiles<ForwardTiles>(p.D, p.bf16);
    // Causal tasks differ in cost (later query blocks see more keys): hand them out dynamically.
#pragma omp for schedule(dynamic)
    for (int64_t task = 0; task < tasks; ++task) {
      const int64_t bh = task / query_blocks, qb = task % query_blocks;
      forward_query_block(p, tiles, t, bh / p.H, bh % p.H, qb * kBlockQ, Q, K, V, O, lse, probs);
    }
  }
}

void attention_backward(const AttentionParams& p, const float* Q, const float* K, const float* V, const float* O,
                        const float* lse, const float* dO, float* dQ, float* dK, float* dV) {
  const TileKernels& tiles = attention_tiles::active_tiles();
#pragma omp parallel
  {
    const BackwardTiles t = thread_tiles<BackwardTiles>(padded_head_dim(p), p.Tq, p.dropout_p > 0.0f, p.bf16);
#pragma omp for schedule(dynamic)
    for (int64_t bh = 0; bh < p.B * p.H; ++bh)
      backward_head(p, tiles, t, bh / p.H, bh % p.H, Q, K, V, O, lse, dO, dQ, dK, dV);
  }
}

} // namespace pillars::cpu
