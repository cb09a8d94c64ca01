// The attention forward on Hopper's warpgroup MMA (wgmma, sm_90a) with cp.async staging: bf16 Q, K,
// V, O, head dim 64 or 128, no dropout. A first step towards FlashAttention-3's design, whose next
// steps are attention_hopper_tma.cu; this file also holds the choice between the two. Its first
// version, measured on an H200 (2026-11-27, docs/PERFORMANCE.md), was as accurate as naive bf16 attention but reached
// 121–151 TFLOP/s forward against the mma.sync kernel's 227–288 (0.52–0.56×), so it stays off by
// default (kernels/cuda/attention.h: set_hopper_forward, PILLARS_HOPPER_ATTENTION=1); where it
// does not apply, the mma.sync kernels of attention_tensor_core.cu run, as they do on every GPU
// before Hopper. The math, the masks and the outputs are those of attention_tensor_core.cu's
// forward (FlashAttention-2's online softmax in base 2, lse = ln 2 · (m + log2 l)).
//
// THE BLOCK. 128 queries of one (batch, head), two warpgroups of 128 threads, each owning 64 of the
// queries; the two share every key and value tile. Per 64-key tile, each warpgroup runs
//
//     S (64 × 64, fp32) = Q_wg Kᵀ       D/16 × wgmma m64n64k16, Q and K from shared memory
//     mask, online softmax on S          per warp, on its 16 rows (as the mma.sync kernel does)
//     Õ (64 × D) += bf16(P) V            4 × D/64 × wgmma m64n64k16, P from registers, Vᵀ from shared
//                                        memory (D = 128: two accumulators, one per 64 dimensions)
//
// THE PIPELINE (two buffers for K and Vᵀ, one for V as it arrives; everything is one thread block):
//
//   tile n:   barrier ─┬─ cp.async K[n+1] → K buffer (n+1) mod 2, V[n+1] → V      (in flight)
//                      ├─ S = Q Kᵀ[n] ─ softmax ─ Õ += P Vᵀ[n]                  (tensor cores)
//                      └─ wait for the copies ─ barrier ─ V → Vᵀ buffer (n+1) mod 2 (ldmatrix.trans)
//
// so the copies of tile n + 1 run under the products of tile n. What FlashAttention-3 adds, and
// attention_hopper_tma.cu has: operands loaded by TMA with mbarriers, a producer warpgroup that
// only copies (warp specialization, setmaxnreg), swizzled shared memory, wgmma reading V directly
// through its transpose bit, and the softmax of one warpgroup overlapped with the products of the
// other (ping-pong). Why they matter: on the H200 (2026-11-27) the
// first version, which transposed V by scattering single values from registers, reached 0.31×
// cuDNN at 4k keys, the mma.sync kernel 0.59×. The version here (conflict-free staging, V
// transposed by ldmatrix) has not run on a GPU yet.
//
// SHARED MEMORY: every tile is K-major in wgmma's no-swizzle core-matrix layout
// (kernels/cuda/wgmma_layout.h). Q (128 × D), K (64 keys × D) and V (64 keys × D) are K-major as
// they lie in memory, so 16-byte chunks go straight in with cp.async. O += P V needs V as Bᵀ,
// (D dims × 64 keys) with the keys contiguous: each V tile is transposed inside shared memory
// (transpose_values). Slots at or past the key limit are staged as zeros and never read from
// memory (attention.h).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "kernels/cuda/attention_hopper.cuh"
#include "kernels/cuda/attention_internal.h"
#include "kernels/cuda/attention_tensor_core_tiles.cuh"
#include "kernels/cuda/wgmma.cuh"
#include "kernels/cuda/wgmma_check.h"

