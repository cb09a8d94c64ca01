// Fused attention on the tensor cores (Precision::bf16, D ∈ {32, 64, 128}): FlashAttention-2's
// forward and backward (Dao 2023) written with the warp-level instruction
//     mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32     C (16×8, fp32) += A (16×16) · B (16×8)
// which runs on sm_80 and sm_90. Dispatch, the fp32 path and the δ kernel are in attention.cu.
//
// SHAPES (as in attention.cu): Q, O, dO, dQ (B, Tq, H, D); K, V, dK, dV (B, Tk, H, D); lse, δ, lse2
// (B, H, Tq) floats. T is float or bf16: a float input is rounded to bf16 when it is staged into
// shared memory, a bf16 input is copied (cp.async); outputs are written as T from fp32 registers.
//
// FRAGMENTS. In a warp, lane = 4g + t (g = lane / 4, t = lane % 4). The m16n8k16 operands are
//   A (16 × 16, row-major): a0 = A[g][2t, 2t+1], a1 = A[g+8][2t, 2t+1], a2 = A[g][2t+8, 2t+9], a3 = A[g+8][2t+8, 2t+9]
//   B (16 × 8, "col"):     b0 = B[2t, 2t+1][g], b1 = B[2t+8, 2t+9][g]
//   C (16 × 8, fp32):      c0, c1 = C[g][2t, 2t+1], c2, c3 = C[g+8][2t, 2t+1]
// ldmatrix.x4 loads four 8 × 8 bf16 matrices from shared memory in exactly these layouts: A and
// "Bᵀ stored row-major" (K for S = Q Kᵀ) without transposing, "B stored row-major" (V for P V)
// with .trans. And the C fragments of two adjacent 16 × 8 products are, element for element, the
// A fragment of a 16 × 16 operand: P (or dS) never leaves the registers between its two products.
// Shared-memory tiles hold rows of D bf16 padded by 8 elements (16 bytes), so the 8 row addresses
// of an ldmatrix fall on 8 different bank groups.
//
// FORWARD. One block of W warps per (b, h, 16·MT·W queries); each warp owns MT m-tiles of 16 query
// rows (MT = 2: every K and V fragment read from shared memory feeds 2·MT = 4 mma instructions, which
// is what lifts the kernel from shared-memory-bound to ~300 TFLOP/s). Key/value tiles of BK rows are
// double-buffered: while the warps compute tile n, cp.async fetches tile n + 1. Per tile (or per SUB
// keys of it) and warp:
//   S = Q Kᵀ                        (16·MT × SUB, fp32 accumulators)
//   mask (only on tiles that cross the causal diagonal, the key length or Tk)
//   online softmax in base 2 with the scale folded into one FMA: m′ = max(m, c·max_j S_ij),
//   c = scale·log2 e, P = 2^(c·S − m′), l′ = 2^(m − m′)·l + Σ_j P, Õ ← 2^(m − m′)·Õ
//   dropout: P ∘ Z (Philox, in registers; l keeps the un-dropped sum)
//   Õ += bf16(P) V                  (P straight from the S accumulators)
// Finally O = Õ / l and lse = ln 2 · (m + log2 l). Row statistics are per thread (each thread
// holds 2 rows per m-tile; the 4 threads of a row combine with 2 shuffles). A warp whose rows see
// no key of a tile (the causal diagonal) skips it. Query blocks run longest first. The tilings per
// D are at the end of the file (Tiling), with what they measured.
//
// BACKWARD. δ = rowsum(dO ∘ O) and lse2 = lse·log2 e come from attention.cu's δ kernel. Then two
// kernels, so that every gradient element has one writer and a fixed summation order (the result is
// deterministic, and no fp32 atomics or zero-filled accumulators are needed; the price is that S
// and dP are computed twice, 7 tile products per (query, key) tile pair instead of 5):
//   dK, dV: one block per (b, h, 16·W keys), warp w owning keys 16w..16w+15, looping over the
//           query tiles that see them (Q, dO double-buffered). The tiles are transposed — keys ×
//           queries — so that the products whose results leave through dK and dV take their A
//           operand from registers:
//             Sᵀ = K Qᵀ,  dPᵀ = V dOᵀ,  Pᵀ = 2^(c·Sᵀ − lse2),  dSᵀ = Pᵀ ∘ (dPᵀ∘Z − δ)
//             dV += bf16(Pᵀ∘Z) dO,  dK += bf16(dSᵀ) Q        (dK scaled by s at the end)
//   dQ:     one block per (b, h, 16·W queries), warp w owning 16 query rows, looping over visible
//           key tiles (K, V double-buffered): S = Q Kᵀ, dP = dO Vᵀ, dS = P ∘ (dP∘Z − δ),
//           dQ += bf16(dS) K (scaled by s at the end).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "kernels/cuda/attention_internal.h"
#include "kernels/cuda/attention_tensor_core_tiles.cuh"

