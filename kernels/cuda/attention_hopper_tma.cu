// The attention forward on FlashAttention-3's design for Hopper (sm_90a): bf16 Q, K, V, O, head
// dimension 64 or 128, no dropout. The math, the masks and the outputs are those of
// attention_hopper.cu and attention_tensor_core.cu (FlashAttention-2's online softmax in base 2,
// lse = ln 2 · (m + log2 l)); what changes is how the tiles reach the tensor cores.
//
// THE BLOCK: 128 queries of one (batch, head) and three warpgroups with different jobs (warp
// specialization):
//   warpgroup 0, the producer: one thread issues every copy — the block's Q once, then K and V tile
//     by tile into a ring of kStages buffers — with the TMA (kernels/cuda/tma.cuh), which writes
//     shared memory in the 128-byte swizzle by itself; the warpgroup gives most of its registers
//     to the other two (setmaxnreg).
//   warpgroups 1 and 2, the consumers: each owns 64 of the queries and, per 64-key tile n, runs
//         S (64 × 64, fp32) = Q_c K[n]ᵀ      D/16 × wgmma m64n64k16, Q and K from shared memory, K-major
//         mask, online softmax              per warp, on its 16 rows (as the mma.sync kernel does)
//         Õ (64 × D) += bf16(P) V[n]        4 × D/64 × wgmma m64n64k16, P from registers, V from
//                                           shared memory read MN-major (wgmma's transpose bit):
//                                           no transposing copy of V
//     and then releases the buffer.
//
// THE PIPELINE. Buffer s = n mod kStages has three mbarriers: full_k[s] and full_v[s], on which
// the TMA counts K's and V's bytes down (S can start before V has landed), and empty[s], on which
// all 256 consumer threads arrive once done with tile n. The producer waits for empty[s] before it
// brings tile n + kStages in, so up to kStages tiles are in flight ahead of the products:
//
//   producer:    Q ─ K0 V0 ─ K1 V1 ─ … ─ (empty[s]) ─ K(n+kStages) V(n+kStages) ─ …
//   consumer 0:  S0 ─ softmax ─ PV0 ─ release 0 ─ S1 ─ …
//   consumer 1:       S0 ─ softmax ─ PV0 ─ release 0 ─ S1 ─ …
//
// PING-PONG. The consumers take turns to issue their products: each has a named barrier, waits on
// its own before issuing and, once issued, lets the other go on. The issue order is then S (0),
// S (1), PV (0), PV (1), S (0), …, so that while one warpgroup's softmax runs on the CUDA cores
// the other's product runs on the tensor cores. Both consumers pass every turn of every tile (a
// tile that one of them skips under the causal mask included), so the turns always pair up.
//
// KEYS PAST THE LIMIT. The TMA brings whole boxes: rows past T arrive as zeros, but rows at or past
// key_lengths[b] and before T arrive as memory holds them, NaN possibly (attention.h). Their logits
// are overwritten by the mask (−∞), and each consumer writes zeros over their V rows before its
// P V (P is 0 there, but 0 · NaN is NaN). Both consumers write the same zeros to the same rows,
// each before its own product reads them.
//
// SHARED MEMORY (1,024-byte aligned, the swizzle's period): Q (2 × 64 rows × D), then kStages K
// tiles and kStages V tiles (64 rows × D each), then the mbarriers; every tile is D/64 swizzled
// panels of 64 rows × 128 bytes, one TMA box each (kernels/cuda/wgmma_layout.h: sw128_offset).
// 82 KB at D = 64 (4 stages), 130 KB at D = 128 (3 stages): one block per SM.
//
// Written without a GPU to run it: tests/test_cuda_wgmma.cpp checks its swizzled operand layouts
// with single tile products, tests/test_cuda_attention.cpp's Hopper case checks the forward
// against naive bf16 attention, and `pillars bench attention --device cuda` measures it.
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>

#include "kernels/cuda/attention_hopper.cuh"
#include "kernels/cuda/attention_internal.h"
#include "kernels/cuda/attention_tensor_core_tiles.cuh"
#include "kernels/cuda/tensor_map.h"
#include "kernels/cuda/tma.cuh"
#include "kernels/cuda/wgmma.cuh"

