// GraphExtension: what a training method adds to the model's compiled steps — GHT's group-
// constrained loss (ght/gct_pass.h), a baseline's regulariser or head gates (ght/baselines.h), the
// V2S vote's Gram matrices. The steps (train/steps.h) call it at three moments:
//
//   build    configure(options, train)      ask for feature maps, target lengths, head gates
//            extend(graph, sites, loss, train)  append nodes to the forward graph; return the loss
//                                           to differentiate (autodiff runs after this)
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
  virtual void configure(Seq2SeqOptions& /*options*/, bool /*train*/) const {}
  virtual ValueId extend(Graph& /*g*/, const std::vector<AttentionSite>& /*sites*/, ValueId loss, bool /*train*/) {
    return loss;
  }
  virtual void bind(Executor& /*ex*/, const Graph& /*g*/, const StepInfo& /*info*/) {}
  virtual void after_run(const Executor& /*ex*/, const Graph& /*g*/, const StepInfo& /*info*/) {}
  // Adds the extension's own terms, averaged over the training runs since the last call, to a
  // progress line of log.jsonl (e.g. "gct_regularizer").
  virtual void log_terms(nlohmann::json& /*line*/) {}
};

} // namespace pillars::train
