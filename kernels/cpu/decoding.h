// The kernels of incremental decoding, on the CPU: key/value caches and beam-search candidates.
//
// A cache holds, per row r (a hypothesis, or a sentence for the encoder's keys), T time slots of
// W = heads · head width floats: cache (R, T, W). Row r's slot t is the key (or value) of its
// position t. The ops that call these (engine/ops/decoding.h) write into a cache bound from outside
// the graph, in place, so it persists from one decoding step to the next.
//
//   cache_write      cache[r, positions[r], :] = x[r, :]                 x (R, W), positions i32 (R)
//                    bf16: = float(bf16(x[r, :])) instead (round_to_bf16, cast.h): the value the
//                    bf16 attention would round it to at every later step, rounded once here.
//   cache_gather     rows r < R_out: dst[r] = src[origin[r]]             origin i32 (R_out); only the
//                    first filled[r] slots are copied (all T when filled is null). In place when
//                    dst = src (then rows with origin[r] = r are left alone, and scratch holds
//                    R_out · T · W floats); otherwise dst (R_out, T, W) is written whole.
//   beam_candidates  per sentence s, over its k rows × V tokens: the n best extensions
//                    score = row_scores[row] + logprobs[row, token], best first (ties: lower row,
//                    then lower token), as (score, row · V + token); slots past the eligible ones
//                    get (−inf, −1). A row with score −inf is not live. Banned: pad, bos (unless it
//                    is eos), and eos by eos_rule[row]: 0 banned (before min_len), 1 allowed, 2 the
//                    only token allowed (at max_len). A NaN is never eligible.
//                    logprobs (S·k, V), row_scores (S·k), eos_rule i32 (S·k) → scores (S, n),
//                    index i32 (S, n)
#pragma once
#include <cstdint>

#include "kernels/args/decoding.h"

namespace pillars::cpu {

// The CPU's own (not in kernels/args/decoding.h): the GPU's cache_write has no bf16 rounding.
struct CacheWriteArgs {
  int64_t R = 0, T = 0, W = 0; // cache (R, T, W): rows, time slots, floats per slot; x (R, W)
  bool bf16 = false;           // store x rounded to bf16 values (still fp32, the low 16 bits zero)
};
// x (R, W), positions i32 (R) → cache (R, T, W), written in place. Throws pillars::Error naming
// the row whose position lies outside [0, T).
void cache_write(const CacheWriteArgs& a, const float* x, const int32_t* positions, float* cache);

using kernels::CacheGatherArgs; // kernels/args/decoding.h, shared with the other device
// src (R_in, T, W), origin i32 (R_out), filled i32 (R_out) or null → dst (R_out, T, W); scratch:
// R_out · T · W floats when dst == src, else unused (may be null). Throws pillars::Error naming a
// row whose origin lies outside [0, R_in) or whose fill exceeds T.
void cache_gather(const CacheGatherArgs& a, const float* src, const int32_t* origin, const int32_t* filled, float* dst,
                  float* scratch);

using kernels::BeamCandidatesArgs; // kernels/args/decoding.h, shared with the other device
using kernels::BeamTokens;
// logprobs (S·k, V), row_scores (S·k), eos_rule i32 (S·k) → scores (S, n), index i32 (S, n).
void beam_candidates(const BeamCandidatesArgs& a, const float* logprobs, const float* row_scores,
                     const int32_t* eos_rule, float* scores, int32_t* index);

} // namespace pillars::cpu