namespace pillars::cuda::attention_detail {
namespace {

constexpr int kConsumers = 2;                    // computing warpgroups, 64 queries each
constexpr int kThreads = 128 * (1 + kConsumers); // and the producer's
constexpr int kBlockQ = 64 * kConsumers;         // queries per block
constexpr int kBlockK = 64;                      // keys per tile
constexpr int kPanelBytes = 64 * 128;            // 64 rows × 128 bytes: one TMA box, one swizzled panel
template <int D>
constexpr int kTileBytes = D / 64 * kPanelBytes; // 64 rows × D
template <int D>
constexpr int kStages = D == 64 ? 4 : 3;

template <int S>
struct Barriers {
  uint64_t q;         // Q has landed
  uint64_t full_k[S]; // K of the buffer's tile has landed
  uint64_t full_v[S]; // V likewise
  uint64_t empty[S];  // both consumers are done with the buffer
};

template <int D>
constexpr size_t kSmem = 1024 /* to align */ + size_t(kConsumers + 2 * kStages<D>) * kTileBytes<D> +
                         sizeof(Barriers<kStages<D>>);

#ifdef PILLARS_WGMMA

// Registers a thread: the producer's warpgroup goes down to 40, the consumers' up to 232
// (128 · 40 + 256 · 232 = 64,512 of the SM's 65,536).
constexpr int kProducerRegisters = 40, kConsumerRegisters = 232;
// Named barriers (0 is __syncthreads): kTurn + c is consumer c's turn at the tensor cores,
// kOwn + c its warpgroup's own.
constexpr int kTurn = 1, kOwn = 3;

// The descriptor of k-step `step` (16 columns) of a K-major tile (64 rows × D, D/64 panels).
__device__ __forceinline__ uint64_t kmajor_step(const uint8_t* tile, int step) {
  return wgmma::descriptor_sw128(tma::shared_address(tile + step / 4 * kPanelBytes + step % 4 * 32), 16);
}

// The descriptor of k-step `step` (16 keys) of dimensions 64·half .. 64·half + 63 of a value tile
// (64 keys × D, read MN-major).
__device__ __forceinline__ uint64_t values_step(const uint8_t* tile, int half, int step) {
  return wgmma::descriptor_sw128(tma::shared_address(tile + half * kPanelBytes + step * 16 * 128), kPanelBytes);
}

// Rows [from, 64) of every panel of a value tile to zeros, by the 128 threads of a warpgroup (wt is
// the thread's index in it). A swizzled row stays a row: its 8 chunks of 16 bytes only change places.
template <int D>
__device__ __forceinline__ void zero_value_rows(uint8_t* tile, int from, int wt) {
  from = max(from, 0);
  const int chunks = (kBlockK - from) * 8;
#pragma unroll
  for (int panel = 0; panel < D / 64; ++panel)
    for (int i = wt; i < chunks; i += 128)
      *reinterpret_cast<uint4*>(tile + panel * kPanelBytes + (from + i / 8) * 128 + i % 8 * 16) =
          make_uint4(0, 0, 0, 0);
}

#endif // PILLARS_WGMMA

// O = softmax(S) V and lse for 128 queries (grid: b·H + h, query block reversed: longest first).
template <int D>
__global__ void __launch_bounds__(kThreads, 1)
    hopper_tma_forward_kernel(const __grid_constant__ CUtensorMap q_map, const __grid_constant__ CUtensorMap k_map,
                              const __grid_constant__ CUtensorMap v_map, Problem p, bf16* O, float* lse) {
#ifdef PILLARS_WGMMA
  static_assert(D == 64 || D == 128, "head dimensions 64 and 128");
  constexpr int kTile = kTileBytes<D>, S = kStages<D>;
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  uint8_t* Qs = smem_raw + (1024 - tma::shared_address(smem_raw) % 1024) % 1024; // consumer c's at c · kTile
  uint8_t* Ks = Qs + kConsumers * kTile;                                         // S buffers
  uint8_t* Vs = Ks + S * kTile;                                                  // S buffers
  Barriers<S>& bar = *reinterpret_cast<Barriers<S>*>(Vs + S * kTile);

  const int bh = blockIdx.x, b = bh / p.H, h = bh % p.H;
  const int i0 = (gridDim.y - 1 - blockIdx.y) * kBlockQ;
  const RowMask mask = row_mask(p, b);
  const int n_tiles = (mask.visible(min(i0 + kBlockQ, p.Tq) - 1) + kBlockK - 1) / kBlockK;

  if (threadIdx.x == 0) {
    tma::barrier_init(&bar.q, 1);
    for (int s = 0; s < S; ++s) {
      tma::barrier_init(&bar.full_k[s], 1);
      tma::barrier_init(&bar.full_v[s], 1);
      tma::barrier_init(&bar.empty[s], 128 * kConsumers);
    }
    tma::fence_barrier_init();
  }
  __syncthreads();

  // The warpgroup, read from lane 0 so that the compiler knows every thread of a warp has the same
  // (ptxas serializes the wgmma of a branch it cannot prove uniform: its warning C7518).
  const int wg = __shfl_sync(0xffffffffu, threadIdx.x / 128, 0);
  if (wg == 0) { // the producer
    tma::release_registers<kProducerRegisters>();
    if (threadIdx.x == 0 && n_tiles > 0) {
      tma::prefetch_map(&q_map), tma::prefetch_map(&k_map), tma::prefetch_map(&v_map);
      tma::arrive_expect_tx(&bar.q, kConsumers * kTile);
      for (int c = 0; c < kConsumers; ++c)
        for (int panel = 0; panel < D / 64; ++panel)
          tma::load_4d(Qs + c * kTile + panel * kPanelBytes, &q_map, &bar.q, 64 * panel, h, i0 + 64 * c, b);
      for (int n = 0; n < n_tiles; ++n) {
        const int s = n % S;
        if (n >= S) tma::wait(&bar.empty[s], (n / S - 1) & 1); // the buffer's previous tile is done with
        tma::arrive_expect_tx(&bar.full_k[s], kTile);
        for (int panel = 0; panel < D / 64; ++panel)
          tma::load_4d(Ks + s * kTile + panel * kPanelBytes, &k_map, &bar.full_k[s], 64 * panel, h, n * kBlockK, b);
        tma::arrive_expect_tx(&bar.full_v[s], kTile);
        for (int panel = 0; panel < D / 64; ++panel)
          tma::load_4d(Vs + s * kTile + panel * kPanelBytes, &v_map, &bar.full_v[s], 64 * panel, h, n * kBlockK, b);
      }
    }
    return;
  }

  // A consumer.
  tma::claim_registers<kConsumerRegisters>();
  const int c = wg - 1, wt = threadIdx.x % 128;
  const int warp = threadIdx.x / 32 - 4, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int64_t stride = int64_t{p.H} * D;
  const int64_t q_base = head_row(p, b, p.Tq, h, 0);
  // Warp w (of the 8 consumer warps) holds rows i0 + 16w + g and + 8 (the accumulator map).
  const WarpRows<1> w = warp_rows<1>(mask, i0 + 16 * warp, g, p.Tq);
  // The keys any row of this warpgroup sees: a tile from there on is skipped by all its 4 warps
  // together (wgmma is a warpgroup instruction: its warps must agree).
  const int wg_first = i0 + 64 * c;
  const int wg_keys = wg_first < p.Tq ? mask.visible(min(wg_first + 63, p.Tq - 1)) : 0;
  const int zero_from = mask.limit < p.Tk ? mask.limit : INT_MAX; // the first value row to overwrite
  const int my_turn = kTurn + c, other_turn = kTurn + (c ^ 1);

  float o[D / 8][4] = {}; // Õ, in the accumulator map (D / 64 accumulators side by side)
  float m[2] = {-kInf, -kInf}, l[2] = {0.0f, 0.0f};
  if (n_tiles > 0) {
    if (c == 1) tma::named_arrive(kTurn, 256); // consumer 0 takes the first turn
    tma::wait(&bar.q, 0);
  }
  for (int n = 0; n < n_tiles; ++n) {
    const int s = n % S, j0 = n * kBlockK;
    const uint32_t parity = (n / S) & 1; // the (n / S)-th use of this buffer's barriers
    const bool compute = j0 < wg_keys;
    const uint8_t* Qc = Qs + c * kTile;
    uint8_t* Kt = Ks + s * kTile;
    uint8_t* Vt = Vs + s * kTile;

    // Consumer 1's last turn pairs with none (consumer 0 took the first without one).
    const bool pass_turn = c == 0 || n + 1 < n_tiles;
    if (!compute) { // every row of this warpgroup is past the keys it sees: pass both turns
      tma::named_sync(my_turn, 256);
      tma::named_arrive(other_turn, 256);
      tma::named_sync(my_turn, 256);
      if (pass_turn) tma::named_arrive(other_turn, 256);
    } else {
      // S = Q Kᵀ (unscaled), issued in this consumer's turn.
      wgmma::Accumulator sc = {};
      tma::named_sync(my_turn, 256);
      tma::wait(&bar.full_k[s], parity);
      wgmma::fence_operand(sc);
      wgmma::fence();
#pragma unroll
      for (int step = 0; step < D / 16; ++step)
        wgmma::mma_m64n64k16(sc, kmajor_step(Qc, step), kmajor_step(Kt, step), step > 0);
      wgmma::commit();
      tma::named_arrive(other_turn, 256);
      uint32_t pa[kBlockK / 16][4];
      scores_to_probabilities(sc, j0, t, w, m, l, o, p.scale_log2, pa);

      // Õ += P V, issued in this consumer's next turn.
      tma::named_sync(my_turn, 256);
      tma::wait(&bar.full_v[s], parity);
      if (j0 + kBlockK > zero_from) {
        zero_value_rows<D>(Vt, zero_from - j0, wt);
        tma::fence_async_shared(); // the zeros → wgmma's reads
        tma::named_sync(kOwn + c, 128);
      }
      wgmma::fence_operand(o);
      wgmma::fence_operand(pa);
      wgmma::fence(); // Õ was rescaled and P written by ordinary code
#pragma unroll
      for (int step = 0; step < kBlockK / 16; ++step)
#pragma unroll
        for (int half = 0; half < D / 64; ++half)
          wgmma::mma_m64n64k16_rs<true>(accumulator(o, half), pa[step], values_step(Vt, half, step), true);
      wgmma::commit();
      if (pass_turn) tma::named_arrive(other_turn, 256);
      wgmma::wait<0>();
      wgmma::fence_operand(o);
    }
    tma::arrive(&bar.empty[s]);
  }
  store_output<D>(p, w, t, o, m, l, q_base, stride, bh, O, lse);
#else
  __trap(); // compiled without sm_90a: hopper_attention_available() keeps dispatch away
#endif // PILLARS_WGMMA
}

} // namespace

void hopper_tma_forward(const Problem& p, const bf16* Q, const bf16* K, const bf16* V, bf16* O, float* lse) {
  // Boxes of 64 rows: one consumer's queries, one tile of keys or values.
  const CUtensorMap q = head_tensor_map(Q, p.B, p.Tq, p.H, p.D, 64);
  const CUtensorMap k = head_tensor_map(K, p.B, p.Tk, p.H, p.D, kBlockK);
  const CUtensorMap v = head_tensor_map(V, p.B, p.Tk, p.H, p.D, kBlockK);
  const dim3 grid(static_cast<unsigned>(p.B * p.H), static_cast<unsigned>((p.Tq + kBlockQ - 1) / kBlockQ));
  if (p.D == 64)
    launch<hopper_tma_forward_kernel<64>>(grid, kThreads, kSmem<64>, "attention hopper_tma_forward_kernel<64>", q, k, v,
                                          p, O, lse);
  else
    launch<hopper_tma_forward_kernel<128>>(grid, kThreads, kSmem<128>, "attention hopper_tma_forward_kernel<128>", q, k,
                                           v, p, O, lse);
}

} // namespace pillars::cuda::attention_detail
