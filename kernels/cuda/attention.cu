// Fused attention on the GPU: dispatch, the fp32 (SIMT) path and the probabilities output, behind
// the plain-pointer API of attention.h. The bf16 tensor-core kernels are in
// attention_tensor_core.cu; the engine's op adapters are in engine/ops/cuda/attention.cu.
//
// SHAPES (row-major, contiguous; T is float or __nv_bfloat16, lse and the workspace are float):
//   Q, O, dO, dQ : (B, Tq, H, D)      element (b, i, h, d) at ((b·Tq + i)·H + h)·D + d
//   K, V, dK, dV : (B, Tk, H, D)
//   lse          : (B, H, Tq)         natural-log log-sum-exp of each row's masked, scaled logits
//   probs        : (B, H, Tq, Tk)     optional: the softmax probabilities before dropout
//   workspace    : δ (B, H, Tq) and lse·log2 e (B, H, Tq), written by the backward's first kernel
//
// THE MATH, per (b, h), with s the scale and Z_ij ∈ {0, 1/(1−p)} the dropout multipliers:
//   S = s · Q Kᵀ (masked: −∞),  P = softmax(S) row-wise,  O = (P ∘ Z) V,  lse_i = log Σ_j exp(S_ij)
//   δ_i = Σ_d dO_id O_id,  dV = (P∘Z)ᵀ dO,  dP = (dO Vᵀ) ∘ Z,  dS = P ∘ (dP − δ),
//   dQ = s · dS K,  dK = s · dSᵀ Q.
// Masks are prefixes of the key axis (attention_internal.h, RowMask): tiles past a row block's last
// visible key are never visited; a row that sees nothing gets O = 0, lse = −∞ and zero gradients.
//
// DISPATCH. Precision::bf16 runs the tensor-core kernels (forward and backward, dropout and probs
// included) when D ∈ {32, 64, 128}, the scale is positive and every tensor is 16-byte aligned
// (tensor_core_supports); anything else, and Precision::fp32, runs the fp32 path below, which takes
// any D ≤ 128 (larger D throws). On a Hopper GPU with the Hopper forward switched on
// (set_hopper_forward, attention_hopper*.cu) a bf16 forward with D = 64 or 128 and no dropout runs there. Measured on an H100 (B 4, H 16, T 4096 — 2048 for fp32 —, D 64,
// no dropout): tensor cores with bf16 tensors 282 TFLOP/s forward, 94 backward (counted as 2.5
// forwards); with float tensors 106 and 62 (their staging is synchronous); fp32 path 23 and 19.
//
// THE FP32 PATH. Blocks of 256 threads work on 64 × 64 tiles in shared memory, all in fp32 FMAs.
// Thread (ty, tx) = (tid / 16, tid % 16) owns tile rows 4·ty + r (r < 4) and the strided columns
// tx + 16·c, so the 16 threads sharing a row are one half-warp: row reductions are 4 shuffles,
// and a half-warp's shared-memory reads fall on distinct banks. Head dimensions are padded to a
// bucket DP ∈ {16, 32, 64, 128} with zeros (the padding adds nothing to any dot product).
//   forward   one block per (b, h, 64 queries): for each visible 64-key tile, S = Q Kᵀ, the online
//             softmax (running max m and sum l in log2 units, rescale by α = 2^(m − m′)), P∘Z to
//             shared memory, Õ += (P∘Z) V; at the end O = Õ / l and lse = ln 2 · (m + log2 l).
//   δ         one warp per row: δ_i = Σ_d dO∘O, and lse in log2 units for the two kernels below.
//   dK, dV    one block per (b, h, 64 keys), looping over the query tiles that see them: Sᵀ and
//             dPᵀ recomputed, P = 2^(s·log2e·Sᵀ − lse2), dV += (P∘Z)ᵀ dO, dK += dSᵀ Q.
//   dQ        one block per (b, h, 64 queries), looping over visible key tiles: dQ += dS K.
// dQ has its own kernel (recomputing S and dP, 7 tile products instead of 5) so that every
// gradient element is written by exactly one thread, in a fixed order: the result is
// deterministic and needs no atomics or zero-filled accumulator.
//
// PROBS. When asked for, a separate kernel writes P = 2^(s·log2e·S − lse·log2e) per (64 × 64) tile
// from Q, K and the saved lse (zeros where masked), with Q, K rounded to bf16 when the forward ran
// on the tensor cores, so that P is the softmax that forward used.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "base/error.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda/attention_internal.h"
#include "runtime/cuda_runtime.h"