namespace pillars::cuda {
namespace attention_detail {
namespace {

constexpr int kWarpgroups = 2; // each owns 64 queries
constexpr int kThreads = 128 * kWarpgroups;
constexpr int kBlockQ = 64 * kWarpgroups; // queries per block
// One tile of 64 rows (queries, keys, or Vᵀ's dimensions in blocks of 64) × D bf16.
template <int D>
constexpr int kTileBytes = 64 * D * 2;
// Q (2 tiles), 2 × K, V, 2 × Vᵀ: 7 tiles, 56 KB at D = 64 and 112 KB at D = 128.
template <int D>
constexpr size_t kSmem = size_t(kWarpgroups + 5) * kTileBytes<D>;

std::atomic<int64_t> g_launches{0};

#ifdef PILLARS_WGMMA

constexpr int kBlockK = 64; // keys per tile

// Rows [row0, row0 + rows) of a (·, D) head into a K-major tile (D columns), 16 bytes at a time by
// cp.async; rows ≥ valid are zero. With C = D / 8 chunks a row, chunk c is row 8·(c / 8C) + c mod 8,
// columns 8·((c / 8) mod C) onwards: the 8 threads of each quarter-warp (one shared-memory
// wavefront of 16-byte writes) take 8 different rows of one core-matrix column, i.e. the 8 different 16-byte slots of a core matrix,
// so no two collide on a bank; a warp still reads 64 contiguous bytes of each of 8 rows (whole
// 32-byte sectors). (Row-major chunk order put a quarter-warp's 8 chunks 128 bytes apart: one bank
// group, 8-way conflicts.)
template <int D>
__device__ __forceinline__ void stage_kmajor(uint8_t* tile, const bf16* X, int64_t base, int64_t stride, int row0,
                                             int rows, int valid) {
  constexpr int kChunks = D / 8;
  for (int c = threadIdx.x; c < rows * kChunks; c += kThreads) {
    const int r = 8 * (c / (8 * kChunks)) + c % 8, k8 = (c / 8) % kChunks;
    uint8_t* dst = tile + wgmma::kmajor_offset(r, 8 * k8, D);
    if (row0 + r < valid)
      cp_async_16(smem_u32(dst), X + base + int64_t{row0 + r} * stride + 8 * k8);
    else
      *reinterpret_cast<uint4*>(dst) = make_uint4(0, 0, 0, 0);
  }
}

// Vᵀ (D dimensions × 64 keys, K-major: keys contiguous) from the value tile V (64 keys × D
// dimensions, K-major as staged), through ldmatrix.trans: warp w transposes the D / 8 core matrices
// of keys 8w .. 8w + 7, four per ldmatrix.x4. Lane l gives the address of row l mod 8 of matrix l / 8
// and receives, of each matrix, dimension l / 4 of keys 2·(l mod 4) and + 1, which is 4 bytes at
// byte 4·l of the transposed core matrix: every store of a warp fills one core matrix, 128
// contiguous bytes, without bank conflicts. (This replaced scattering single bf16 values from
// registers, 8-way bank conflicts on every store, which the H200 measured at half the speed of the
// mma.sync kernel.)
template <int D>
__device__ __forceinline__ void transpose_values(uint8_t* vt, const uint8_t* v) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
#pragma unroll
  for (int q = 0; q < D / 32; ++q) { // dimension blocks 4q .. 4q + 3
    uint32_t r[4];
    ldsm_x4_trans(smem_u32(v + wgmma::kmajor_offset(8 * warp + lane % 8, 8 * (4 * q + lane / 8), D)), r);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int d = 8 * (4 * q + i) + lane / 4, j = 8 * warp + 2 * (lane % 4); // dimension, first of two keys
      *reinterpret_cast<uint32_t*>(vt + wgmma::kmajor_offset(d, j, kBlockK)) = r[i];
    }
  }
}
static_assert(kThreads / 32 == kBlockK / 8, "one warp per 8 keys of the value tile");

// The descriptor of k-step `step` (16 columns) of a K-major tile with `columns` columns at `tile`.
template <int columns>
__device__ __forceinline__ uint64_t step_descriptor(const uint8_t* tile, int step) {
  return wgmma::descriptor(smem_u32(tile) + static_cast<uint32_t>(step) * 2 * wgmma::kmajor_lbo(), wgmma::kmajor_lbo(),
                           wgmma::kmajor_sbo(columns));
}

#endif // PILLARS_WGMMA

// O = softmax(S) V and lse for 128 queries (grid: b·H + h, query block reversed: longest first), head
// dimension D ∈ {64, 128}. Õ is D / 64 accumulators of 64 columns: O += P V runs as D / 64 products
// per k-step, one per block of 64 dimensions of Vᵀ.
template <int D>
__global__ void __launch_bounds__(kThreads, 1)
    hopper_forward_kernel(Problem p, const bf16* Q, const bf16* K, const bf16* V, bf16* O, float* lse) {
#ifdef PILLARS_WGMMA
  static_assert(D == 64 || D == 128, "head dimensions 64 and 128");
  constexpr int kTile = kTileBytes<D>, kHalves = D / 64;
  extern __shared__ uint4 smem_u4[];
  uint8_t* Qs = reinterpret_cast<uint8_t*>(smem_u4); // (128 queries × D): warpgroup wg's 64 at wg · kTile
  uint8_t* Ks = Qs + kWarpgroups * kTile;            // 2 buffers of (64 keys × D)
  uint8_t* Vts = Ks + 2 * kTile;                     // 2 buffers of (D dims × 64 keys): Vᵀ
  uint8_t* Vs = Vts + 2 * kTile;                     // (64 keys × D dims): V as staged, before transposing
  const int wg = threadIdx.x / 128, warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int bh = blockIdx.x, b = bh / p.H, h = bh % p.H;
  const int i0 = (gridDim.y - 1 - blockIdx.y) * kBlockQ;
  const int64_t stride = int64_t{p.H} * D;
  const int64_t q_base = head_row(p, b, p.Tq, h, 0), k_base = head_row(p, b, p.Tk, h, 0);
  const RowMask mask = row_mask(p, b);
  const int n_tiles = (mask.visible(min(i0 + kBlockQ, p.Tq) - 1) + kBlockK - 1) / kBlockK;
  // Warp w holds rows i0 + 16w + g and + 8 (the accumulator map: warpgroup wg's warps 4wg .. 4wg + 3).
  const WarpRows<1> w = warp_rows<1>(mask, i0 + 16 * warp, g, p.Tq);
  // The keys any row of this warpgroup sees: a tile from there on is skipped by all its 4 warps
  // together (wgmma is a warpgroup instruction: its warps must agree).
  const int wg_first = i0 + 64 * wg;
  const int wg_keys = wg_first < p.Tq ? mask.visible(min(wg_first + 63, p.Tq - 1)) : 0;

  float o[D / 8][4] = {}; // Õ, in the accumulator map (kHalves accumulators side by side)
  float m[2] = {-kInf, -kInf}, l[2] = {0.0f, 0.0f};
  if (n_tiles > 0) {
    stage_kmajor<D>(Qs, Q, q_base, stride, i0, kBlockQ, p.Tq);
    stage_kmajor<D>(Ks, K, k_base, stride, 0, kBlockK, mask.limit);
    stage_kmajor<D>(Vs, V, k_base, stride, 0, kBlockK, mask.limit);
    cp_async_commit();
    cp_async_wait_all();
    __syncthreads(); // V complete: other threads' copies are read below
    transpose_values<D>(Vts, Vs);
  }
  for (int n = 0; n < n_tiles; ++n) {
    const int buf = n & 1, j0 = n * kBlockK;
    cp_async_wait_all();
    wgmma::fence_shared_to_async(); // this thread's stores (cp.async and plain) → wgmma's reads
    __syncthreads();                // tile n is complete; every warpgroup is done with tile n − 1
    const bool more = n + 1 < n_tiles;
    if (more) { // tile n + 1: K and V by cp.async, in flight during the products
      stage_kmajor<D>(Ks + (buf ^ 1) * kTile, K, k_base, stride, j0 + kBlockK, kBlockK, mask.limit);
      stage_kmajor<D>(Vs, V, k_base, stride, j0 + kBlockK, kBlockK, mask.limit);
      cp_async_commit();
    }
    if (j0 < wg_keys) {
      wgmma::Accumulator s = {};
      wgmma::fence_operand(s);
      wgmma::fence();
#pragma unroll
      for (int step = 0; step < D / 16; ++step) // S = Q Kᵀ (unscaled)
        wgmma::mma_m64n64k16(s, step_descriptor<D>(Qs + wg * kTile, step), step_descriptor<D>(Ks + buf * kTile, step),
                             step > 0);
      wgmma::commit();
      uint32_t pa[kBlockK / 16][4];
      scores_to_probabilities(s, j0, t, w, m, l, o, p.scale_log2, pa);
      wgmma::fence_operand(o);
      wgmma::fence_operand(pa);
      wgmma::fence(); // Õ was rescaled and P written by ordinary code
#pragma unroll
      for (int step = 0; step < kBlockK / 16; ++step) // Õ += P V
#pragma unroll
        for (int half = 0; half < kHalves; ++half) // dimensions 64·half .. 64·half + 63: Vᵀ rows
          wgmma::mma_m64n64k16_rs(accumulator(o, half), pa[step],
                                  step_descriptor<kBlockK>(Vts + buf * kTile + half * kTileBytes<64>, step), true);
      wgmma::commit();
      wgmma::wait<0>();
      wgmma::fence_operand(o);
    }
    if (more) { // Vᵀ of tile n + 1 (its buffer held tile n − 1, which every warpgroup is done with)
      cp_async_wait_all();
      __syncthreads(); // V of tile n + 1 complete, from every thread's copies
      transpose_values<D>(Vts + (buf ^ 1) * kTile, Vs);
    }
  }

  store_output<D>(p, w, t, o, m, l, q_base, stride, bh, O, lse);
#else
  __trap(); // compiled without sm_90a's wgmma: hopper_attention_available() keeps dispatch away
#endif // PILLARS_WGMMA
}

// PILLARS_HOPPER_ATTENTION: "1" or "cp_async", "tma"; unset or "0": off.
HopperForward from_environment() {
  const char* v = std::getenv("PILLARS_HOPPER_ATTENTION");
  if (v == nullptr || std::strcmp(v, "0") == 0 || *v == '\0') return HopperForward::off;
  if (std::strcmp(v, "1") == 0 || std::strcmp(v, "cp_async") == 0) return HopperForward::cp_async;
  if (std::strcmp(v, "tma") == 0) return HopperForward::tma;
  std::fprintf(
      stderr, "pillars: PILLARS_HOPPER_ATTENTION=%s is none of 0, 1, cp_async, tma; the Hopper forward stays off\n", v);
  return HopperForward::off;
}

std::atomic<HopperForward> g_forward{from_environment()};

} // namespace