namespace pillars::cuda::attention_detail {
namespace {

// ---- forward -------------------------------------------------------------------------------------------

// The forward's tiling: a block of W warps, each owning MT m-tiles (16·MT query rows; the m-tiles
// share every K and V fragment, which halves shared-memory traffic per mma at MT = 2), key tiles of
// BK rows in shared memory, processed SUB keys at a time (S = Q Kᵀ, softmax step, P V: fewer live
// registers for S when SUB < BK), Q's fragments in registers (QREGS) or re-read from shared memory.
template <int MT, int W, int BK, bool QREGS, int MIN_BLOCKS, int SUB = BK>
struct ForwardConfig {
  static constexpr int kMT = MT, kThreads = 32 * W, kBlockK = BK, kMinBlocks = MIN_BLOCKS, kSub = SUB;
  static constexpr int kBlockQ = 16 * MT * W;
  static constexpr bool kQInRegisters = QREGS;
  template <int D>
  static constexpr size_t smem() { // Q, 2 × (K, V)
    return size_t(kBlockQ + 4 * kBlockK) * Row<D>::LD * sizeof(bf16);
  }
};

// P ← P ∘ Z for this thread's elements of one m-tile (rows row0 and row0 + 8, keys j0 + 8·nt + 2t + {0, 1}).
template <int NT>
__device__ __forceinline__ void dropout_rows(const Problem& p, uint64_t seed, int bh, int row0, int j0, int t,
                                             float (&s)[NT][4]) {
#pragma unroll
  for (int r = 0; r < 2; ++r)
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      float z0, z1;
      dropout_multiplier_pair(p, seed, bh, row0 + 8 * r, j0 + 8 * nt + 2 * t, z0, z1);
      s[nt][2 * r] *= z0;
      s[nt][2 * r + 1] *= z1;
    }
}

// O = softmax(S) V and lse for one block of C::kBlockQ queries (grid: b·H + h, query block reversed).
// kDropout: whether p.dropout_p > 0 (a separate instantiation keeps Philox off the common path).
template <class T, int D, class C, bool kDropout>
__global__ void __launch_bounds__(C::kThreads, C::kMinBlocks)
    tc_forward_kernel(Problem p, const T* Q, const T* K, const T* V, T* O, float* lse) {
  constexpr int LD = Row<D>::LD, RB = Row<D>::kBytes, MT = C::kMT;
  constexpr int KS = D / 16;      // k-steps of S = Q Kᵀ
  constexpr int NT = C::kSub / 8; // n-tiles of S (one sub-tile of keys)
  constexpr int NO = D / 8;       // n-tiles of O
  constexpr uint32_t kBuf = C::kBlockK * RB;
  extern __shared__ uint4 smem_u4[];
  bf16* Qs = reinterpret_cast<bf16*>(smem_u4);
  bf16* Ks = Qs + C::kBlockQ * LD; // buffers 0, 1
  bf16* Vs = Ks + 2 * C::kBlockK * LD;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, t = lane % 4;
  const int bh = blockIdx.x, b = bh / p.H, h = bh % p.H;
  const int i0 = (gridDim.y - 1 - blockIdx.y) * C::kBlockQ;
  const int64_t stride = int64_t{p.H} * D;
  const int64_t q_base = head_row(p, b, p.Tq, h, 0), k_base = head_row(p, b, p.Tk, h, 0);
  const RowMask mask = row_mask(p, b);
  const int n_tiles = (mask.visible(min(i0 + C::kBlockQ, p.Tq) - 1) + C::kBlockK - 1) / C::kBlockK;
  const WarpRows<MT> w = warp_rows<MT>(mask, i0 + 16 * MT * warp, lane / 4, p.Tq);
  const uint64_t seed = kDropout ? dropout_seed(p) : 0;

  if (n_tiles > 0) {
    stage_rows<D, C::kBlockQ, C::kThreads>(Qs, Q, q_base, stride, i0, p.Tq);
    stage_rows<D, C::kBlockK, C::kThreads>(Ks, K, k_base, stride, 0, mask.limit);
    stage_rows<D, C::kBlockK, C::kThreads>(Vs, V, k_base, stride, 0, mask.limit);
    cp_async_commit();
  }
  const uint32_t q_lane = smem_u32(Qs + 16 * MT * warp * LD) + offset_a<RB>(lane);
  const uint32_t k_lane = smem_u32(Ks) + offset_bt<RB>(lane);
  const uint32_t v_lane = smem_u32(Vs) + offset_a<RB>(lane);

  float o[MT][NO][4] = {};
  float m[MT][2], l[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) m[mt][0] = m[mt][1] = -kInf, l[mt][0] = l[mt][1] = 0.0f;
  uint32_t qa[MT][KS][4];
  for (int n = 0; n < n_tiles; ++n) {
    cp_async_wait_all();
    __syncthreads(); // tile n is visible to all; every warp is done with tile n − 1's buffer
    if constexpr (C::kQInRegisters)
      if (n == 0)
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) load_a<KS>(qa[mt], q_lane + 16 * mt * RB);
    if (n + 1 < n_tiles) { // fetch tile n + 1 while computing tile n
      const int buf = (n + 1) & 1, j1 = (n + 1) * C::kBlockK;
      stage_rows<D, C::kBlockK, C::kThreads>(Ks + buf * C::kBlockK * LD, K, k_base, stride, j1, mask.limit);
      stage_rows<D, C::kBlockK, C::kThreads>(Vs + buf * C::kBlockK * LD, V, k_base, stride, j1, mask.limit);
      cp_async_commit();
    }
#pragma unroll
    for (int sub = 0; sub < C::kBlockK / C::kSub; ++sub) {
      const int j0 = n * C::kBlockK + sub * C::kSub;
      if (j0 >= w.keys) break; // none of this warp's rows sees a key from here on
      const uint32_t buf = (n & 1) * kBuf + sub * C::kSub * RB;
      float s[MT][NT][4] = {};
      if constexpr (C::kQInRegisters) // S = Q Kᵀ (unscaled)
        mma_abt<MT, NT, KS, RB>(s, qa, k_lane + buf);
      else
        mma_abt_smem<MT, NT, KS, RB>(s, q_lane, k_lane + buf);
      uint32_t pa[MT][NT / 2][4];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        if (j0 + C::kSub > w.full) mask_tile(s[mt], j0, t, w.vis[mt]);
        online_softmax(s[mt], m[mt], l[mt], o[mt], p.scale_log2);
        if constexpr (kDropout) dropout_rows(p, seed, bh, w.row(mt, 0), j0, t, s[mt]);
        to_a<NT / 2>(s[mt], pa[mt]);
      }
      mma_ab<MT, NO, NT / 2, RB>(o, pa, v_lane + buf); // Õ += P V
    }
  }