namespace pillars::cuda {
namespace attention_detail {
namespace {

constexpr int kTile = 64;     // queries and keys per tile
constexpr int kThreads = 256; // 16 × 16 threads, each owning a 4 × 4 piece of a 64 × 64 tile
constexpr int kTS = 68;       // row stride of the (64 × 64) P / dS tile (float4-aligned rows)
constexpr float kInf = std::numeric_limits<float>::infinity();

// Tiles of 64 rows × DP floats; rows are DP + 4 floats apart, which keeps them 16-byte aligned and
// puts 8 consecutive rows' float4s on 8 different bank groups.
template <int DP>
struct SimtLayout {
  static constexpr int DS = DP + 4;
  static constexpr int kTileFloats = kTile * DS;
  static constexpr int kCols = DP / 16; // output columns per thread: tx + 16·c
};

// Blocks per SM that each kernel's register allocation must allow (__launch_bounds__): two blocks
// (≤ 128 registers per thread) where that costs no spills, else one (DP = 128 tiles take more than
// half of an SM's shared memory anyway). Read off ptxas's report for sm_80 and sm_90a. One
// exception: the dQ kernel at DP = 64 spills 12 (sm_90a) to 16 (sm_80) bytes at two blocks, and is
// still faster so (H100, T 2048: backward 19.2 TFLOP/s against 16.3 at one block without spills).
constexpr int forward_min_blocks(int DP) { return DP == 32 || DP == 64 ? 2 : 1; }
constexpr int backward_kv_min_blocks(int DP) { return DP == 128 ? 1 : 2; }
constexpr int backward_q_min_blocks(int DP) { return DP == 128 ? 1 : 2; }

// ---- tile building blocks ------------------------------------------------------------------------

// tile (64 × DS) ← rows [row0, row0 + 64) of head (b, h) of X (B, rows, H, D); rows ≥ valid (≤ rows) and
// columns ≥ D are zero and never read. Keys and values pass valid = the batch row's key limit, so
// whatever the padding slots hold (a recycled buffer's NaN) cannot reach a product: 0 · NaN is NaN
// even where the mask zeroes the probability. kRound rounds every value to bf16 (the probabilities
// of a tensor-core forward).
template <int DP, bool kRound = false, class T>
__device__ void load_tile(float* tile, const T* X, const Problem& p, int b, int rows, int h, int row0, int valid) {
  using L = SimtLayout<DP>;
  for (int e = threadIdx.x; e < kTile * DP; e += kThreads) {
    const int r = e / DP, d = e % DP;
    float v = 0.0f;
    if (row0 + r < valid && d < p.D) v = to_float(X[head_row(p, b, rows, h, row0 + r) + d]);
    if (kRound) v = __bfloat162float(__float2bfloat16_rn(v));
    tile[r * L::DS + d] = v;
  }
}

// acc[r][c] = Σ_d A[4·ty + r][d] · B[tx + 16·c][d]: a (64 × 64) tile of A Bᵀ, 4 × 4 per thread.
template <int DP>
__device__ __forceinline__ void tile_dot(const float* A, const float* Bm, int ty, int tx, float (&acc)[4][4]) {
  using L = SimtLayout<DP>;
#pragma unroll 4
  for (int d = 0; d < DP; d += 4) {
    float4 a[4], bv[4];
#pragma unroll
    for (int r = 0; r < 4; ++r) a[r] = *reinterpret_cast<const float4*>(A + (4 * ty + r) * L::DS + d);
#pragma unroll
    for (int c = 0; c < 4; ++c) bv[c] = *reinterpret_cast<const float4*>(Bm + (tx + 16 * c) * L::DS + d);
#pragma unroll
    for (int r = 0; r < 4; ++r)
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        acc[r][c] = fmaf(a[r].x, bv[c].x, acc[r][c]);
        acc[r][c] = fmaf(a[r].y, bv[c].y, acc[r][c]);
        acc[r][c] = fmaf(a[r].z, bv[c].z, acc[r][c]);
        acc[r][c] = fmaf(a[r].w, bv[c].w, acc[r][c]);
      }
  }
}

// acc[r][c] += Σ_j P[4·ty + r][j] · M[j][tx + 16·c]: (64 × 64) P (row stride kTS) times (64 × DP) M.
template <int DP>
__device__ __forceinline__ void tile_mul_acc(const float* P, const float* M, int ty, int tx,
                                             float (&acc)[4][SimtLayout<DP>::kCols]) {
  using L = SimtLayout<DP>;
#pragma unroll 2
  for (int j = 0; j < kTile; j += 4) {
    float4 pr[4];
#pragma unroll
    for (int r = 0; r < 4; ++r) pr[r] = *reinterpret_cast<const float4*>(P + (4 * ty + r) * kTS + j);
#pragma unroll
    for (int c = 0; c < L::kCols; ++c) {
      const float m0 = M[(j + 0) * L::DS + tx + 16 * c], m1 = M[(j + 1) * L::DS + tx + 16 * c];
      const float m2 = M[(j + 2) * L::DS + tx + 16 * c], m3 = M[(j + 3) * L::DS + tx + 16 * c];
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        acc[r][c] = fmaf(pr[r].x, m0, acc[r][c]);
        acc[r][c] = fmaf(pr[r].y, m1, acc[r][c]);
        acc[r][c] = fmaf(pr[r].z, m2, acc[r][c]);
        acc[r][c] = fmaf(pr[r].w, m3, acc[r][c]);
      }
    }
  }
}

// Reductions over the 16 threads of a half-warp (the threads sharing a tile row).
__device__ __forceinline__ float half_warp_max(float x) {
#pragma unroll
  for (int o = 8; o > 0; o /= 2) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
  return x;
}
__device__ __forceinline__ float half_warp_sum(float x) {
#pragma unroll
  for (int o = 8; o > 0; o /= 2) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}

// Rows [row0, row0 + 64) of head (b, h) of Y ← alpha · acc (thread rows 4·ty + r, columns tx + 16·c).
template <int DP, class T>
__device__ void store_rows(T* Y, const Problem& p, int b, int rows, int h, int row0, int ty, int tx, float alpha,
                           const float (&acc)[4][SimtLayout<DP>::kCols]) {
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int i = row0 + 4 * ty + r;
    if (i >= rows) continue;
    T* y = Y + head_row(p, b, rows, h, i);
#pragma unroll
    for (int c = 0; c < SimtLayout<DP>::kCols; ++c)
      if (tx + 16 * c < p.D) y[tx + 16 * c] = from_float<T>(alpha * acc[r][c]);
  }
}

