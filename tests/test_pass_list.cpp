// The one list of passes (train/pass_list.h): each entry's condition on the step's context, the
// step graph's records (named values, run-time inputs, logged terms) surviving a rewrite, and the
// inputs bound and terms read by the compiled steps.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "models/transformer.h"
#include "steps/steps.h"
#include "train/experiment.h"
#include "train/pass_list.h"

using namespace pillars;
using namespace pillars::train;

namespace {

std::vector<std::string> names(const steps::PassList& passes) {
  std::vector<std::string> n;
  for (const steps::Pass& p : passes) n.push_back(p.name);
  return n;
}

Experiment experiment(const nlohmann::json& heads, const nlohmann::json& prune = nlohmann::json::object()) {
  nlohmann::json j = {{"task", "translation"},
                      {"data", {{"dataset", "multi30k-de-en"}, {"source", "de"}, {"target", "en"}}},
                      {"model", {{"config", "tiny"}}},
                      {"heads", heads}};
  if (!prune.empty()) j["prune"] = prune;
  return parse_experiment(j, "passes.json");
}

} // namespace

TEST_CASE("pass list: each entry runs where its condition on the experiment holds") {
  StepContext plain;
  plain.train = true;
  CHECK(names(step_passes(plain)) == std::vector<std::string>{"autodiff", "plan_memory"});
  plain.train = false;
  CHECK(names(step_passes(plain)) == std::vector<std::string>{"plan_memory"});

  const Experiment gct = experiment({{"regularizer", "gct"}, {"groups", 2}});
  StepContext c = step_context(gct);
  c.train = true;
  CHECK(names(step_passes(c)) == std::vector<std::string>{"gct", "autodiff", "plan_memory"});
  c.train = false; // validation measures the task loss alone
  CHECK(names(step_passes(c)) == std::vector<std::string>{"plan_memory"});

  // Fine-tuning after pruning: the regularizer off, unless prune.finetune_regularizer.
  const Experiment pruned = experiment({{"regularizer", "gct"}, {"groups", 2}}, {{"method", "v2s"}});
  StepContext f = finetune_context(pruned);
  f.train = true;
  CHECK(names(step_passes(f)) == std::vector<std::string>{"autodiff", "plan_memory"});
  const Experiment kept =
      experiment({{"regularizer", "gct"}, {"groups", 2}}, {{"method", "v2s"}, {"finetune_regularizer", true}});
  f = finetune_context(kept);
  f.train = true;
  CHECK(names(step_passes(f)) == std::vector<std::string>{"gct", "autodiff", "plan_memory"});

  // DropHead gates training steps only; Hard-Concrete gates both, and adds its L0 term in training.
  c = step_context(experiment({{"drophead", 0.2}, {"gates", "hard_concrete"}}));
  c.train = true;
  CHECK(names(step_passes(c)) == std::vector<std::string>{"head_gates", "hard_concrete_l0", "autodiff", "plan_memory"});
  c.train = false;
  CHECK(names(step_passes(c)) == std::vector<std::string>{"head_gates", "plan_memory"});
  c = step_context(experiment({{"drophead", 0.2}}));
  CHECK(names(step_passes(c)) == std::vector<std::string>{"plan_memory"});

  // The vote's forward-only steps, and Michel et al.'s gated training steps.
  StepContext v = vote_context(gct);
  CHECK(names(step_passes(v)) == std::vector<std::string>{"v2s_vote", "plan_memory"});
  StepContext i = importance_context(false);
  i.train = true;
  CHECK(names(step_passes(i)) == std::vector<std::string>{"head_gates", "autodiff", "plan_memory"});
  CHECK(!step_options(i).train); // no dropout: the gradient of the model's own function

  // The experiment's switches.
  c = step_context(experiment(nlohmann::json::object()));
  c.train = true;
  c.passes = {.fuse_linear = true, .fuse_cross_entropy = true, .bf16_saved_activations = true};
  CHECK(names(step_passes(c)) == std::vector<std::string>{"fuse_linear_activation", "fuse_linear_cross_entropy",
                                                          "autodiff", "saved_activations", "plan_memory"});
}

TEST_CASE("pass list: a fusion after the GCT pass keeps the step graph's records") {
  // The list puts the fusions first, but nothing depends on it: replace_graph moves every value the
  // step records, the methods' named values, run-time inputs and logged terms included.
  const TransformerConfig cfg = transformer_config("tiny");
  StepContext c = step_context(experiment({{"regularizer", "gct"}, {"groups", 2}}));
  c.train = true;
  steps::StepGraph s =
      steps::StepGraph::of(build_seq2seq_training_graph(cfg, 2, 5, 4, step_options(c)), true, Device::cpu);
  steps::PassList passes = step_passes(c); // gct, autodiff, plan_memory
  steps::PassList reordered;
  for (const PassEntry& p : pass_list())
    if (std::string(p.name) == "fuse_linear_activation")
      reordered.push_back({p.name, [run = p.run, c](steps::StepGraph& g) { run(g, c); }});
  passes.insert(passes.begin() + 1, reordered.front()); // gct, fuse_linear_activation, autodiff, plan_memory
  steps::run_passes(passes, s);
  const ValueId r = s.named_value("gct.regularizer");
  REQUIRE(r != kNoValue);
  CHECK(s.graph.producer(r).op != nullptr);
  CHECK(s.graph.shape(r).empty());
  REQUIRE(s.inputs.contains("gct.inverse_target_tokens"));
  CHECK(s.graph.find_input("gct.inverse_target_tokens") == s.inputs.at("gct.inverse_target_tokens").value);
  REQUIRE(s.terms.size() == 3); // gct_regularizer, gct_homogenization, gct_diversification
  for (const steps::LoggedTerm& t : s.terms) CHECK(s.graph.shape(t.value).empty());
}
