// Key/value caches and beam candidates (see decoding.h).
//
// cache_gather and cache_write update their input 0 in place (OpDef::updates_input0): the memory
// planner gives output 0 input 0's bytes, and the executor runs the kernel on that one buffer. On
// the CPU the adapters still copy input 0 to output 0 when the two differ, which happens only on
// the GPU's host fallback (separate pinned mirrors), and cache_gather then gathers from one into
// the other: the same function.
#include "engine/ops/decoding.h"

#include <cstring>

#include "engine/ops/common.h"
#include "kernels/cpu/decoding.h"
#include "kernels/cpu/gemm_precision.h"

namespace pillars::ops {
namespace {

// A cache must be bound from outside the graph (an input leaf), possibly through earlier in-place
// updates: writing into a value the graph computed would change it under its other readers.
void require_state(const Graph& g, const char* op, ValueId cache) {
  ValueId v = cache;
  while (!is_leaf(g.producer(v)) && g.producer(v).op->updates_input0) v = g.producer(v).inputs[0];
  PILLARS_CHECK(g.producer(v).op == &kInputOp, op,
                ": the cache must be a graph input (state bound by the caller), got a ", g.producer(v).op->name);
}

void expect_i32_rows(const Graph& g, const char* op, ValueId v, int64_t rows, const char* what) {
  const Shape& s = g.shape(v);
  PILLARS_CHECK(g.dtype(v) == DType::i32 && numel(s) == rows && !s.empty() && s[0] == rows, op, ": ", what,
                " must be i32 with ", rows, " rows, got ", dtype_name(g.dtype(v)), shape_str(s));
}

// Rows, slots and floats per slot of a cache (R, T, ...).
struct CacheDims {
  int64_t R, T, W;
};
CacheDims dims_of(const Shape& s) { return {s[0], s[1], numel(s) / (s[0] * s[1])}; }

void copy_if_separate(const KernelContext& c) {
  if (c.out[0].raw() != c.in[0].raw()) std::memcpy(c.out[0].raw(), c.in[0].raw(), c.out[0].nbytes());
}

// inputs: cache (R_in, T, ...), origin (R_out) [, filled (R_out)]
std::vector<OutputSpec> infer_gather(const Graph& g, const Node& n) {
  detail::expect_f32("cache_gather", g, n.inputs[0]);
  Shape s = g.shape(n.inputs[0]);
  PILLARS_CHECK(s.size() >= 2, "cache_gather: the cache must be (rows, slots, ...), got ", shape_str(s));
  const int64_t rows = g.shape(n.inputs[1]).empty() ? 0 : g.shape(n.inputs[1])[0];
  expect_i32_rows(g, "cache_gather", n.inputs[1], rows, "origin");
  PILLARS_CHECK(rows >= 1 && rows <= s[0], "cache_gather: ", rows, " rows out of a cache of ", s[0]);
  if (n.inputs.size() > 2) expect_i32_rows(g, "cache_gather", n.inputs[2], rows, "filled");
  s[0] = rows;
  return {{s, DType::f32}};
}

void cpu_gather(const KernelContext& c) {
  const CacheDims in = dims_of(c.in[0].shape());
  const int32_t* filled = c.in.size() > 2 ? c.in[2].data<int32_t>() : nullptr;
  cpu::cache_gather({.R_in = in.R, .R_out = c.out[0].dim(0), .T = in.T, .W = in.W}, c.in[0].data<float>(),
                    c.in[1].data<int32_t>(), filled, c.out[0].data<float>(), static_cast<float*>(c.workspace));
}

size_t gather_workspace(const Graph& g, const Node& n) {
  return static_cast<size_t>(numel(g.shape(n.outputs[0]))) * sizeof(float); // the gathered rows
}

// inputs: cache (R, T, ...), x (R, 1, ...), positions (R) or (R, 1)
std::vector<OutputSpec> infer_write(const Graph& g, const Node& n) {
  detail::expect_f32("cache_write", g, n.inputs[0]);
  detail::expect_f32("cache_write", g, n.inputs[1]);
  const Shape &s = g.shape(n.inputs[0]), &x = g.shape(n.inputs[1]);
  PILLARS_CHECK(s.size() >= 2 && x.size() == s.size() && x[0] == s[0] && x[1] == 1 &&
                    std::equal(x.begin() + 2, x.end(), s.begin() + 2),
                "cache_write: x ", shape_str(x), " is not one slot of the cache ", shape_str(s));
  expect_i32_rows(g, "cache_write", n.inputs[2], s[0], "positions");
  return {{s, DType::f32}};
}

// At the CPU's bf16 matmul precision the slot is stored rounded to bf16 values: the fused attention
// reads such a cache without rounding it again (AttentionOptions::kv_rounded).
void cpu_write(const KernelContext& c) {
  copy_if_separate(c);
  const CacheDims d = dims_of(c.out[0].shape());
  const bool bf16 = cpu::matmul_precision() == Precision::bf16;
  cpu::cache_write({.R = d.R, .T = d.T, .W = d.W, .bf16 = bf16}, c.in[1].data<float>(), c.in[2].data<int32_t>(),
                   c.out[0].data<float>());
}

// inputs: logprobs (S·k, V), row_scores (S·k), eos_rule (S·k)
std::vector<OutputSpec> infer_beam(const Graph& g, const Node& n) {
  const BeamCandidatesParams& p = params_of<BeamCandidatesParams>(n);
  detail::expect_f32("beam_candidates", g, n.inputs[0]);
  detail::expect_f32("beam_candidates", g, n.inputs[1]);
  const Shape& lp = g.shape(n.inputs[0]);
  PILLARS_CHECK(lp.size() == 2 && p.beam >= 1 && lp[0] % p.beam == 0, "beam_candidates: log-probabilities ",
                shape_str(lp), " are not (sentences · beam ", p.beam, ", V)");
  PILLARS_CHECK(g.shape(n.inputs[1]) == Shape{lp[0]}, "beam_candidates: row scores ", shape_str(g.shape(n.inputs[1])),
                " for ", lp[0], " rows");
  expect_i32_rows(g, "beam_candidates", n.inputs[2], lp[0], "eos_rule");
  PILLARS_CHECK(p.candidates >= 1 && p.beam * lp[1] < (int64_t{1} << 31), "beam_candidates: bad candidate count ",
                p.candidates, " or a beam × vocabulary beyond i32");
  const Shape out{lp[0] / p.beam, p.candidates};
  return {{out, DType::f32}, {out, DType::i32}};
}

void cpu_beam(const KernelContext& c) {
  const BeamCandidatesParams& p = params_of<BeamCandidatesParams>(c.node);
  const int64_t V = c.in[0].dim(1), S = c.out[0].dim(0);
  cpu::beam_candidates(
      {.S = S, .k = p.beam, .V = V, .n = p.candidates, .tokens = {.pad = p.pad, .bos = p.bos, .eos = p.eos}},
      c.in[0].data<float>(), c.in[1].data<float>(), c.in[2].data<int32_t>(), c.out[0].data<float>(),
      c.out[1].data<int32_t>());
}

std::string print_beam(const Node& n) {
  const BeamCandidatesParams& p = params_of<BeamCandidatesParams>(n);
  return str_cat(" beam=", p.beam, " candidates=", p.candidates);
}

NodeFlops no_flops(const Graph&, const Node&) { return {}; }

const OpDef kCacheGather{.name = "cache_gather",
                         .infer = infer_gather,
                         .cpu = cpu_gather,
                         .cuda = PILLARS_CUDA_KERNEL(cache_gather),
                         .workspace = gather_workspace,
                         .cuda_workspace = PILLARS_CUDA_WORKSPACE(cache_gather),
                         .flops = no_flops,
                         .updates_input0 = true};
const OpDef kCacheWrite{.name = "cache_write",
                        .infer = infer_write,
                        .cpu = cpu_write,
                        .cuda = PILLARS_CUDA_KERNEL(cache_write),
                        .flops = no_flops,
                        .updates_input0 = true};
const OpDef kBeamCandidates{.name = "beam_candidates",
                            .infer = infer_beam,
                            .cpu = cpu_beam,
                            .cuda = PILLARS_CUDA_KERNEL(beam_candidates),
                            .print = print_beam};

} // namespace

ValueId cache_gather(Graph& g, ValueId cache, ValueId origin, ValueId filled) {
  require_state(g, "cache_gather", cache);
  std::vector<ValueId> in{cache, origin};
  if (filled != kNoValue) in.push_back(filled);
  return g.add1(kCacheGather, std::move(in));
}

ValueId cache_write(Graph& g, ValueId cache, ValueId x, ValueId positions) {
  require_state(g, "cache_write", cache);
  return g.add1(kCacheWrite, {cache, x, positions});
}

BeamCandidates beam_candidates(Graph& g, ValueId logprobs, ValueId row_scores, ValueId eos_rule,
                               const BeamCandidatesParams& params) {
  const std::vector<ValueId> out = g.add(kBeamCandidates, {logprobs, row_scores, eos_rule}, params);
  return {out[0], out[1]};
}

} // namespace pillars::ops