// ---- forward ---------------------------------------------------------------------------------------

// One block per (b·H + h = blockIdx.x, query tile); query tiles in reverse order, so that the
// longest causal blocks start first.
template <int DP, class T>
__global__ void __launch_bounds__(kThreads, forward_min_blocks(DP))
    simt_forward_kernel(Problem p, const T* Q, const T* K, const T* V, T* O, float* lse) {
  using L = SimtLayout<DP>;
  extern __shared__ float4 smem_f4[];
  float* Qs = reinterpret_cast<float*>(smem_f4);
  float* Ks = Qs + L::kTileFloats;
  float* Vs = Ks + L::kTileFloats;
  float* Ps = Vs + L::kTileFloats; // (64 × kTS): P ∘ Z of the current key tile
  const int bh = blockIdx.x, b = bh / p.H, h = bh % p.H;
  const int i0 = (gridDim.y - 1 - blockIdx.y) * kTile;
  const int ty = threadIdx.x / 16, tx = threadIdx.x % 16;
  const RowMask mask = row_mask(p, b);
  const int keys = mask.visible(min(i0 + kTile, p.Tq) - 1); // the block's rows see keys [0, keys)
  const uint64_t seed = p.dropout_p > 0.0f ? dropout_seed(p) : 0;

  int vis[4];
  float m[4], l[4], acc[4][L::kCols];
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    vis[r] = mask.visible(i0 + 4 * ty + r);
    m[r] = -kInf; // running max of the row's logits, log2 units
    l[r] = 0.0f;  // this thread's part of the running sum Σ 2^(s − m)
#pragma unroll
    for (int c = 0; c < L::kCols; ++c) acc[r][c] = 0.0f;
  }
  load_tile<DP>(Qs, Q, p, b, p.Tq, h, i0, p.Tq);

  for (int j0 = 0; j0 < keys; j0 += kTile) {
    __syncthreads(); // the previous tile's readers are done with Ks, Vs, Ps
    load_tile<DP>(Ks, K, p, b, p.Tk, h, j0, mask.limit);
    load_tile<DP>(Vs, V, p, b, p.Tk, h, j0, mask.limit);
    __syncthreads();
    float s[4][4] = {};
    tile_dot<DP>(Qs, Ks, ty, tx, s);
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      // The online-softmax step of row r: new max m′, rescale factor α = 2^(m − m′), P = 2^(s − m′).
      float mx = -kInf;
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int j = j0 + tx + 16 * c;
        s[r][c] = j < vis[r] ? s[r][c] * p.scale_log2 : -kInf;
        mx = fmaxf(mx, s[r][c]);
      }
      const float m_new = fmaxf(m[r], half_warp_max(mx));
      const float m_use = m_new == -kInf ? 0.0f : m_new; // a row with nothing visible yet: P = 0, no NaN
      const float alpha = exp2f(m[r] - m_use);
      m[r] = m_new;
      l[r] *= alpha;