#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float sum = l[mt][r];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      const int i = w.row(mt, r);
      if (i >= p.Tq) continue;
      const float inv = sum > 0.0f ? 1.0f / sum : 0.0f; // a row that sees nothing: O = 0
      T* out = O + q_base + i * stride + 2 * t;
#pragma unroll
      for (int nt = 0; nt < NO; ++nt) store_pair(out + 8 * nt, o[mt][nt][2 * r] * inv, o[mt][nt][2 * r + 1] * inv);
      if (t == 0) lse[int64_t{bh} * p.Tq + i] = sum > 0.0f ? (m[mt][r] + log2f(sum)) * kLn2 : -kInf;
    }
}

// ---- backward: dK, dV -----------------------------------------------------------------------------------

// The dK, dV kernel's tiling: W warps of 16 keys each, query tiles of BQ rows.
template <int W, int BQ, int MIN_BLOCKS>
struct KeyValueConfig {
  static constexpr int kThreads = 32 * W, kBlockK = 16 * W, kBlockQ = BQ, kMinBlocks = MIN_BLOCKS;
  template <int D>
  static constexpr size_t smem() { // K, V, 2 × (Q, dO)
    return size_t(2 * kBlockK + 4 * kBlockQ) * Row<D>::LD * sizeof(bf16);
  }
};

