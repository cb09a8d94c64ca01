// The one list of passes (see pass_list.h). A step runs, in this order, the entries that apply:
// the model's forward graph goes in, and the executor runs what comes out.
#include "steps/pass_list.h"

#include <array>
#include <cstring>

#include "base/error.h"
#include "engine/passes/autodiff.h"
#include "engine/passes/fuse_linear.h"
#include "engine/passes/fuse_linear_cross_entropy.h"
#include "engine/passes/plan_memory.h"
#include "engine/passes/saved_activations.h"
#include "steps/head_gates.h"

namespace pillars::train {

namespace {

constexpr std::array kPasses = {
    // The two fusions come first: they build new graphs, which renumbers values, and the passes
    // after them (the head gates' extensions, GCT, the vote) record value numbers they bind or read.
    PassInfo{"fuse_linear_activation", "train.fuse_linear_activation",
             "replaces each linear → ReLU/GELU chain (matmul, add, activation) by one linear_act node "
             "(engine/passes/fuse_linear.h)"},
    PassInfo{"fuse_linear_cross_entropy", "train.fuse_linear_cross_entropy; training steps",
             "replaces the language-model head and its loss (matmul → cross_entropy) by one "
             "linear_cross_entropy node, which sweeps the rows in blocks and makes the gradients of "
             "the head's input and weight as it goes: the (N, V) logits are never stored "
             "(engine/passes/fuse_linear_cross_entropy.h)"},
    PassInfo{"head_gates", "heads.drophead > 0 or heads.gates = hard_concrete (and Michel et al.'s importance)",
             "per attention module the gates ξ (H) of the method's parts (DropHead's mask input, the "
             "Hard-Concrete gate, an importance gate) and ξ_h·O_h in front of out_proj "
             "(steps/head_gates.h)"},
    PassInfo{"gct", "heads.regularizer = gct; training steps",
             "per attention module m: the Gram matrix G_m of the heads' feature maps (head_gram), the "
             "HUDS groups of the heads (huds_cluster: K-means on G_m, every batch) and the GCT loss "
             "R_m (gct_metric_loss, Eq. 4(B); or a classifier's, Eq. 4(A)); adds s·Σ_m R_m to the "
             "objective (ght/gct_pass.h)"},
    PassInfo{"disagreement", "heads.regularizer = disagreement; training steps",
             "per attention module the mean pairwise cosine D_m of its heads' feature maps; adds "
             "λ·(1/M)·Σ_m D_m to the objective (ght/baselines.h)"},
    PassInfo{"hard_concrete_l0", "heads.gates = hard_concrete; training steps",
             "the mean probability that a head's gate is open (the L0 term); adds λ times it to the "
             "objective (ght/baselines.h)"},
    PassInfo{"v2s_vote", "prune.method = v2s; the vote's forward-only steps",
             "per attention module the Gram matrix of the heads' feature maps, kept as an output for "
             "the vote (ght/voting.h)"},
    PassInfo{"probe", "an extension that watches the step (tests, tools)",
             "adds no node: the watcher marks as outputs the values it reads after a run "
             "(GraphExtension::probe)"},
    PassInfo{"autodiff", "training steps",
             "appends the backward graph: the gradient of the objective with respect to every "
             "parameter (engine/passes/autodiff.h)"},
    PassInfo{"saved_activations", "train.saved_activations = bf16; training steps",
             "casts the activations the backward reads to bf16 right after the forward computes them, "
             "and back to f32 right before each node that reads them again (the backward's, and the "
             "layer norms, attention and cross-entropy whose statistics the backward reads): half the "
             "bytes live from the forward to the backward (engine/passes/saved_activations.h)"},
    PassInfo{"plan_memory", "every step",
             "adds no node: gives every computed value its offset in one arena, reusing the bytes of "
             "dead values (engine/passes/plan_memory.h)"},
};

constexpr std::array kModelPasses = {
    PassInfo{"remove_heads", "prune.method is set; between training and fine-tuning (train/head_phases.h)",
             "removes the heads V2S (or a baseline's scores) did not keep: slices their rows of W^Q, "
             "W^K, W^V and columns of W^out, and records the smaller head counts in the config, so "
             "every step's graph is built anew with fewer heads (ght/prune.h)"},
};

void fuse_linear_pass(StepGraph& s) {
  RewrittenGraph f = fuse_linear_activation(s.graph);
  s.replace_graph(std::move(f.graph), f.value_map, f.node_map);
}

// The logits are gone from the new graph: the step records none.
void fuse_linear_cross_entropy_pass(StepGraph& s, int64_t block_bytes) {
  RewrittenGraph f = fuse_linear_cross_entropy(s.graph, block_bytes);
  if (s.logits != kNoValue && f.value(s.logits) == kNoValue) s.logits = kNoValue;
  s.replace_graph(std::move(f.graph), f.value_map, f.node_map);
}

void autodiff_pass(StepGraph& s) {
  if (s.objective != s.loss) s.graph.mark_output(s.objective); // the caller may read the total
  s.params = s.graph.params();
  s.first_backward_node = static_cast<int>(s.graph.nodes().size());
  s.grads = autodiff(s.graph, s.objective, s.params);
}

// Edits the graph in place, so the values the method's passes recorded keep their numbers; the
// node indices the step records move.
void saved_activations_pass(StepGraph& s) {
  PILLARS_CHECK(s.first_backward_node >= 0, "saved_activations runs after autodiff");
  const std::vector<const OpDef*> ops_before = StepGraph::ops_of(s.graph);
  std::vector<ValueId> same(static_cast<size_t>(s.graph.num_values())); // values keep their numbers
  for (size_t v = 0; v < same.size(); ++v) same[v] = static_cast<ValueId>(v);
  const SavedActivations r = store_saved_activations_bf16(s.graph, s.first_backward_node);
  s.renumber(ops_before, same, r.node_map);
  s.first_backward_node = r.first_backward_node;
}

void plan_memory_pass(StepGraph& s) { s.memory = plan_memory(s.graph, s.device); }

} // namespace

std::span<const PassInfo> pass_list() { return kPasses; }
std::span<const PassInfo> model_pass_list() { return kModelPasses; }

PassList step_passes(bool train, const PassSettings& settings, GraphExtension* extension) {
  std::vector<GraphExtension*> parts;
  if (extension)
    for (GraphExtension* p : extension->parts())
      if (p->pass_name()) parts.push_back(p);
  for (GraphExtension* p : parts) {
    bool listed = false;
    for (const PassInfo& info : kPasses) listed = listed || std::strcmp(info.name, p->pass_name()) == 0;
    PILLARS_CHECK(listed, "pass \"", p->pass_name(), "\" is not in the pass list (steps/pass_list.cpp)");
  }
  PassList list;
  for (const PassInfo& info : kPasses) {
    if (std::strcmp(info.name, "head_gates") == 0) {
      std::vector<GraphExtension*> gating;
      if (extension)
        for (GraphExtension* p : extension->parts())
          if (p->gates_heads()) gating.push_back(p);
      if (!gating.empty()) list.push_back({info.name, [gating](StepGraph& s) { gate_heads(s, gating); }});
    } else if (std::strcmp(info.name, "fuse_linear_activation") == 0) {
      if (settings.fuse_linear) list.push_back({info.name, fuse_linear_pass});
    } else if (std::strcmp(info.name, "fuse_linear_cross_entropy") == 0) {
      if (train && settings.fuse_cross_entropy)
        list.push_back({info.name, [bytes = settings.cross_entropy_block_bytes](StepGraph& s) {
                          fuse_linear_cross_entropy_pass(s, bytes);
                        }});
    } else if (std::strcmp(info.name, "autodiff") == 0) {
      if (train) list.push_back({info.name, autodiff_pass});
    } else if (std::strcmp(info.name, "saved_activations") == 0) {
      if (train && settings.bf16_saved_activations) list.push_back({info.name, saved_activations_pass});
    } else if (std::strcmp(info.name, "probe") == 0) {
      std::vector<GraphExtension*> watchers;
      if (extension)
        for (GraphExtension* p : extension->parts())
          if (p->probes()) watchers.push_back(p);
      if (!watchers.empty())
        list.push_back({info.name, [watchers](StepGraph& s) {
                          for (GraphExtension* w : watchers) w->probe(s);
                        }});
    } else if (std::strcmp(info.name, "plan_memory") == 0) {
      list.push_back({info.name, plan_memory_pass});
    } else { // a method's pass: the extension's part of that name, if the run has it
      for (GraphExtension* p : parts)
        if (std::strcmp(p->pass_name(), info.name) == 0)
          list.push_back({info.name, [p](StepGraph& s) { s.objective = p->extend(s.graph, s.attention, s.objective, s.train); }});
    }
  }
  return list;
}

} // namespace pillars::train