#pragma unroll
      for (int c = 0; c < L::kCols; ++c) acc[r][c] *= alpha;
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        float pr = exp2f(s[r][c] - m_use);
        l[r] += pr; // the statistics use the un-dropped probabilities
        if (p.dropout_p > 0.0f && pr != 0.0f) pr *= dropout_multiplier(p, seed, bh, i0 + 4 * ty + r, j0 + tx + 16 * c);
        Ps[(4 * ty + r) * kTS + tx + 16 * c] = pr;
      }
    }
    __syncthreads();
    tile_mul_acc<DP>(Ps, Vs, ty, tx, acc); // Õ += (P∘Z) V
  }

#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const float sum = half_warp_sum(l[r]);
    const int i = i0 + 4 * ty + r;
    if (i < p.Tq && tx == 0) lse[static_cast<int64_t>(bh) * p.Tq + i] = sum > 0.0f ? (m[r] + log2f(sum)) * kLn2 : -kInf;
    l[r] = sum > 0.0f ? 1.0f / sum : 0.0f; // a row that sees nothing: O = 0
#pragma unroll
    for (int c = 0; c < L::kCols; ++c) acc[r][c] *= l[r];
  }
  store_rows<DP>(O, p, b, p.Tq, h, i0, ty, tx, 1.0f, acc);
}

// ---- probabilities ---------------------------------------------------------------------------------

// probs (B, H, Tq, Tk) for one (64 × 64) tile: P_ij = 2^(s·log2e · q_i·k_j − lse_i·log2e) where key j
// is visible to row i, else 0. Grid: (b·H + h, query tile, key tile).
template <int DP, bool kRound, class T>
__global__ void __launch_bounds__(kThreads)
    probs_kernel(Problem p, const T* Q, const T* K, const float* lse, float* probs) {
  using L = SimtLayout<DP>;
  extern __shared__ float4 smem_f4[];
  float* Qs = reinterpret_cast<float*>(smem_f4);
  float* Ks = Qs + L::kTileFloats;
  const int bh = blockIdx.x, b = bh / p.H, h = bh % p.H;
  const int i0 = blockIdx.y * kTile, j0 = blockIdx.z * kTile;
  const int ty = threadIdx.x / 16, tx = threadIdx.x % 16;
  const RowMask mask = row_mask(p, b);
  float s[4][4] = {};
  if (j0 < mask.visible(min(i0 + kTile, p.Tq) - 1)) { // block-uniform: some key of the tile is visible
    load_tile<DP, kRound>(Qs, Q, p, b, p.Tq, h, i0, p.Tq);
    load_tile<DP, kRound>(Ks, K, p, b, p.Tk, h, j0, mask.limit);
    __syncthreads();
    tile_dot<DP>(Qs, Ks, ty, tx, s);
  }
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int i = i0 + 4 * ty + r;
    if (i >= p.Tq) continue;
    const int vis = mask.visible(i);
    const int64_t row = static_cast<int64_t>(bh) * p.Tq + i;
    const float lse2 = vis > 0 ? lse[row] * kLog2e : 0.0f;
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const int j = j0 + tx + 16 * c;
      if (j < p.Tk) probs[row * p.Tk + j] = j < vis ? exp2f(s[r][c] * p.scale_log2 - lse2) : 0.0f;
    }
  }
}

// ---- backward ---------------------------------------------------------------------------------------