// Turns the transposed tiles of one warp in place: st (Sᵀ, keys × queries) into Pᵀ ∘ Z and dpt
// ((dO Vᵀ)ᵀ) into dSᵀ = Pᵀ ∘ (dPᵀ∘Z − δ). Columns are queries i0 + 8·nt + 2t + (e & 1), rows keys
// key[e / 2]. full: every query of the tile sees every key of the warp (no mask needed).
template <int NT>
__device__ __forceinline__ void softmax_grad_transposed(const Problem& p, const RowMask& mask, uint64_t seed, int bh,
                                                        int i0, int t, const int (&key)[2], bool full,
                                                        const float* delta, const float* lse2, float (&st)[NT][4],
                                                        float (&dpt)[NT][4]) {
#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      const int i = i0 + 8 * nt + 2 * t + c;
      const int vis = full ? p.Tk : mask.visible(i); // 0 for i ≥ Tq
      const int64_t row = int64_t{bh} * p.Tq + i;
      const float l2 = vis > 0 ? lse2[row] : 0.0f, dl = vis > 0 ? delta[row] : 0.0f;
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int e = 2 * r + c;
        const float prob = key[r] < vis ? fast_exp2(fmaf(st[nt][e], p.scale_log2, -l2)) : 0.0f;
        float z = 1.0f;
        if (p.dropout_p > 0.0f && prob != 0.0f) z = dropout_multiplier(p, seed, bh, i, key[r]);
        st[nt][e] = prob * z;
        dpt[nt][e] = prob * (dpt[nt][e] * z - dl);
      }
    }
}

