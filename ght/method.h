// From an experiment's `heads` section to the graph extension that trains it: GCT (GHT), Li et
// al.'s disagreement, Scheduled DropHead, hard-concrete gates — several may be combined (e.g. GCT
// with DropHead), so the result is a CompositeExtension of the chosen parts.
#pragma once
#include <memory>
#include <vector>

#include "engine/params.h"
#include "models/transformer.h"
#include "ght/settings.h"
#include "steps/extension.h"

namespace pillars::ght {

// Calls every part in order (configure, bind, after_run, log_terms); their passes run in the order
// of the one pass list.
class CompositeExtension : public train::GraphExtension {
 public:
  void add(std::shared_ptr<train::GraphExtension> part) { parts_.push_back(std::move(part)); }
  bool empty() const { return parts_.empty(); }
  const std::vector<std::shared_ptr<train::GraphExtension>>& parts() const { return parts_; }
  void configure(GraphOptions& options, bool train) const override;
  // The parts, whose passes the pass list places (steps/pass_list.cpp).
  std::vector<train::GraphExtension*> parts() override;
  void bind(Executor& ex, const Graph& g, const train::StepInfo& info) override;
  void after_run(const Executor& ex, const Graph& g, const train::StepInfo& info) override;
  void log_terms(nlohmann::json& line) override;

 private:
  std::vector<std::shared_ptr<train::GraphExtension>> parts_;
};

// The extension for `heads` (nullptr when the section asks for nothing). Creates the parameters a
// part needs (GCT classifiers, gate logits) in `params`. `finetune` = the phase after pruning:
// gates and DropHead are off, and the regulariser only if prune.finetune_regularizer.
// `seed` is the experiment's seed (K-means draws, DropHead and gate noise).
std::shared_ptr<CompositeExtension> head_extension(const HeadsSettings& h, const PruneSettings& prune, uint64_t seed,
                                                   const TransformerConfig& cfg, ParamStore& params, bool finetune);

} // namespace pillars::ght