// δ (B, H, Tq) = rowsum(dO ∘ O) and lse2 = lse · log2 e (0 for a row that sees nothing: its
// logits are all masked, and 0 keeps −∞ − lse2 from becoming NaN). One warp per (b, i, h) row.
template <class T>
__global__ void delta_kernel(Problem p, const T* O, const T* dO, const float* lse, float* delta, float* lse2) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32; // (b, i, h)
  const int lane = threadIdx.x % 32;
  if (row >= static_cast<int64_t>(p.B) * p.Tq * p.H) return;
  const int h = static_cast<int>(row % p.H);
  const int i = static_cast<int>((row / p.H) % p.Tq);
  const int b = static_cast<int>(row / (static_cast<int64_t>(p.H) * p.Tq));
  float sum = 0.0f;
  for (int d = lane; d < p.D; d += 32) sum += to_float(dO[row * p.D + d]) * to_float(O[row * p.D + d]);
#pragma unroll
  for (int o = 16; o > 0; o /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  if (lane == 0) {
    const int64_t out = (static_cast<int64_t>(b) * p.H + h) * p.Tq + i;
    delta[out] = sum;
    lse2[out] = lse[out] == -kInf ? 0.0f : lse[out] * kLog2e;
  }
}

// The softmax gradient of one (64 × 64) tile element, from its logit s, dO·v (dpv), lse2 and δ of
// its query row; visible: whether the key is visible to the query. Returns dS; *pz ← P ∘ Z.
__device__ __forceinline__ float softmax_grad(const Problem& p, uint64_t seed, int bh, int i, int j, bool visible,
                                              float s, float dpv, float lse2, float delta, float* pz) {
  const float prob = visible ? exp2f(s * p.scale_log2 - lse2) : 0.0f;
  float z = 1.0f;
  if (p.dropout_p > 0.0f && prob != 0.0f) z = dropout_multiplier(p, seed, bh, i, j);
  *pz = prob * z;
  return prob * (dpv * z - delta); // dS = P ∘ (dP∘Z − δ)
}

// dK, dV of key tile [j0, j0 + 64) of head (b, h) (grid: b·H + h, key tile), over every query
// tile that sees it. Tiles are transposed (keys × queries) so that the thread owning key row
// 4·ty + r of Sᵀ also owns that row of dK and dV.
template <int DP, class T>
__global__ void __launch_bounds__(kThreads, backward_kv_min_blocks(DP))
    simt_backward_kv_kernel(Problem p, const T* Q, const T* K, const T* V, const T* dO, const float* delta,
                            const float* lse2, T* dK, T* dV) {
  using L = SimtLayout<DP>;
  extern __shared__ float4 smem_f4[];
  float* Ks = reinterpret_cast<float*>(smem_f4);
  float* Vs = Ks + L::kTileFloats;
  float* Qs = Vs + L::kTileFloats;
  float* dOs = Qs + L::kTileFloats;
  float* Ts = dOs + L::kTileFloats; // (64 keys × kTS queries): P∘Z, then dS
  const int bh = blockIdx.x, b = bh / p.H, h = bh % p.H;
  const int j0 = blockIdx.y * kTile;
  const int ty = threadIdx.x / 16, tx = threadIdx.x % 16;
  const RowMask mask = row_mask(p, b);
  const uint64_t seed = p.dropout_p > 0.0f ? dropout_seed(p) : 0;
  float dk[4][L::kCols] = {}, dv[4][L::kCols] = {};
  load_tile<DP>(Ks, K, p, b, p.Tk, h, j0, mask.limit);
  load_tile<DP>(Vs, V, p, b, p.Tk, h, j0, mask.limit);
  // No query sees a key ≥ limit; the causal mask hides key j0 from the rows before first_row_seeing.
  const int i_begin = j0 < mask.limit ? first_row_seeing(p, j0) / kTile * kTile : p.Tq;

  for (int i0 = i_begin; i0 < p.Tq; i0 += kTile) {
    __syncthreads(); // the previous tile's readers are done with Qs, dOs, Ts
    load_tile<DP>(Qs, Q, p, b, p.Tq, h, i0, p.Tq);
    load_tile<DP>(dOs, dO, p, b, p.Tq, h, i0, p.Tq);
    __syncthreads();
    float st[4][4] = {}, dpt[4][4] = {}, ds[4][4];
    tile_dot<DP>(Ks, Qs, ty, tx, st);   // Sᵀ / s  (keys × queries)
    tile_dot<DP>(Vs, dOs, ty, tx, dpt); // (dO Vᵀ)ᵀ
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const int i = i0 + tx + 16 * c;
      const int vis = mask.visible(i); // 0 for i ≥ Tq
      const int64_t row = static_cast<int64_t>(bh) * p.Tq + i;
      const float l2 = vis > 0 ? lse2[row] : 0.0f, dl = vis > 0 ? delta[row] : 0.0f;
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const int j = j0 + 4 * ty + r;
        float pz;
        ds[r][c] = softmax_grad(p, seed, bh, i, j, j < vis, st[r][c], dpt[r][c], l2, dl, &pz);
        Ts[(4 * ty + r) * kTS + tx + 16 * c] = pz;
      }
    }
    __syncthreads();
    tile_mul_acc<DP>(Ts, dOs, ty, tx, dv); // dV += (P∘Z)ᵀ dO
    __syncthreads();