template <class T, int D, class F>
__global__ void __launch_bounds__(F::kThreads, F::kMinBlocks)
    tc_backward_kv_kernel(Problem p, const T* Q, const T* K, const T* V, const T* dO, const float* delta,
                          const float* lse2, T* dK, T* dV) {
  constexpr int LD = Row<D>::LD, RB = Row<D>::kBytes;
  constexpr int KS = D / 16;          // k-steps of Sᵀ = K Qᵀ
  constexpr int NT = F::kBlockQ / 8;  // n-tiles of Sᵀ (queries)
  constexpr int KQ = F::kBlockQ / 16; // k-steps of dV = Pᵀ dO (queries)
  constexpr int NO = D / 8;           // n-tiles of dK, dV
  constexpr uint32_t kBuf = F::kBlockQ * RB;
  extern __shared__ uint4 smem_u4[];
  bf16* Ks = reinterpret_cast<bf16*>(smem_u4);
  bf16* Vs = Ks + F::kBlockK * LD;
  bf16* Qs = Vs + F::kBlockK * LD; // buffers 0, 1
  bf16* dOs = Qs + 2 * F::kBlockQ * LD;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int bh = blockIdx.x, b = bh / p.H, h = bh % p.H;
  const int j0 = blockIdx.y * F::kBlockK, kw0 = j0 + 16 * warp; // the block's and the warp's first key
  const int key[2] = {kw0 + g, kw0 + g + 8};
  const int64_t stride = int64_t{p.H} * D;
  const int64_t q_base = head_row(p, b, p.Tq, h, 0), k_base = head_row(p, b, p.Tk, h, 0);
  const RowMask mask = row_mask(p, b);
  // No query sees a key ≥ limit; the causal mask hides key j0 from the rows before first_row_seeing.
  const int i_begin = j0 < mask.limit ? first_row_seeing(p, j0) / F::kBlockQ * F::kBlockQ : p.Tq;
  const int n_tiles = (p.Tq - i_begin + F::kBlockQ - 1) / F::kBlockQ;
  const uint64_t seed = p.dropout_p > 0.0f ? dropout_seed(p) : 0;

  if (n_tiles > 0) {
    stage_rows<D, F::kBlockK, F::kThreads>(Ks, K, k_base, stride, j0, mask.limit);
    stage_rows<D, F::kBlockK, F::kThreads>(Vs, V, k_base, stride, j0, mask.limit);
    stage_rows<D, F::kBlockQ, F::kThreads>(Qs, Q, q_base, stride, i_begin, p.Tq);
    stage_rows<D, F::kBlockQ, F::kThreads>(dOs, dO, q_base, stride, i_begin, p.Tq);
    cp_async_commit();
  }
  const uint32_t k_a = smem_u32(Ks + 16 * warp * LD) + offset_a<RB>(lane);
  const uint32_t v_a = smem_u32(Vs + 16 * warp * LD) + offset_a<RB>(lane);
  const uint32_t q_bt = smem_u32(Qs) + offset_bt<RB>(lane), do_bt = smem_u32(dOs) + offset_bt<RB>(lane);
  const uint32_t q_b = smem_u32(Qs) + offset_a<RB>(lane), do_b = smem_u32(dOs) + offset_a<RB>(lane);

  float dk[NO][4] = {}, dv[NO][4] = {};
  for (int n = 0; n < n_tiles; ++n) {
    cp_async_wait_all();
    __syncthreads();
    const int i0 = i_begin + n * F::kBlockQ;
    if (n + 1 < n_tiles) {
      const int buf = (n + 1) & 1;
      stage_rows<D, F::kBlockQ, F::kThreads>(Qs + buf * F::kBlockQ * LD, Q, q_base, stride, i0 + F::kBlockQ, p.Tq);
      stage_rows<D, F::kBlockQ, F::kThreads>(dOs + buf * F::kBlockQ * LD, dO, q_base, stride, i0 + F::kBlockQ, p.Tq);
      cp_async_commit();
    }
    // The tile's last query sees the most keys: if not the warp's first, no query sees any.
    if (mask.visible(min(i0 + F::kBlockQ, p.Tq) - 1) <= kw0) continue;
    const bool full = i0 + F::kBlockQ <= p.Tq && kw0 + 16 <= mask.visible(i0);
    const uint32_t buf = (n & 1) * kBuf;
    float st[NT][4] = {}, dpt[NT][4] = {};
    mma_abt_smem<1, NT, KS, RB>(one(st), k_a, q_bt + buf);   // Sᵀ = K Qᵀ
    mma_abt_smem<1, NT, KS, RB>(one(dpt), v_a, do_bt + buf); // (dO Vᵀ)ᵀ = V dOᵀ
    softmax_grad_transposed(p, mask, seed, bh, i0, t, key, full, delta, lse2, st, dpt);
    uint32_t a[KQ][4];
    to_a<KQ>(st, a);
    mma_ab<1, NO, KQ, RB>(one(dv), one(a), do_b + buf); // dV += (P∘Z)ᵀ dO
    to_a<KQ>(dpt, a);
    mma_ab<1, NO, KQ, RB>(one(dk), one(a), q_b + buf); // dK += dSᵀ Q
  }

#pragma unroll
  for (int r = 0; r < 2; ++r) {
    if (key[r] >= p.Tk) continue;
    const int64_t at = k_base + key[r] * stride + 2 * t;
#pragma unroll
    for (int nt = 0; nt < NO; ++nt) {
      store_pair(dK + at + 8 * nt, p.scale * dk[nt][2 * r], p.scale * dk[nt][2 * r + 1]);
      store_pair(dV + at + 8 * nt, dv[nt][2 * r], dv[nt][2 * r + 1]);
    }
  }
}

