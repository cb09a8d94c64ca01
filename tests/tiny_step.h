// One training step of a tiny model through the step's pass list (train/pass_list.h), and a node
// counter: what the tests of the optional passes (saved_activations, fuse_linear_cross_entropy,
// fuse_linear_activation) compare with and without their pass.
//
//   TinyStep plain = tiny_step(cfg, store, {}), fused = tiny_step(cfg, store, {.passes = {.fuse_cross_entropy = true}});
//
// The batch: 8 sentence pairs of 24 source and 20 target tokens (a decoder-only config: 8 blocks
// of 20 tokens), fixed token patterns over ids 4..31, dropout on with fixed seeds, so two calls on
// the same parameters differ only by what the passes changed.
#pragma once
#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

#include "engine/executor.h"
#include "engine/op.h"
#include "models/transformer.h"
#include "train/pass_list.h"

namespace pillars::testing {

// Whether parameter `name`'s gradient is 0 in exact arithmetic: a key projection's bias adds the
// same q·b_k to every score of a query, which softmax ignores. A step holds rounding noise there,
// so tests check its size, not its agreement with another run.
inline bool gradient_is_zero_in_exact_arithmetic(const std::string& name) { return name.ends_with("k_proj.bias"); }

struct TinyStep {
  steps::StepGraph s; // the step's graph after its passes
  float loss = 0;
  std::map<std::string, std::vector<float>> grads; // parameter name → gradient
};

struct TinyStepOptions {
  steps::PassSettings passes{}; // the optional passes to run
  Device device = Device::cpu;
  bool mark_logits = false; // mark the logits a graph output before the passes run
  int64_t pad_every = 0;    // > 0: every pad_every-th target is the pad id (an ignored row)
  int runs = 1;             // > 1 on a GPU: capture the step as a CUDA graph and replay it
};

inline TinyStep tiny_step(const TransformerConfig& cfg, const ParamStore& store, const TinyStepOptions& opt) {
  GraphOptions o;
  o.label_smoothing = 0.1f;
  o.dropout_seed = 99;
  const int64_t batch = 8, src = 24, tgt = 20;
  TinyStep r;
  if (cfg.decoder_only)
    r.s = steps::StepGraph::of(build_lm_training_graph(cfg, batch, tgt, o), true, opt.device);
  else
    r.s = steps::StepGraph::of(build_seq2seq_training_graph(cfg, batch, src, tgt, o), true, opt.device);
  if (opt.mark_logits) r.s.graph.mark_output(r.s.logits);
  steps::run_passes(train::step_passes(train::StepContext{.train = true, .passes = opt.passes}), r.s);
  Executor ex(r.s.graph, opt.device, nullptr, r.s.memory);
  ParamStore params = store.on(opt.device);
  ex.bind_params(params);
  std::vector<int32_t> src_tokens, prev, target, src_len(batch, static_cast<int32_t>(src));
  for (int64_t i = 0; i < batch * src; ++i) src_tokens.push_back(static_cast<int32_t>(4 + (i * 7) % 28));
  for (int64_t i = 0; i < batch * tgt; ++i) prev.push_back(static_cast<int32_t>(4 + (i * 5) % 28));
  for (int64_t i = 0; i < batch * tgt; ++i) {
    const bool pad = opt.pad_every > 0 && i % opt.pad_every == opt.pad_every - 1;
    target.push_back(pad ? static_cast<int32_t>(cfg.pad_id) : static_cast<int32_t>(4 + (i * 5 + 5) % 28));
  }
  if (cfg.decoder_only) {
    ex.bind("tokens", Tensor::from_i32({batch, tgt}, prev));
  } else {
    ex.bind("src_tokens", Tensor::from_i32({batch, src}, src_tokens));
    ex.bind("src_lengths", Tensor::from_i32({batch}, src_len));
    ex.bind("prev_output_tokens", Tensor::from_i32({batch, tgt}, prev));
  }
  ex.bind("target", Tensor::from_i32({batch * tgt}, target));
  if (opt.runs > 1 && opt.device == Device::cuda) ex.enable_graph_capture(true);
  // Earlier runs (the warm-up, the capture) draw other dropout masks, so the values read after the
  // last run are that run's own: on a GPU a replayed graph that skipped a node would show.
  for (int run = 0; run < opt.runs; ++run) {
    ex.set_seed(run + 1 == opt.runs ? 17 : 16 - run);
    ex.run();
  }
  if (opt.runs > 1 && opt.device == Device::cuda) CHECK(ex.replaying_graph());
  r.loss = ex.fetch(r.s.loss).to_vector()[0];
  for (size_t i = 0; i < r.s.params.size(); ++i)
    if (r.s.grads[i] != kNoValue) r.grads[r.s.graph.producer(r.s.params[i]).name] = ex.fetch(r.s.grads[i]).to_vector();
  return r;
}

// The nodes of op `name` in g.
inline int count_op(const Graph& g, const char* name) {
  int n = 0;
  for (const Node& node : g.nodes()) n += std::string(node.op->name) == name;
  return n;
}

} // namespace pillars::testing