#pragma unroll
    for (int r = 0; r < 4; ++r)
#pragma unroll
      for (int c = 0; c < 4; ++c) Ts[(4 * ty + r) * kTS + tx + 16 * c] = ds[r][c];
    __syncthreads();
    tile_mul_acc<DP>(Ts, Qs, ty, tx, dk); // dK += dSᵀ Q  (scaled on the way out)
  }
  store_rows<DP>(dK, p, b, p.Tk, h, j0, ty, tx, p.scale, dk);
  store_rows<DP>(dV, p, b, p.Tk, h, j0, ty, tx, 1.0f, dv);
}

// dQ of query tile [i0, i0 + 64) of head (b, h) (grid: b·H + h, query tile, reversed), over every
// visible key tile: S and dP recomputed, dQ += dS K.
template <int DP, class T>
__global__ void __launch_bounds__(kThreads, backward_q_min_blocks(DP))
    simt_backward_q_kernel(Problem p, const T* Q, const T* K, const T* V, const T* dO, const float* delta,
                           const float* lse2, T* dQ) {
  using L = SimtLayout<DP>;
  extern __shared__ float4 smem_f4[];
  float* Qs = reinterpret_cast<float*>(smem_f4);
  float* dOs = Qs + L::kTileFloats;
  float* Ks = dOs + L::kTileFloats;
  float* Vs = Ks + L::kTileFloats;
  float* Ts = Vs + L::kTileFloats; // (64 queries × kTS keys): dS
  const int bh = blockIdx.x, b = bh / p.H, h = bh % p.H;
  const int i0 = (gridDim.y - 1 - blockIdx.y) * kTile;
  const int ty = threadIdx.x / 16, tx = threadIdx.x % 16;
  const RowMask mask = row_mask(p, b);
  const int keys = mask.visible(min(i0 + kTile, p.Tq) - 1);
  const uint64_t seed = p.dropout_p > 0.0f ? dropout_seed(p) : 0;
  int vis[4];
  float l2[4], dl[4], dq[4][L::kCols] = {};
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int i = i0 + 4 * ty + r;
    vis[r] = mask.visible(i);
    const int64_t row = static_cast<int64_t>(bh) * p.Tq + i;
    l2[r] = vis[r] > 0 ? lse2[row] : 0.0f;
    dl[r] = vis[r] > 0 ? delta[row] : 0.0f;
  }
  load_tile<DP>(Qs, Q, p, b, p.Tq, h, i0, p.Tq);
  load_tile<DP>(dOs, dO, p, b, p.Tq, h, i0, p.Tq);

  for (int j0 = 0; j0 < keys; j0 += kTile) {
    __syncthreads();
    load_tile<DP>(Ks, K, p, b, p.Tk, h, j0, mask.limit);
    load_tile<DP>(Vs, V, p, b, p.Tk, h, j0, mask.limit);
    __syncthreads();
    float s[4][4] = {}, dp[4][4] = {};
    tile_dot<DP>(Qs, Ks, ty, tx, s);
    tile_dot<DP>(dOs, Vs, ty, tx, dp);
#pragma unroll
    for (int r = 0; r < 4; ++r)
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int i = i0 + 4 * ty + r, j = j0 + tx + 16 * c;
        float pz;
        Ts[(4 * ty + r) * kTS + tx + 16 * c] =
            softmax_grad(p, seed, bh, i, j, j < vis[r], s[r][c], dp[r][c], l2[r], dl[r], &pz);
      }
    __syncthreads();
    tile_mul_acc<DP>(Ts, Ks, ty, tx, dq); // dQ += dS K  (scaled on the way out)
  }
  store_rows<DP>(dQ, p, b, p.Tq, h, i0, ty, tx, p.scale, dq);
}

