// Key/value caches and beam-search candidates on the GPU (same functions as kernels/cpu/decoding.h).
//
// Shapes: a cache (R, T, W) f32 — rows, time slots, W = heads · head width floats per slot —,
// x (R, W), positions / origin / filled i32 per row; logprobs (S·k, V), row_scores and eos_rule
// (S·k), scores and index (S, n).
//   cache_write      cache[r, positions[r], :] = x[r, :]
//   cache_gather     dst[r, :filled[r]] = src[origin[r], :filled[r]]   (r < R_out; all T slots
//                    when filled is null)
//   beam_candidates  per sentence, the n best (row_scores[row] + logprobs[row, token], row · V +
//                    token) over its k rows, best first, ties by lower index; (−inf, −1) past
//                    the eligible ones
// The CPU kernels throw on a position, origin or fill out of range; the GPU cannot, so it skips
// that row (writes nothing for it). Every such value is read on the device, never on the host, so
// the launches replay under a CUDA graph with new positions, origins and fills.
//
// Algorithm.
//   cache_write: a block per row (grid-stride over the rows), its threads across the W floats of
//   the slot (16-byte loads and stores when W % 4 == 0 and the pointers are aligned).
//   cache_gather: a 2-D grid, y over the rows and x across a row's T · W floats; a block reads the
//   row's origin and fill and copies its part of the first filled[r] · W floats. Out of place
//   (src != dst) one launch copies every row. In place (src == dst) a row may be read as another's
//   origin after being overwritten, so it takes two launches: the rows with origin[r] != r are
//   copied into scratch (R_out · T · W floats, row r at r · T · W), then from scratch to dst. The
//   stream orders the two, so every read of the first precedes every write of the second.
//   beam_candidates: a block per sentence and n passes of a block-wide arg-max over its k · V
//   candidates. Pass j keeps only the candidates ranked after pass j−1's pick (score < its score,
//   or an equal score and a greater index), each thread keeps its best in registers, and a warp
//   shuffle then a shared-memory step reduce the (score, index) pairs, ordered by score
//   descending then index ascending; thread 0 writes the pick. A pass that finds nothing fills the
//   remaining slots with (−inf, −1). Cost: n passes over k · V log-probabilities per sentence
//   (n = 2 · beam is small, and the rows stay in L2 between passes). The order is total (no two
//   candidates share an index), so the picks are exactly the CPU's insertion-sorted list, and
//   the score is one fp32 add (__fadd_rn, never fused), bit-identical to the CPU's.
//
// The API is decoding.h; engine/ops/cuda/decoding.cu adapts the ops to it.
#include "kernels/cuda/decoding.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "runtime/cuda_runtime.h"

