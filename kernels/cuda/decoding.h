// The kernels of incremental decoding on the GPU: key/value caches and beam-search candidates, the
// plain-pointer API under the decoding ops (adapters: engine/ops/cuda/decoding.cu; the algorithm:
// decoding.cu). Same functions as kernels/cpu/decoding.h. Device arrays:
//
//   cache_write      cache (R, T, W) f32, x (R, W) f32, positions i32 (R):
//                    cache[r, positions[r], :] = x[r, :]
//   cache_gather     src (R_in, T, W) f32, origin i32 (R_out), filled i32 (R_out) or null → dst
//                    (R_out, T, W): rows r < R_out, dst[r] = src[origin[r]], only the first
//                    filled[r] slots (all T when filled is null). In place when dst == src (rows
//                    with origin[r] = r are left alone; scratch holds R_out · T · W floats);
//                    otherwise every row of dst is written (its first filled[r] slots).
//   beam_candidates  logprobs (S·k, V) f32, row_scores (S·k) f32, eos_rule i32 (S·k) → scores
//                    (S, n) f32, index i32 (S, n): per sentence the n best row_scores[row] +
//                    logprobs[row, token] over its k rows × V tokens, best first (ties: lower
//                    row · V + token first), as (score, row · V + token); slots past the eligible
//                    ones get (−inf, −1). Rows with score −inf (or NaN) are not live; pad, bos
//                    (unless bos == eos) and eos by eos_rule (0 banned, 1 allowed, 2 the only token
//                    allowed) are banned; a NaN or −inf score is never eligible. Bit-identical to
//                    the CPU kernel.
//
// Positions, origins and fills are device values, read by the kernels (no host read: the calls
// replay under a CUDA graph). The GPU cannot throw, so where the CPU kernel raises an error the
// GPU skips the row: a position outside [0, T) writes nothing, and a row whose origin lies outside
// [0, R_in) or whose fill lies outside [0, T] is not copied (dst keeps what it held).
// beam_candidates checks its host-side token ids (pad, bos, eos in [0, V)) and throws like the CPU.
//
// Queued on cuda::stream(). Plain C++: callable from host code compiled without nvcc.
#pragma once
#include <cstdint>

#include "kernels/args/decoding.h"

namespace pillars::cuda {

// The GPU's own (not in kernels/args/decoding.h): the CPU's adds a bf16 flag this kernel lacks.
struct CacheWriteArgs {
  int64_t R = 0, T = 0, W = 0; // cache (R, T, W): rows, time slots, floats per slot; x (R, W)
};
// x (R, W), positions i32 (R) → cache (R, T, W), written in place.
void cache_write(const CacheWriteArgs& a, const float* x, const int32_t* positions, float* cache);

using kernels::CacheGatherArgs; // kernels/args/decoding.h, shared with the other device
// src (R_in, T, W), origin i32 (R_out), filled i32 (R_out) or null → dst (R_out, T, W); scratch:
// R_out · T · W floats when dst == src, else unused (may be null).
void cache_gather(const CacheGatherArgs& a, const float* src, const int32_t* origin, const int32_t* filled, float* dst,
                  float* scratch);

using kernels::BeamCandidatesArgs; // kernels/args/decoding.h, shared with the other device
using kernels::BeamTokens;
// logprobs (S·k, V), row_scores (S·k), eos_rule i32 (S·k) → scores (S, n), index i32 (S, n).
void beam_candidates(const BeamCandidatesArgs& a, const float* logprobs, const float* row_scores,
                     const int32_t* eos_rule, float* scores, int32_t* index);

} // namespace pillars::cuda