// ---- launching ---------------------------------------------------------------------------------------

int64_t tiles(int64_t n, int64_t tile) { return (n + tile - 1) / tile; }

// The smallest head-dimension bucket holding D.
int bucket(int D) { return D <= 16 ? 16 : D <= 32 ? 32 : D <= 64 ? 64 : 128; }

template <int DP, class T>
void simt_forward(const Problem& p, const T* Q, const T* K, const T* V, T* O, float* lse) {
  const size_t smem = (3 * SimtLayout<DP>::kTileFloats + kTile * kTS) * sizeof(float);
  launch<simt_forward_kernel<DP, T>>(dim3(p.B * p.H, tiles(p.Tq, kTile)), kThreads, smem, "attention_simt_forward", p,
                                     Q, K, V, O, lse);
}

template <int DP, class T>
void simt_backward(const Problem& p, const T* Q, const T* K, const T* V, const T* dO, const float* delta,
                   const float* lse2, T* dQ, T* dK, T* dV) {
  const size_t smem = (4 * SimtLayout<DP>::kTileFloats + kTile * kTS) * sizeof(float);
  if (p.Tk > 0)
    launch<simt_backward_kv_kernel<DP, T>>(dim3(p.B * p.H, tiles(p.Tk, kTile)), kThreads, smem,
                                           "attention_simt_backward_kv", p, Q, K, V, dO, delta, lse2, dK, dV);
  if (p.Tq > 0)
    launch<simt_backward_q_kernel<DP, T>>(dim3(p.B * p.H, tiles(p.Tq, kTile)), kThreads, smem,
                                          "attention_simt_backward_q", p, Q, K, V, dO, delta, lse2, dQ);
}

template <int DP, bool kRound, class T>
void launch_probs(const Problem& p, const T* Q, const T* K, const float* lse, float* out) {
  if (p.Tk == 0) return;
  const size_t smem = 2 * SimtLayout<DP>::kTileFloats * sizeof(float);
  launch<probs_kernel<DP, kRound, T>>(dim3(p.B * p.H, tiles(p.Tq, kTile), tiles(p.Tk, kTile)), kThreads, smem,
                                      "attention_probs", p, Q, K, lse, out);
}

// Runs CALL (an expression naming DP) with DP the head-dimension bucket of D.
#define PILLARS_ATTENTION_BY_BUCKET(D, CALL) \
  do {                                       \
    switch (bucket(D)) {                     \
      case 16: {                             \
        constexpr int DP = 16;               \
        CALL;                                \
      } break;                               \
      case 32: {                             \
        constexpr int DP = 32;               \
        CALL;                                \
      } break;                               \
      case 64: {                             \
        constexpr int DP = 64;               \
        CALL;                                \
      } break;                               \
      default: {                             \
        constexpr int DP = 128;              \
        CALL;                                \
      } break;                               \
    }                                        \
  } while (0)

int checked_int(int64_t x, const char* what) {
  PILLARS_CHECK(x >= 0 && x <= std::numeric_limits<int32_t>::max(), "attention (CUDA): ", what, " = ", x,
                " is out of range");
  return static_cast<int>(x);
}

Problem make_problem(const AttentionArgs& a) {
  PILLARS_CHECK(a.D >= 1 && a.D <= 128, "attention (CUDA): head dimension D = ", a.D, " is not in [1, 128]");
  PILLARS_CHECK(a.dropout_p >= 0.0f && a.dropout_p < 1.0f, "attention (CUDA): dropout ", a.dropout_p,
                " is not in [0, 1)");
  Problem p;
  p.B = checked_int(a.B, "B");
  p.H = checked_int(a.H, "H");
  p.Tq = checked_int(a.Tq, "Tq");
  p.Tk = checked_int(a.Tk, "Tk");
  p.D = static_cast<int>(a.D);
  checked_int(a.B * a.H, "B·H");
  PILLARS_CHECK(tiles(a.Tq, kTile) <= 65535 && tiles(a.Tk, kTile) <= 65535, "attention (CUDA): sequence too long (Tq ",
                a.Tq, ", Tk ", a.Tk, ")");
  p.scale = a.scale;
  p.scale_log2 = a.scale * kLog2e;
  p.causal = a.causal;
  p.key_lengths = a.key_lengths;
  p.dropout_p = a.dropout_p;
  p.keep_scale = 1.0f / (1.0f - a.dropout_p);
  p.seed = a.seed;
  p.rng_offset = a.rng_offset;
  p.run_seed = a.run_seed;
  return p;
}

