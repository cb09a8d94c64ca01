// The one list of passes: which passes a step runs, and in what order (train/pass_list.cpp).
//
//   StepContext c = step_context(experiment);          // the experiment's settings
//   Seq2SeqSteps steps(cfg, params, step_recipes(c));  // the model builder's options + the passes
//   pillars graph --passes                 prints the list; with an experiment, the entries it runs
//   pillars graph EXP.json --after gct     prints an experiment's training graph after a pass
//
// Every entry is {name, applies(context), run(step graph, context), what}: a step runs, in list
// order, the entries whose condition on its context holds. The list lives in train/ because it is
// the lowest folder that sees both the engine's passes and the methods' (ght/; the include DAG).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "engine/params.h"
#include "ght/settings.h"
#include "steps/steps.h"
#include "train/experiment.h"

namespace pillars::train {

// What a step is for: training the model, or one of the head-selection passes over it.
enum class StepPurpose : uint8_t {
  training,   // the run's training and validation steps (with the `heads` section's methods)
  vote,       // V2S's forward-only steps: each module's Gram matrix named for the vote (ght/voting.h)
  importance, // Michel et al.'s gated steps: ∂L/∂ξ of a gate fixed at 1 (ght/baselines.h §4)
};

// All that decides a step's model options and passes: a function of the experiment (and the phase).
struct StepContext {
  bool train = false; // a training step (dropout, autodiff) or an evaluation step
  StepPurpose purpose = StepPurpose::training;
  steps::PassSettings passes; // train.fuse_linear_activation, ..., train.saved_activations
  AttentionBackend attention_backend = AttentionBackend::pillars; // train.attention_backend
  float label_smoothing = 0;                                      // train.label_smoothing (training steps only)
  bool keep_label_smoothing = false;                              // importance steps: keep it (default: none)
  ght::HeadsSettings heads{};                                     // the `heads` section as this phase applies it
  uint64_t seed = 1; // the experiment's seed (K-means, DropHead, gate noise)
};

struct PassEntry {
  const char* name;
  bool (*applies)(const StepContext&);
  void (*run)(steps::StepGraph&, const StepContext&);
  const char* when; // applies(), in words, for `pillars graph --passes`
  const char* what; // what it adds to or removes from the graph
};

// Every pass a step may run, in the order it runs them.
std::span<const PassEntry> pass_list();

// The rewrite of a whole model (its config and parameters), after which every step's graph is
// built anew from the model builder: V2S's head removal (train/head_phases.cpp).
struct ModelPassInfo {
  const char *name, *when, *what;
};
std::span<const ModelPassInfo> model_pass_list();

// The entries of pass_list() that apply to `c`, bound to it.
steps::PassList step_passes(const StepContext& c);
// The model builder's options: dropout and label smoothing only when training; the feature maps
// (and target lengths) GCT, the disagreement or the vote read; no dropout for importance.
GraphOptions step_options(const StepContext& c);
// A training step and an evaluation step of `c` (c.train is set for each).
steps::StepRecipes step_recipes(StepContext c);

// The contexts of a run: its training (the experiment's settings), its fine-tuning after pruning
// (DropHead and gates off, the regularizer only with prune.finetune_regularizer), and the two
// head-selection passes (forward-only vote, gated importance: the plain step, no label smoothing).
StepContext step_context(const Experiment& e);
StepContext finetune_context(const Experiment& e);
StepContext vote_context(const Experiment& e);
StepContext importance_context(bool keep_label_smoothing);

// The parameters the context's methods train besides the model's (GCT's classifiers, the
// Hard-Concrete gates' log α), created where missing; checks heads.groups against every module.
void add_method_parameters(const StepContext& c, const TransformerConfig& cfg, ParamStore& params);

} // namespace pillars::train