// ---- backward: dQ ------------------------------------------------------------------------------------------

// The dQ kernel's tiling: W warps of 16 queries each, key tiles of BK rows.
template <int W, int BK, int MIN_BLOCKS>
struct QueryConfig {
  static constexpr int kThreads = 32 * W, kBlockQ = 16 * W, kBlockK = BK, kMinBlocks = MIN_BLOCKS;
  template <int D>
  static constexpr size_t smem() { // Q, dO, 2 × (K, V)
    return size_t(2 * kBlockQ + 4 * kBlockK) * Row<D>::LD * sizeof(bf16);
  }
};

template <class T, int D, class F>
__global__ void __launch_bounds__(F::kThreads, F::kMinBlocks)
    tc_backward_q_kernel(Problem p, const T* Q, const T* K, const T* V, const T* dO, const float* delta,
                         const float* lse2, T* dQ) {
  constexpr int LD = Row<D>::LD, RB = Row<D>::kBytes;
  constexpr int KS = D / 16;          // k-steps of S = Q Kᵀ
  constexpr int NT = F::kBlockK / 8;  // n-tiles of S (keys)
  constexpr int KK = F::kBlockK / 16; // k-steps of dQ = dS K (keys)
  constexpr int NO = D / 8;           // n-tiles of dQ
  constexpr uint32_t kBuf = F::kBlockK * RB;
  extern __shared__ uint4 smem_u4[];
  bf16* Qs = reinterpret_cast<bf16*>(smem_u4);
  bf16* dOs = Qs + F::kBlockQ * LD;
  bf16* Ks = dOs + F::kBlockQ * LD; // buffers 0, 1
  bf16* Vs = Ks + 2 * F::kBlockK * LD;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int bh = blockIdx.x, b = bh / p.H, h = bh % p.H;
  const int i0 = (gridDim.y - 1 - blockIdx.y) * F::kBlockQ;
  const int64_t stride = int64_t{p.H} * D;
  const int64_t q_base = head_row(p, b, p.Tq, h, 0), k_base = head_row(p, b, p.Tk, h, 0);
  const RowMask mask = row_mask(p, b);
  const int n_tiles = (mask.visible(min(i0 + F::kBlockQ, p.Tq) - 1) + F::kBlockK - 1) / F::kBlockK;
  const WarpRows<1> w = warp_rows<1>(mask, i0 + 16 * warp, g, p.Tq);
  const uint64_t seed = p.dropout_p > 0.0f ? dropout_seed(p) : 0;
  float l2[2], dl[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int64_t row = int64_t{bh} * p.Tq + w.row(0, r);
    l2[r] = w.vis[0][r] > 0 ? lse2[row] : 0.0f;
    dl[r] = w.vis[0][r] > 0 ? delta[row] : 0.0f;
  }

  if (n_tiles > 0) {
    stage_rows<D, F::kBlockQ, F::kThreads>(Qs, Q, q_base, stride, i0, p.Tq);
    stage_rows<D, F::kBlockQ, F::kThreads>(dOs, dO, q_base, stride, i0, p.Tq);
    stage_rows<D, F::kBlockK, F::kThreads>(Ks, K, k_base, stride, 0, mask.limit);
    stage_rows<D, F::kBlockK, F::kThreads>(Vs, V, k_base, stride, 0, mask.limit);
    cp_async_commit();
  }
  const uint32_t q_a = smem_u32(Qs + 16 * warp * LD) + offset_a<RB>(lane);
  const uint32_t do_a = smem_u32(dOs + 16 * warp * LD) + offset_a<RB>(lane);
  const uint32_t k_bt = smem_u32(Ks) + offset_bt<RB>(lane), v_bt = smem_u32(Vs) + offset_bt<RB>(lane);
  const uint32_t k_b = smem_u32(Ks) + offset_a<RB>(lane);

  float dq[NO][4] = {};
  for (int n = 0; n < n_tiles; ++n) {
    cp_async_wait_all();
    __syncthreads();
    if (n + 1 < n_tiles) {
      const int buf = (n + 1) & 1, j1 = (n + 1) * F::kBlockK;
      stage_rows<D, F::kBlockK, F::kThreads>(Ks + buf * F::kBlockK * LD, K, k_base, stride, j1, mask.limit);
      stage_rows<D, F::kBlockK, F::kThreads>(Vs + buf * F::kBlockK * LD, V, k_base, stride, j1, mask.limit);
      cp_async_commit();
    }
    const int j0 = n * F::kBlockK;
    if (j0 >= w.keys) continue;
    const uint32_t buf = (n & 1) * kBuf;
    float s[NT][4] = {}, dp[NT][4] = {};
    mma_abt_smem<1, NT, KS, RB>(one(s), q_a, k_bt + buf);   // S = Q Kᵀ
    mma_abt_smem<1, NT, KS, RB>(one(dp), do_a, v_bt + buf); // dP̃ = dO Vᵀ
    const bool masked = j0 + F::kBlockK > w.full;
#pragma unroll
    for (int r = 0; r < 2; ++r)
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        const int j = j0 + 8 * nt + 2 * t;
        float z[2] = {1.0f, 1.0f};
        if (p.dropout_p > 0.0f) dropout_multiplier_pair(p, seed, bh, w.row(0, r), j, z[0], z[1]);
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          const int e = 2 * r + c;
          const float prob = !masked || j + c < w.vis[0][r] ? fast_exp2(fmaf(s[nt][e], p.scale_log2, -l2[r])) : 0.0f;
          s[nt][e] = prob * (dp[nt][e] * z[c] - dl[r]); // dS = P ∘ (dP∘Z − δ)
        }
      }
    uint32_t a[KK][4];
    to_a<KK>(s, a);
    mma_ab<1, NO, KK, RB>(one(dq), one(a), k_b + buf); // dQ += dS K
  }