namespace pillars::cuda {
namespace {

constexpr int kCopyThreads = 256, kWriteThreads = 128;
constexpr int kBeamThreads = 256, kBeamWarps = kBeamThreads / 32;
constexpr unsigned kMaxRowBlocks = 65535; // gridDim.y's limit; the kernels loop past it
constexpr unsigned kMaxSpanBlocks = 1024; // blocks across one row of a cache_gather

// Copies count floats, thread `first` of `stride` taking every stride-th float (or float4).
template <bool kVec4>
__device__ __forceinline__ void copy_span(float* dst, const float* src, int64_t count, int64_t first, int64_t stride) {
  if constexpr (kVec4) {
    const float4* src4 = reinterpret_cast<const float4*>(src);
    float4* dst4 = reinterpret_cast<float4*>(dst);
    for (int64_t u = first; u < count / 4; u += stride) dst4[u] = src4[u];
  } else {
    for (int64_t u = first; u < count; u += stride) dst[u] = src[u];
  }
}

template <bool kVec4>
__global__ void __launch_bounds__(kWriteThreads)
    write_kernel(float* cache, const float* x, const int32_t* positions, int64_t R, int64_t T, int64_t W) {
  for (int64_t r = blockIdx.x; r < R; r += gridDim.x) {
    const int32_t p = positions[r];
    if (p < 0 || p >= T) continue; // the CPU throws; skipped here
    copy_span<kVec4>(cache + (r * T + p) * W, x + r * W, W, threadIdx.x, blockDim.x);
  }
}

// direct: dst[r] = src[origin[r]] for every row; to_scratch: dst (= scratch)[r] = src[origin[r]]
// and from_scratch: dst[r] = src (= scratch)[r], both for the rows with origin[r] != r.
enum class Pass { direct, to_scratch, from_scratch };

template <Pass kPass, bool kVec4>
__global__ void __launch_bounds__(kCopyThreads)
    gather_kernel(const float* src, float* dst, const int32_t* origin, const int32_t* filled, int64_t R_in,
                  int64_t R_out, int64_t T, int64_t W) {
  const int64_t row = T * W;
  const int64_t first = int64_t{blockIdx.x} * blockDim.x + threadIdx.x, stride = int64_t{gridDim.x} * blockDim.x;
  for (int64_t r = blockIdx.y; r < R_out; r += gridDim.y) {
    const int32_t o = origin[r];
    if (o < 0 || o >= R_in) continue; // the CPU throws; skipped here
    if (kPass != Pass::direct && o == r) continue;
    int64_t count = row;
    if (filled != nullptr) {
      const int32_t f = filled[r];
      if (f < 0 || f > T) continue; // the CPU throws; skipped here
      count = int64_t{f} * W;
    }
    const float* from = src + (kPass == Pass::from_scratch ? r : int64_t{o}) * row;
    copy_span<kVec4>(dst + r * row, from, count, first, stride);
  }
}

template <Pass kPass>
void launch_gather(const float* src, float* dst, const int32_t* origin, const int32_t* filled, int64_t R_in,
                   int64_t R_out, int64_t T, int64_t W, bool vec4, const char* name) {
  const int64_t units = vec4 ? T * W / 4 : T * W;
  const dim3 grid(std::min<unsigned>(blocks_for(units, kCopyThreads), kMaxSpanBlocks),
                  static_cast<unsigned>(std::min<int64_t>(R_out, kMaxRowBlocks)));
  if (vec4)
    gather_kernel<kPass, true><<<grid, kCopyThreads, 0, stream()>>>(src, dst, origin, filled, R_in, R_out, T, W);
  else
    gather_kernel<kPass, false><<<grid, kCopyThreads, 0, stream()>>>(src, dst, origin, filled, R_in, R_out, T, W);
  PILLARS_CUDA_LAUNCHED(name);
}

// a ranks before b: a is a candidate (index >= 0) and b is none, or a has the better score, or
// the same score and the lower index.
__device__ __forceinline__ bool ranks_before(float a_score, int32_t a_index, float b_score, int32_t b_index) {
  return a_index >= 0 && (b_index < 0 || a_score > b_score || (a_score == b_score && a_index < b_index));
}

__device__ __forceinline__ void warp_best(float& score, int32_t& index) {
  for (int offset = 16; offset > 0; offset /= 2) {
    const float other_score = __shfl_down_sync(0xffffffffu, score, offset);
    const int32_t other_index = __shfl_down_sync(0xffffffffu, index, offset);
    if (ranks_before(other_score, other_index, score, index)) score = other_score, index = other_index;
  }
}

// Block s: sentence s (rows s·k .. s·k + k − 1).
__global__ void __launch_bounds__(kBeamThreads)
    beam_kernel(const float* logprobs, const float* row_scores, const int32_t* eos_rule, float* scores, int32_t* index,
                int64_t k, int64_t V, int64_t n, int32_t pad, int32_t bos, int32_t eos) {
  __shared__ float warp_score[kBeamWarps];
  __shared__ int32_t warp_index[kBeamWarps];
  __shared__ float pick_score;
  __shared__ int32_t pick_index;
  const float neg_inf = -__int_as_float(0x7f800000);
  const int64_t s = blockIdx.x;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  float prev_score = 0.0f;
  int32_t prev_index = -1; // none yet: every candidate is after it
  for (int64_t j = 0; j < n; ++j) {
    float best_score = neg_inf;
    int32_t best_index = -1;
    auto offer = [&](float score, int32_t flat) {
      if (!(score > neg_inf)) return; // −inf and NaN are never candidates
      if (prev_index >= 0 && !(score < prev_score || (score == prev_score && flat > prev_index))) return; // picked
      if (ranks_before(score, flat, best_score, best_index)) best_score = score, best_index = flat;
    };
    for (int64_t r = 0; r < k; ++r) {
      const int64_t row = s * k + r;
      const float base = row_scores[row];
      if (!(base > neg_inf)) continue; // not live
      const float* lp = logprobs + row * V;
      const int32_t rule = eos_rule[row];
      if (rule == 2) { // only eos may follow
        if (threadIdx.x == 0) offer(__fadd_rn(base, lp[eos]), static_cast<int32_t>(r * V + eos));
        continue;
      }
      for (int64_t v = threadIdx.x; v < V; v += blockDim.x) {
        if (v == pad || (v == bos && bos != eos) || (v == eos && rule == 0)) continue;
        offer(__fadd_rn(base, lp[v]), static_cast<int32_t>(r * V + v));
      }
    }
    warp_best(best_score, best_index);
    if (lane == 0) warp_score[warp] = best_score, warp_index[warp] = best_index;
    __syncthreads();
    if (warp == 0) {
      best_score = lane < kBeamWarps ? warp_score[lane] : neg_inf;
      best_index = lane < kBeamWarps ? warp_index[lane] : -1;
      warp_best(best_score, best_index);
      if (lane == 0) {
        pick_score = best_score, pick_index = best_index; // (−inf, −1) when nothing is left
        scores[s * n + j] = best_score, index[s * n + j] = best_index;
      }
    }
    __syncthreads();
    prev_score = pick_score, prev_index = pick_index;
    if (prev_index < 0) { // nothing eligible is left: the remaining slots get (−inf, −1)
      for (int64_t i = j + 1 + threadIdx.x; i < n; i += blockDim.x) scores[s * n + i] = neg_inf, index[s * n + i] = -1;
      return;
    }
  }
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

} // namespace

void cache_write(const CacheWriteArgs& a, const float* x, const int32_t* positions, float* cache) {
  const int64_t R = a.R, T = a.T, W = a.W;
  if (R == 0 || T == 0 || W == 0) return;
  const unsigned grid = static_cast<unsigned>(std::min<int64_t>(R, INT32_MAX));
  if (W % 4 == 0 && aligned16(cache) && aligned16(x))
    write_kernel<true><<<grid, kWriteThreads, 0, stream()>>>(cache, x, positions, R, T, W);
  else
    write_kernel<false><<<grid, kWriteThreads, 0, stream()>>>(cache, x, positions, R, T, W);
  PILLARS_CUDA_LAUNCHED("cache_write write_kernel");
}

void cache_gather(const CacheGatherArgs& a, const float* src, const int32_t* origin, const int32_t* filled, float* dst,
                  float* scratch) {
  const int64_t R_in = a.R_in, R_out = a.R_out, T = a.T, W = a.W;
  PILLARS_CHECK(R_out <= R_in, "cache_gather: ", R_out, " rows out of ", R_in);
  if (R_out == 0 || T == 0 || W == 0) return;
  const bool in_place = src == dst;
  const bool vec4 = W % 4 == 0 && aligned16(src) && aligned16(dst) && (!in_place || aligned16(scratch));
  if (!in_place) {
    launch_gather<Pass::direct>(src, dst, origin, filled, R_in, R_out, T, W, vec4, "cache_gather gather_kernel");
    return;
  }
  PILLARS_CHECK(scratch != nullptr, "cache_gather: in place without scratch");
  launch_gather<Pass::to_scratch>(src, scratch, origin, filled, R_in, R_out, T, W, vec4,
                                  "cache_gather gather_kernel (to scratch)");
  launch_gather<Pass::from_scratch>(scratch, dst, origin, filled, R_in, R_out, T, W, vec4,
                                    "cache_gather gather_kernel (from scratch)");
}

void beam_candidates(const BeamCandidatesArgs& a, const float* logprobs, const float* row_scores,
                     const int32_t* eos_rule, float* scores, int32_t* index) {
  const int64_t S = a.S, k = a.k, V = a.V, n = a.n;
  const int32_t pad = a.tokens.pad, bos = a.tokens.bos, eos = a.tokens.eos;
  PILLARS_CHECK(pad >= 0 && pad < V && bos >= 0 && bos < V && eos >= 0 && eos < V,
                "beam_candidates: special token ids outside the vocabulary of ", V);
  if (S == 0 || n == 0) return;
  const unsigned grid = static_cast<unsigned>(std::min<int64_t>(S, INT32_MAX));
  beam_kernel<<<grid, kBeamThreads, 0, stream()>>>(logprobs, row_scores, eos_rule, scores, index, k, V, n, pad, bos,
                                                   eos);
  PILLARS_CUDA_LAUNCHED("beam_candidates beam_kernel");
}

} // namespace pillars::cuda
