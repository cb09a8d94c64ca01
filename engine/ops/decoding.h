// The ops of incremental decoding: key/value caches that persist across steps, and the candidates
// of one beam-search step. Kernels: kernels/cpu/decoding.h, kernels/cuda/decoding.h.
//
// A cache is an input leaf bound to a tensor the caller owns (decode/step_decoder.h): the ops
// below write into it IN PLACE (OpDef::updates_input0), so what a step writes is there at the next
// step. Their output is the same buffer, after the write; readers of the cache must read that
// output, which orders them after the write.
//
//   cache_gather(cache (R_in, T, H, Dh), origin i32 (R_out) [, filled i32 (R_out)]) → (R_out, T, H, Dh)
//       row r continues row origin[r]: the beams chosen by the last step, and sentences that
//       finished leaving the batch (R_out < R_in: the live rows move to the front). Only the first
//       filled[r] time slots are copied (all of them without `filled`).
//   cache_write(cache (R, T, H, Dh), x (R, 1, H, Dh), positions i32 (R)) → (R, T, H, Dh)
//       cache[r, positions[r]] = x[r, 0]: this step's key or value of every row. At the CPU's
//       bf16 matmul precision, x rounded to bf16 values (to nearest even, kept as fp32), the
//       rounding the bf16 attention applies to its K and V: done once here, an attention that
//       reads the cache is told so (AttentionOptions::kv_rounded) and does not round it again.
//   beam_candidates(logprobs (S·k, V), row_scores (S·k), eos_rule i32 (S·k)) → scores (S, n),
//       index i32 (S, n): per sentence, the n best extensions row_score + log p over its k rows
//       × V tokens, as row · V + token (kernels/cpu/decoding.h has the banned tokens and ties).
#pragma once
#include <cstdint>

#include "base/special_tokens.h"

#include "engine/graph.h"

namespace pillars::ops {

ValueId cache_gather(Graph& g, ValueId cache, ValueId origin, ValueId filled = kNoValue);
ValueId cache_write(Graph& g, ValueId cache, ValueId x, ValueId positions);

struct BeamCandidatesParams {
  int64_t beam = 1;       // k: rows per sentence
  int64_t candidates = 2; // n: extensions kept per sentence (fairseq keeps 2k)
  int32_t pad = tokens::kPad, bos = tokens::kBos, eos = tokens::kEos;
};
struct BeamCandidates {
  ValueId scores = kNoValue; // (S, n) f32: cumulative log-probabilities, best first; −inf past the eligible ones
  ValueId index = kNoValue;  // (S, n) i32: row-in-sentence · V + token; −1 past the eligible ones
};
BeamCandidates beam_candidates(Graph& g, ValueId logprobs, ValueId row_scores, ValueId eos_rule,
                               const BeamCandidatesParams& params);

} // namespace pillars::ops
