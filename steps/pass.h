// Passes: the named rewrites that turn a model's forward graph into the graph one step runs.
//
// A step starts from the graph the model builder emits (models/transformer.h): the forward pass
// and the task loss. The passes of steps/pass_list.cpp then run on it, in that file's order, each
// one reading and rewriting a StepGraph:
//
//   StepGraph s = StepGraph::of(build_seq2seq_training_graph(...), /*train=*/true, Device::cpu);
//   run_passes(step_passes(train, settings, extension.get()), s); // fuse, GCT, ..., autodiff, plan
//   Executor ex(s.graph, s.device, arena, s.memory);
//
// Every pass has the one entry point `void(StepGraph&)`. Most passes only append nodes (the GHT
// losses, autodiff); a pass that rewrites the graph (the two fusions, which run first) builds a
// new one and hands it over with replace_graph(), which moves every value the StepGraph records
// (but not those an extension recorded: hence first); a pass that runs after others recorded
// value numbers (saved_activations) edits the graph in place (Graph::reorder, redirect_input),
// and renumber() moves the node indices the step records.
// `pillars graph EXP.json --after PASS` prints the graph after any pass and marks the nodes that
// pass added (StepGraph::added_by).
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/graph.h"
#include "engine/passes/fuse_linear_cross_entropy.h"
#include "engine/passes/plan_memory.h"
#include "models/transformer.h"

namespace pillars::train {

struct StepGraph {
  Graph graph;
  bool train = false;              // a training step (dropout, autodiff) or an evaluation step
  Device device = Device::cpu;     // where it will run (plan_memory sizes that device's scratch)
  ValueId logits = kNoValue;       // (rows, V): the model's scores of the next token (kNoValue
                                   // after fuse_linear_cross_entropy: the step never makes them)
  ValueId loss = kNoValue;         // scalar: the model's task loss (what the log reports)
  ValueId objective = kNoValue;    // scalar: what autodiff differentiates, the loss plus the
                                   // terms of the method's passes (GCT, disagreement, L0)
  std::vector<AttentionSite> attention; // every attention module (models/transformer.h)
  std::vector<ValueId> params, grads;   // autodiff: each parameter leaf and its gradient
                                        // (kNoValue where the objective does not depend on it)
  int first_backward_node = -1;         // autodiff: the first node of the backward (-1: none yet)
  MemoryPlan memory;                    // plan_memory: where every value lives in the arena
  // Per node: the index (in the pass list) of the pass that added it; kByModel for the model's.
  std::vector<int> added_by;
  static constexpr int kByModel = -1;
  static constexpr int kNew = -2; // made by the pass now running (run_passes renames it)

  // A step graph of a model's forward graph (Seq2SeqGraph, LmGraph): its graph, logits, loss and
  // attention sites; the objective starts as the loss. The model's inputs are found
  // again by name once the passes are done (they may renumber values).
  template <class Model> static StepGraph of(Model&& m, bool train, Device device) {
    StepGraph s;
    s.graph = std::move(m.graph);
    s.train = train, s.device = device;
    s.logits = m.logits;
    s.loss = s.objective = m.loss;
    s.attention = std::move(m.attention);
    s.added_by.assign(s.graph.nodes().size(), kByModel);
    return s;
  }

  // For a pass that builds a new graph: `value_map` and `node_map` send old values and nodes to new
  // ones (kNoValue / -1: gone). Every recorded value moves; throws if one of them is gone.
  void replace_graph(Graph g, const std::vector<ValueId>& value_map, const std::vector<int>& node_map);
  // The same when the pass has already built the new graph in `graph`; `old_ops` is the op of each
  // node before the pass (ops_of(old)), all renumber reads of the old graph.
  void renumber(const std::vector<const OpDef*>& old_ops, const std::vector<ValueId>& value_map,
                const std::vector<int>& node_map);
  static std::vector<const OpDef*> ops_of(const Graph& g);
};

// The settings that turn the optional passes on.
struct PassSettings {
  bool fuse_linear = false;             // train.fuse_linear_activation
  bool fuse_cross_entropy = false;      // train.fuse_linear_cross_entropy
  int64_t cross_entropy_block_bytes = kLinearCrossEntropyBlockBytes; // its block of logits (tests shrink it)
  bool bf16_saved_activations = false;  // train.saved_activations = bf16
};

struct Pass {
  std::string name;
  std::function<void(StepGraph&)> run;
};
using PassList = std::vector<Pass>;

// Runs the passes in order and records in s.added_by which pass added each node. `last`
// (non-empty) stops after the pass of that name.
void run_passes(const PassList& passes, StepGraph& s, std::string_view last = {});

} // namespace pillars::train
