// The CUDA slots of cache_gather, cache_write and beam_candidates (engine/ops/decoding.cpp): each
// reads a cache as (R, T, W) — rows, slots, the rest flattened — and calls
// kernels/cuda/decoding.h.
//
// The caches update input 0 in place (OpDef::updates_input0): the executor makes output 0 a view
// of input 0's buffer (its first R_out rows), so cache_gather gets src == dst and gathers through
// its workspace, and cache_write writes into output 0.
#include "engine/ops/cuda/ops.h"
#include "engine/ops/decoding.h"
#include "kernels/cuda/decoding.h"

namespace pillars::cuda {
namespace {

struct CacheDims {
  int64_t R, T, W;
};
CacheDims dims_of(const Shape& s) { return {s[0], s[1], numel(s) / (s[0] * s[1])}; }

} // namespace

// inputs: cache (R_in, T, ...), origin i32 (R_out) [, filled i32 (R_out)] → (R_out, T, ...)
void op_cache_gather(const KernelContext& c) {
  const CacheDims in = dims_of(c.in[0].shape());
  const int32_t* filled = c.in.size() > 2 ? c.in[2].data<int32_t>() : nullptr;
  cache_gather({.R_in = in.R, .R_out = c.out[0].dim(0), .T = in.T, .W = in.W}, c.in[0].data<float>(),
               c.in[1].data<int32_t>(), filled, c.out[0].data<float>(), static_cast<float*>(c.workspace));
}

size_t op_cache_gather_workspace(const Graph& g, const Node& n) {
  return static_cast<size_t>(numel(g.shape(n.outputs[0]))) * sizeof(float); // the gathered rows
}

// inputs: cache (R, T, ...), x (R, 1, ...), positions i32 (R) → the cache, written
void op_cache_write(const KernelContext& c) {
  const CacheDims d = dims_of(c.out[0].shape());
  cache_write({.R = d.R, .T = d.T, .W = d.W}, c.in[1].data<float>(), c.in[2].data<int32_t>(), c.out[0].data<float>());
}

// inputs: logprobs (S·k, V), row_scores (S·k), eos_rule i32 (S·k) → scores (S, n), index i32 (S, n)
void op_beam_candidates(const KernelContext& c) {
  const ops::BeamCandidatesParams& p = params_of<ops::BeamCandidatesParams>(c.node);
  const int64_t V = c.in[0].dim(1), S = c.out[0].dim(0);
  beam_candidates(
      {.S = S, .k = p.beam, .V = V, .n = p.candidates, .tokens = {.pad = p.pad, .bos = p.bos, .eos = p.eos}},
      c.in[0].data<float>(), c.in[1].data<float>(), c.in[2].data<int32_t>(), c.out[0].data<float>(),
      c.out[1].data<int32_t>());
}

} // namespace pillars::cuda