#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int i = w.row(0, r);
    if (i >= p.Tq) continue;
    T* out = dQ + q_base + i * stride + 2 * t;
#pragma unroll
    for (int nt = 0; nt < NO; ++nt) store_pair(out + 8 * nt, p.scale * dq[nt][2 * r], p.scale * dq[nt][2 * r + 1]);
  }
}

// ---- launching ---------------------------------------------------------------------------------------------

unsigned tiles_of(int n, int tile) { return static_cast<unsigned>((n + tile - 1) / tile); }

// The tilings per head dimension, chosen by measurement on an H100 (bf16, B 4, H 16, T 4096; forward
// TFLOP/s without dropout, full / causal):
//   D = 32:  MT 2, W 4, BK 128 in steps of 64            197 / 193   (MT 1, W 8: 115)
//   D = 64:  MT 2, W 4, BK 64, Q in registers            284 / 274   (MT 1, W 8: 174)
//   D = 128: MT 2, W 4, BK 64 in steps of 32, Q re-read  299 / 294   (MT 1, W 8: 234; BK 64 in one
//            step: 289, and spills 40 bytes)
// With dropout, one m-tile per warp leaves room for Philox's registers (the forward is then bound
// by Philox: about 49 TFLOP/s at D = 64). The backward kernels: with bf16 tensors, 4 warps per block
// (two blocks per SM: 93 and 127 TFLOP/s at D = 64 and 128, counted as 2.5 forwards; 8 warps: 85,
// 113); with float tensors, whose staging loads are synchronous, 8 warps (62 and 74 against 50, 59).
template <class T, int D>
struct Tiling {
  static constexpr int kBackwardWarps = sizeof(T) == 2 ? 4 : 8;
  using forward = std::conditional_t<
      D == 32, ForwardConfig<2, 4, 128, true, 2, 64>,
      std::conditional_t<D == 64, ForwardConfig<2, 4, 64, true, 2>, ForwardConfig<2, 4, 64, false, 1, 32>>>;
  using forward_dropout = ForwardConfig<1, 8, 64, true, 1>;
  using key_value = KeyValueConfig<kBackwardWarps, D == 128 ? 32 : 64, 8 / kBackwardWarps>;
  using query = QueryConfig<kBackwardWarps, D == 128 ? 32 : 64, 8 / kBackwardWarps>;
};

