// The one list of passes (see pass_list.h). A step runs, in this order, the entries whose
// condition holds: the model's forward graph goes in, and the executor runs what comes out.
#include "train/pass_list.h"

#include <array>

#include "base/error.h"
#include "engine/passes/autodiff.h"
#include "engine/passes/fuse_linear.h"
#include "engine/passes/fuse_linear_cross_entropy.h"
#include "engine/passes/plan_memory.h"
#include "engine/passes/saved_activations.h"
#include "ght/baselines.h"
#include "ght/feature_maps.h"
#include "ght/gct_pass.h"
#include "ght/voting.h"
#include "steps/head_gates.h"
#include "train/experiment.h"

namespace pillars::train {

namespace {

using ght::HeadGates;
using ght::Regularizer;

bool training(const StepContext& c) { return c.train && c.purpose == StepPurpose::training; }

// ---- the methods' settings, read off the context ----

ght::GctSettings gct_settings(const StepContext& c) {
  return {.feature_map = c.heads.feature_map,
          .groups = static_cast<int>(c.heads.groups),
          .alpha = static_cast<float>(c.heads.alpha),
          .beta = static_cast<float>(c.heads.beta),
          .classification = c.heads.gct_variant == ght::GctVariant::classification,
          .per_token = c.heads.gct_scale == ght::GctScale::per_token,
          .seed = c.seed};
}

ght::HardConcreteSettings hard_concrete_settings(const StepContext& c) {
  ght::HardConcreteSettings s;
  s.lambda = static_cast<float>(c.heads.l0_lambda);
  s.seed = c.seed;
  return s;
}

// The gates of the head_gates pass, in the order they multiply.
std::vector<steps::HeadGate> head_gates_of(const StepContext& c) {
  std::vector<steps::HeadGate> gates;
  if (training(c) && c.heads.drophead > 0)
    gates.push_back(ght::drophead_gate({.p_max = static_cast<float>(c.heads.drophead), .seed = c.seed}));
  if (c.purpose == StepPurpose::training && c.heads.gates == HeadGates::hard_concrete)
    gates.push_back(ght::hard_concrete_gate(hard_concrete_settings(c)));
  if (c.train && c.purpose == StepPurpose::importance) gates.push_back(ght::importance_gate());
  return gates;
}

// ---- the engine's passes, as StepGraph functions ----

void fuse_linear_pass(steps::StepGraph& s, const StepContext&) {
  RewrittenGraph f = fuse_linear_activation(s.graph);
  s.replace_graph(std::move(f.graph), f.value_map, f.node_map);
}

// The logits are gone from the new graph: the step records none.
void fuse_linear_cross_entropy_pass(steps::StepGraph& s, const StepContext& c) {
  RewrittenGraph f = fuse_linear_cross_entropy(s.graph, c.passes.cross_entropy_block_bytes);
  if (s.logits != kNoValue && f.value(s.logits) == kNoValue) s.logits = kNoValue;
  s.replace_graph(std::move(f.graph), f.value_map, f.node_map);
}

void autodiff_pass(steps::StepGraph& s, const StepContext&) {
  if (s.objective != s.loss) s.graph.mark_output(s.objective); // the caller may read the total
  s.params = s.graph.params();
  s.first_backward_node = static_cast<int>(s.graph.nodes().size());
  s.grads = autodiff(s.graph, s.objective, s.params);
}

// Edits the graph in place: values keep their numbers; the node indices the step records move.
void saved_activations_pass(steps::StepGraph& s, const StepContext&) {
  PILLARS_CHECK(s.first_backward_node >= 0, "saved_activations runs after autodiff");
  const std::vector<const OpDef*> ops_before = steps::StepGraph::ops_of(s.graph);
  std::vector<ValueId> same(static_cast<size_t>(s.graph.num_values()));
  for (size_t v = 0; v < same.size(); ++v) same[v] = static_cast<ValueId>(v);
  const SavedActivations r = store_saved_activations_bf16(s.graph, s.first_backward_node);
  s.renumber(ops_before, same, r.node_map);
  s.first_backward_node = r.first_backward_node;
}

// ---- the list ----

const std::array kPasses = {
    PassEntry{"fuse_linear_activation", [](const StepContext& c) { return c.passes.fuse_linear; }, fuse_linear_pass,
              "train.fuse_linear_activation",
              "replaces each linear → ReLU/GELU chain (matmul, add, activation) by one linear_act node "
              "(engine/passes/fuse_linear.h)"},
    PassEntry{"fuse_linear_cross_entropy", [](const StepContext& c) { return c.train && c.passes.fuse_cross_entropy; },
              fuse_linear_cross_entropy_pass, "train.fuse_linear_cross_entropy; training steps",
              "replaces the language-model head and its loss (matmul → cross_entropy) by one "
              "linear_cross_entropy node, which sweeps the rows in blocks and makes the gradients of "
              "the head's input and weight as it goes: the (N, V) logits are never stored "
              "(engine/passes/fuse_linear_cross_entropy.h)"},
    PassEntry{"head_gates", [](const StepContext& c) { return !head_gates_of(c).empty(); },
              [](steps::StepGraph& s, const StepContext& c) { steps::gate_heads(s, head_gates_of(c)); },
              "heads.drophead > 0 (training steps), heads.gates = hard_concrete, or Michel et al.'s "
              "importance steps",
              "per attention module the gates ξ (H): DropHead's mask input, the Hard-Concrete gate, the "
              "importance gate, multiplied; and ξ_h·O_h in front of out_proj (steps/head_gates.h)"},
    PassEntry{"gct", [](const StepContext& c) { return training(c) && c.heads.regularizer == Regularizer::gct; },
              [](steps::StepGraph& s, const StepContext& c) { ght::gct(s, gct_settings(c)); },
              "heads.regularizer = gct; training steps",
              "per attention module m: the Gram matrix G_m of the heads' feature maps (head_gram), the "
              "HUDS groups of the heads (huds_cluster: K-means on G_m, every batch) and the GCT loss "
              "R_m (gct_metric_loss, Eq. 4(B); or a classifier's, Eq. 4(A)); adds s·Σ_m R_m to the "
              "objective (ght/gct_pass.h)"},
    PassEntry{"disagreement",
              [](const StepContext& c) { return training(c) && c.heads.regularizer == Regularizer::disagreement; },
              [](steps::StepGraph& s, const StepContext& c) {
                ght::disagreement(s, {.feature_map = ght::feature_map_of(c.heads.disagreement),
                                      .lambda = static_cast<float>(c.heads.lambda)});
              },
              "heads.regularizer = disagreement; training steps",
              "per attention module the mean pairwise cosine D_m of its heads' feature maps; adds "
              "λ·(1/M)·Σ_m D_m to the objective (ght/baselines.h)"},
    PassEntry{"hard_concrete_l0",
              [](const StepContext& c) { return training(c) && c.heads.gates == HeadGates::hard_concrete; },
              [](steps::StepGraph& s, const StepContext& c) { ght::hard_concrete_l0(s, hard_concrete_settings(c)); },
              "heads.gates = hard_concrete; training steps",
              "the mean probability that a head's gate is open (the L0 term); adds λ times it to the "
              "objective (ght/baselines.h)"},
    PassEntry{"v2s_vote", [](const StepContext& c) { return !c.train && c.purpose == StepPurpose::vote; },
              [](steps::StepGraph& s, const StepContext& c) { ght::v2s_vote(s, c.heads.feature_map); },
              "prune.method = v2s; the vote's forward-only steps",
              "per attention module the Gram matrix of the heads' feature maps, named for the vote "
              "(ght/voting.h)"},
    PassEntry{"autodiff", [](const StepContext& c) { return c.train; }, autodiff_pass, "training steps",
              "appends the backward graph: the gradient of the objective with respect to every "
              "parameter (engine/passes/autodiff.h)"},
    PassEntry{"saved_activations", [](const StepContext& c) { return c.train && c.passes.bf16_saved_activations; },
              saved_activations_pass, "train.saved_activations = bf16; training steps",
              "casts the activations the backward reads to bf16 right after the forward computes them, "
              "and back to f32 right before each node that reads them again (the backward's, and the "
              "layer norms, attention and cross-entropy whose statistics the backward reads): half the "
              "bytes live from the forward to the backward (engine/passes/saved_activations.h)"},
    PassEntry{"plan_memory", [](const StepContext&) { return true; },
              [](steps::StepGraph& s, const StepContext&) { s.memory = plan_memory(s.graph, s.device); }, "every step",
              "adds no node: gives every computed value its offset in one arena, reusing the bytes of "
              "dead values (engine/passes/plan_memory.h)"},
};

constexpr std::array kModelPasses = {
    ModelPassInfo{"remove_heads", "prune.method is set; between training and fine-tuning (train/head_phases.h)",
                  "removes the heads V2S (or a baseline's scores) did not keep: slices their rows of W^Q, "
                  "W^K, W^V and columns of W^out, and records the smaller head counts in the config, so "
                  "every step's graph is built anew with fewer heads (ght/prune.h)"},
};

} // namespace

std::span<const PassEntry> pass_list() { return kPasses; }
std::span<const ModelPassInfo> model_pass_list() { return kModelPasses; }

steps::PassList step_passes(const StepContext& c) {
  steps::PassList list;
  for (const PassEntry& p : kPasses)
    if (p.applies(c)) list.push_back({p.name, [run = p.run, c](steps::StepGraph& s) { run(s, c); }});
  return list;
}

GraphOptions step_options(const StepContext& c) {
  GraphOptions o;
  o.label_smoothing = c.train ? c.label_smoothing : 0.0f;
  // The dropout seed is a graph attribute (the base of its Philox stream); the executor adds a
  // per-run seed, so one graph serves every step.
  o.dropout_seed = 0;
  o.train = c.train;
  o.attention_backend = c.attention_backend;
  if (training(c) && c.heads.regularizer == Regularizer::gct) ght::request_feature_map(o, c.heads.feature_map);
  if (training(c) && c.heads.regularizer == Regularizer::disagreement)
    ght::request_feature_map(o, ght::feature_map_of(c.heads.disagreement));
  if (!c.train && c.purpose == StepPurpose::vote) ght::request_feature_map(o, c.heads.feature_map);
  if (c.train && c.purpose == StepPurpose::importance) {
    o.train = false; // no dropout: the gradient of the model's own function
    if (!c.keep_label_smoothing) o.label_smoothing = 0.0f;
  }
  return o;
}

steps::StepRecipes step_recipes(StepContext c) {
  steps::StepRecipes r;
  c.train = true;
  r.train = {step_options(c), step_passes(c)};
  c.train = false;
  r.eval = {step_options(c), step_passes(c)};
  return r;
}

StepContext step_context(const Experiment& e) {
  StepContext c;
  c.passes = {.fuse_linear = e.train.fuse_linear_activation,
              .fuse_cross_entropy = e.train.fuse_linear_cross_entropy,
              .bf16_saved_activations = e.train.saved_activations == Precision::bf16};
  c.attention_backend = e.train.attention_backend;
  c.label_smoothing = static_cast<float>(e.train.label_smoothing);
  c.heads = e.heads;
  c.seed = static_cast<uint64_t>(e.seed);
  return c;
}

StepContext finetune_context(const Experiment& e) {
  StepContext c = step_context(e);
  c.heads.drophead = 0;
  c.heads.gates = HeadGates::none;
  if (!e.prune.finetune_regularizer) c.heads.regularizer = Regularizer::none;
  return c;
}

StepContext vote_context(const Experiment& e) {
  StepContext c;
  c.purpose = StepPurpose::vote;
  c.heads.feature_map = e.heads.feature_map;
  c.heads.groups = e.heads.groups;
  c.seed = static_cast<uint64_t>(e.seed);
  return c;
}

StepContext importance_context(bool keep_label_smoothing) {
  StepContext c;
  c.purpose = StepPurpose::importance;
  c.keep_label_smoothing = keep_label_smoothing;
  return c;
}

void add_method_parameters(const StepContext& c, const TransformerConfig& cfg, ParamStore& params) {
  if (c.purpose != StepPurpose::training) return;
  if (c.heads.regularizer == Regularizer::gct) {
    for (const std::string& module : attention_modules(cfg))
      if (cfg.heads_of(module) < c.heads.groups)
        throw InputError(str_cat("\"heads.groups\" (", c.heads.groups, ") exceeds the ", cfg.heads_of(module),
                                 " heads of ", module));
    ght::add_gct_parameters(params, cfg, gct_settings(c), c.seed);
  }
  if (c.heads.gates == HeadGates::hard_concrete) ght::add_hard_concrete_parameters(params, cfg);
}

} // namespace pillars::train
