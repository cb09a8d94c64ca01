// What the two Hopper forwards share (attention_hopper.cu: cp.async staging, one role for every
// warp; attention_hopper_tma.cu: TMA, a copying warpgroup and two computing ones): the layout of a
// warpgroup's output accumulator and the epilogue that normalizes it and writes O and lse. For nvcc
// only; PILLARS_WGMMA code (sm_90a) except where marked.
#pragma once
#include <cuda_bf16.h>

#include <cstdint>

#include "kernels/cuda/attention_internal.h"
#include "kernels/cuda/attention_tensor_core_tiles.cuh"
#include "kernels/cuda/wgmma.cuh"

namespace pillars::cuda::attention_detail {
namespace {

#ifdef PILLARS_WGMMA

// Columns 64·half .. 64·half + 63 of Õ (D / 8 column blocks of 8) as one m64n64 accumulator: the
// column blocks 8·half .. 8·half + 7, which lie side by side in memory.
template <int N>
__device__ __forceinline__ wgmma::Accumulator& accumulator(float (&o)[N][4], int half) {
  static_assert(N % 8 == 0);
  return *reinterpret_cast<wgmma::Accumulator*>(&o[8 * half]);
}

// Once S (this warpgroup's 64 queries × 64 keys from j0) has been issued: waits for it, masks the
// keys hidden from this thread's rows (only in a tile past the keys every row of the warp sees),
// takes the online-softmax step (Õ rescaled) and leaves P, rounded to bf16, as the A fragments of
// Õ += P V.
template <int N>
__device__ __forceinline__ void scores_to_probabilities(wgmma::Accumulator& s, int j0, int t, const WarpRows<1>& w,
                                                        float (&m)[2], float (&l)[2], float (&o)[N][4],
                                                        float scale_log2, uint32_t (&pa)[4][4]) {
  wgmma::wait<0>();
  wgmma::fence_operand(s);
  if (j0 + 64 > w.full) mask_tile(s, j0, t, w.vis[0]);
  online_softmax(s, m, l, o, scale_log2);
  to_a<4>(s, pa);
}

// O = Õ / l and lse = ln 2 · (m + log2 l) for this thread's two rows (w.row(0, 0) and + 8; its
// warp's 4 threads of a row hold parts of l, summed here). A row that sees nothing has l = 0:
// O = 0, lse = −∞. `q_base` is row 0 of the head in Q and O, `stride` the distance between rows.
template <int D>
__device__ __forceinline__ void store_output(const Problem& p, const WarpRows<1>& w, int t, float (&o)[D / 8][4],
                                             const float (&m)[2], const float (&l)[2], int64_t q_base, int64_t stride,
                                             int bh, bf16* O, float* lse) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float sum = l[r];
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    const int i = w.row(0, r);
    if (i >= p.Tq) continue;
    const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
    bf16* out = O + q_base + i * stride + 2 * t;
#pragma unroll
    for (int nt = 0; nt < D / 8; ++nt) store_pair(out + 8 * nt, o[nt][2 * r] * inv, o[nt][2 * r + 1] * inv);
    if (t == 0) lse[int64_t{bh} * p.Tq + i] = sum > 0.0f ? (m[r] + log2f(sum)) * kLn2 : -kInf;
  }
}

#endif // PILLARS_WGMMA

} // namespace
} // namespace pillars::cuda::attention_detail