template <class T, int D, class C = typename Tiling<T, D>::forward, class CD = typename Tiling<T, D>::forward_dropout>
void forward(const Problem& p, const T* Q, const T* K, const T* V, T* O, float* lse) {
  if (p.dropout_p > 0.0f)
    launch<tc_forward_kernel<T, D, CD, true>>(dim3(p.B * p.H, tiles_of(p.Tq, CD::kBlockQ)), CD::kThreads,
                                              CD::template smem<D>(), "attention_tc_forward_dropout", p, Q, K, V, O,
                                              lse);
  else
    launch<tc_forward_kernel<T, D, C, false>>(dim3(p.B * p.H, tiles_of(p.Tq, C::kBlockQ)), C::kThreads,
                                              C::template smem<D>(), "attention_tc_forward", p, Q, K, V, O, lse);
}

template <class T, int D, class KV = typename Tiling<T, D>::key_value, class QC = typename Tiling<T, D>::query>
void backward(const Problem& p, const T* Q, const T* K, const T* V, const T* dO, const float* delta, const float* lse2,
              T* dQ, T* dK, T* dV) {
  if (p.Tk > 0)
    launch<tc_backward_kv_kernel<T, D, KV>>(dim3(p.B * p.H, tiles_of(p.Tk, KV::kBlockK)), KV::kThreads,
                                            KV::template smem<D>(), "attention_tc_backward_kv", p, Q, K, V, dO, delta,
                                            lse2, dK, dV);
  if (p.Tq > 0)
    launch<tc_backward_q_kernel<T, D, QC>>(dim3(p.B * p.H, tiles_of(p.Tq, QC::kBlockQ)), QC::kThreads,
                                           QC::template smem<D>(), "attention_tc_backward_q", p, Q, K, V, dO, delta,
                                           lse2, dQ);
}

} // namespace

bool tensor_core_supports(const Problem& p, const void* const* tensors, int count) {
  if (p.D != 32 && p.D != 64 && p.D != 128) return false;
  if (!(p.scale > 0.0f)) return false; // the online softmax takes max(c·s) = c·max(s)
  for (int i = 0; i < count; ++i)
    if (reinterpret_cast<uintptr_t>(tensors[i]) % 16 != 0) return false;
  return true;
}

template <class T>
void tensor_core_forward(const Problem& p, const T* Q, const T* K, const T* V, T* O, float* lse) {
  switch (p.D) {
    case 32:
      forward<T, 32>(p, Q, K, V, O, lse);
      break;
    case 64:
      forward<T, 64>(p, Q, K, V, O, lse);
      break;
    default:
      forward<T, 128>(p, Q, K, V, O, lse);
      break;
  }
}

template <class T>
void tensor_core_backward(const Problem& p, const T* Q, const T* K, const T* V, const T* dO, const float* delta,
                          const float* lse2, T* dQ, T* dK, T* dV) {
  switch (p.D) {
    case 32:
      backward<T, 32>(p, Q, K, V, dO, delta, lse2, dQ, dK, dV);
      break;
    case 64:
      backward<T, 64>(p, Q, K, V, dO, delta, lse2, dQ, dK, dV);
      break;
    default:
      backward<T, 128>(p, Q, K, V, dO, delta, lse2, dQ, dK, dV);
      break;
  }
}

template void tensor_core_forward<float>(const Problem&, const float*, const float*, const float*, float*, float*);
template void tensor_core_forward<bf16>(const Problem&, const bf16*, const bf16*, const bf16*, bf16*, float*);
template void tensor_core_backward<float>(const Problem&, const float*, const float*, const float*, const float*,
                                          const float*, const float*, float*, float*, float*);
template void tensor_core_backward<bf16>(const Problem&, const bf16*, const bf16*, const bf16*, const bf16*,
                                         const float*, const float*, bf16*, bf16*, bf16*);

} // namespace pillars::cuda::attention_detail