bool hopper_supports(const Problem& p, const void* const* tensors, int count) {
  if (g_forward.load(std::memory_order_relaxed) == HopperForward::off || (p.D != 64 && p.D != 128) ||
      p.dropout_p > 0.0f || p.Tq == 0 || p.Tk == 0)
    return false;
  return tensor_core_supports(p, tensors, count) && hopper_attention_available();
}

void hopper_forward(const Problem& p, const bf16* Q, const bf16* K, const bf16* V, bf16* O, float* lse) {
  if (g_forward.load(std::memory_order_relaxed) == HopperForward::tma) {
    hopper_tma_forward(p, Q, K, V, O, lse);
  } else {
    const dim3 grid(static_cast<unsigned>(p.B * p.H), static_cast<unsigned>((p.Tq + kBlockQ - 1) / kBlockQ));
    if (p.D == 64)
      launch<hopper_forward_kernel<64>>(grid, kThreads, kSmem<64>, "attention hopper_forward_kernel<64>", p, Q, K, V, O,
                                        lse);
    else
      launch<hopper_forward_kernel<128>>(grid, kThreads, kSmem<128>, "attention hopper_forward_kernel<128>", p, Q, K, V,
                                         O, lse);
  }
  g_launches.fetch_add(1, std::memory_order_relaxed);
}

} // namespace attention_detail

HopperForward set_hopper_forward(HopperForward forward) {
  // Probe now, not at the first dispatch, which may come inside a CUDA-graph capture (where the
  // probe's synchronizing copy is not allowed).
  if (forward != HopperForward::off) hopper_attention_available();
  return attention_detail::g_forward.exchange(forward, std::memory_order_relaxed);
}

bool hopper_attention_available() { return wgmma_unavailable_reason().empty(); } // probed once, then cached

int64_t hopper_attention_launches() { return attention_detail::g_launches.load(std::memory_order_relaxed); }

} // namespace pillars::cuda
