// GraphExtension: what a training method adds to a step — GHT's group-constrained loss
// (ght/gct_pass.h), a baseline's regulariser or head gates (ght/baselines.h), the V2S vote's Gram
// matrices (ght/voting.h). The steps (steps/steps.h) call it at four moments:
//
//   build    configure(options, train)      ask the model builder for feature maps (A), target
//                                           lengths, no dropout
//   passes   head_gate(graph, site, m, train)   the gates ξ (H) of module m, for the head_gates pass
//   passes   extend(graph, sites, loss, train)  the method's pass (pass_name(), placed by the one
//                                           list, steps/pass_list.cpp): append nodes to the graph,
//                                           return the new objective
//   run      bind(executor, graph, info)    feed the extension's own inputs before every run
//            after_run(executor, graph, info)   read what it computed (Gram matrices, loss terms)
//   log      log_terms(line)                add its averaged terms to the trainer's progress line
//
// An extension never sees the trainer: what it needs to know about the run (the update number, how
// far training has gone) it is told through StepInfo.
#pragma once
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/executor.h"
#include "models/transformer.h"
#include "steps/pass.h"

namespace pillars::train {

struct StepInfo {
  int64_t target_tokens = 0; // non-pad target tokens of the batch
  uint64_t seed = 0;         // the run's seed (dropout stream); 0 in evaluation
  int64_t update = 0;        // the update this run belongs to (1-based; 0 in evaluation)
  double progress = 0;       // update / planned updates, in [0, 1]
  bool train = false;
};

class GraphExtension {
 public:
  virtual ~GraphExtension() = default;
  virtual void configure(GraphOptions& /*options*/, bool /*train*/) const {}
  // The name of this extension's pass in the one list (steps/pass_list.cpp); nullptr: it adds no
  // nodes, and extend() is never called.
  virtual const char* pass_name() const { return nullptr; }
  virtual ValueId extend(Graph& /*g*/, const std::vector<AttentionSite>& /*sites*/, ValueId loss, bool /*train*/) {
    return loss;
  }
  // Head gates: ξ (H) of attention module `module_index` (graph order), appended to `g`; kNoValue
  // when this part does not gate it. The pass "head_gates" multiplies the gates of every part that
  // gates_heads() and feeds out_proj with ξ_h·O_h instead of O_h (steps/head_gates.h).
  virtual bool gates_heads() const { return false; }
  virtual ValueId head_gate(Graph& /*g*/, const AttentionSite& /*site*/, size_t /*module_index*/, bool /*train*/) {
    return kNoValue;
  }
  // A watcher (a test, a tool) marks here the values it reads after a run: called by the pass
  // "probe", after the method's passes and before autodiff, on the parts whose probes() is true.
  virtual bool probes() const { return false; }
  virtual void probe(StepGraph& /*s*/) {}
  // The single extensions this one is made of (a composite lists its parts; the others themselves).
  virtual std::vector<GraphExtension*> parts() { return {this}; }
  virtual void bind(Executor& /*ex*/, const Graph& /*g*/, const StepInfo& /*info*/) {}
  virtual void after_run(const Executor& /*ex*/, const Graph& /*g*/, const StepInfo& /*info*/) {}
  // Adds the extension's own terms, averaged over the training runs since the last call, to a
  // progress line of log.jsonl (e.g. "gct_regularizer").
  virtual void log_terms(nlohmann::json& /*line*/) {}
};

} // namespace pillars::train