size_t round_up_rows(const Problem& p) { return static_cast<size_t>(tiles(int64_t{p.B} * p.H * p.Tq, 64) * 64); }

} // namespace
} // namespace attention_detail

using namespace attention_detail;

// ---- the plain-pointer API -------------------------------------------------------------------------

template <class T>
void attention_forward(const AttentionArgs& a, const T* Q, const T* K, const T* V, T* O, float* lse, float* probs) {
  const Problem p = make_problem(a);
  if (p.B == 0 || p.H == 0 || p.Tq == 0) return;
  const void* tensors[] = {Q, K, V, O};
  const bool tensor_cores = a.precision == Precision::bf16 && tensor_core_supports(p, tensors, 4);
  bool on_hopper = false; // the Hopper forward (bf16 tensors only) took the problem
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    on_hopper = tensor_cores && hopper_supports(p, tensors, 4);
    if (on_hopper) hopper_forward(p, Q, K, V, O, lse);
  }
  if (!on_hopper) {
    if (tensor_cores)
      tensor_core_forward(p, Q, K, V, O, lse);
    else
      PILLARS_ATTENTION_BY_BUCKET(p.D, (simt_forward<DP>(p, Q, K, V, O, lse)));
  }
  if (probs == nullptr) return;
  if (tensor_cores)
    PILLARS_ATTENTION_BY_BUCKET(p.D, (launch_probs<DP, true>(p, Q, K, lse, probs)));
  else
    PILLARS_ATTENTION_BY_BUCKET(p.D, (launch_probs<DP, false>(p, Q, K, lse, probs)));
}

size_t attention_backward_workspace(const AttentionArgs& a) {
  Problem p;
  p.B = static_cast<int>(a.B), p.H = static_cast<int>(a.H), p.Tq = static_cast<int>(a.Tq);
  return 2 * round_up_rows(p) * sizeof(float); // δ and lse2, (B, H, Tq) each
}

template <class T>
void attention_backward(const AttentionArgs& a, const T* Q, const T* K, const T* V, const T* O, const float* lse,
                        const T* dO, T* dQ, T* dK, T* dV, void* workspace) {
  const Problem p = make_problem(a);
  if (p.B == 0 || p.H == 0) return;
  float* delta = static_cast<float*>(workspace);
  float* lse2 = delta + round_up_rows(p);
  const int64_t rows = int64_t{p.B} * p.Tq * p.H;
  if (rows > 0) {
    constexpr int kWarpsPerBlock = 8;
    launch<delta_kernel<T>>(dim3(static_cast<unsigned>(tiles(rows, kWarpsPerBlock))), 32 * kWarpsPerBlock, 0,
                            "attention_delta", p, O, dO, lse, delta, lse2);
  }
  const void* tensors[] = {Q, K, V, dO, dQ, dK, dV};
  if (a.precision == Precision::bf16 && tensor_core_supports(p, tensors, 7))
    tensor_core_backward(p, Q, K, V, dO, delta, lse2, dQ, dK, dV);
  else if (p.Tq > 0 || p.Tk > 0)
    PILLARS_ATTENTION_BY_BUCKET(p.D, (simt_backward<DP>(p, Q, K, V, dO, delta, lse2, dQ, dK, dV)));
}

#define PILLARS_ATTENTION_INSTANTIATE(T)                                                                          \
  template void attention_forward<T>(const AttentionArgs&, const T*, const T*, const T*, T*, float*, float*);     \
  template void attention_backward<T>(const AttentionArgs&, const T*, const T*, const T*, const T*, const float*, \
                                      const T*, T*, T*, T*, void*);
PILLARS_ATTENTION_INSTANTIATE(float)
PILLARS_ATTENTION_INSTANTIATE(__nv_bfloat16)
#undef PILLARS_ATTENTION_INSTANTIATE

} // namespace pillars::cuda
