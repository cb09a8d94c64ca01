// Passes: the functions that turn a model's forward graph into the graph one step runs.
//
// A step starts from the graph the model builder emits (models/transformer.h): the forward pass
// and the task loss. The passes of the one list (train/pass_list.cpp) then run on it, in that
// list's order, each one a function `void(StepGraph&)` that reads and rewrites the StepGraph:
//
//   StepGraph s = StepGraph::of(build_seq2seq_training_graph(...), /*train=*/true, Device::cpu);
//   run_passes(step_recipe(context).passes, s);   // fuse, head gates, GCT, ..., autodiff, plan
//   Executor ex(s.graph, s.device, arena, s.memory);
//
// The StepGraph owns everything a pass records, so no pass keeps state of its own:
//   named    values a reader fetches after a run ("gct.regularizer", "v2s.gram.<module>")
//   inputs   run-time inputs, each with the function of StepInfo that fills it before every run
//            ("gct.inverse_target_tokens", DropHead's "head_gate.<module>")
//   terms    scalars the progress log reports ("gct_regularizer"), averaged over training runs
// A pass that rewrites the graph (the fusions, head_gates) builds a new one and hands it over with
// replace_graph(), which moves every recorded value; a pass that edits in place (saved_activations)
// calls renumber(). Either way a pass may run anywhere in the list: the list is the only order.
// `pillars graph EXP.json --after PASS` prints the graph after any pass and marks the nodes that
// pass added (StepGraph::added_by).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "engine/graph.h"
#include "engine/passes/fuse_linear_cross_entropy.h"
#include "engine/passes/plan_memory.h"
#include "models/transformer.h"

namespace pillars::steps {

// What a run is told about itself: the run-time inputs are filled from it (steps/steps.h).
struct StepInfo {
  int64_t target_tokens = 0; // non-pad target tokens of the batch
  uint64_t seed = 0;         // the run's seed (dropout stream); 0 in evaluation
  int64_t update = 0;        // the update this run belongs to (1-based; 0 in evaluation)
  double progress = 0;       // update / planned updates, in [0, 1]
  bool train = false;
};

// A run-time input a pass declared: the steps bind fill(info) to `value` before every run.
struct RunInput {
  ValueId value = kNoValue;
  std::function<Tensor(const StepInfo&)> fill;
};

// A scalar the progress log reports under `key`: value / divide_by, averaged over the training
// runs since the last progress line (train/trainer.cpp).
struct LoggedTerm {
  std::string key;
  ValueId value = kNoValue;
  double divide_by = 1;
};

struct StepGraph {
  Graph graph;
  bool train = false;                                  // a training step (dropout, autodiff) or an evaluation step
  Device device = Device::cpu;                         // where it will run (plan_memory sizes that device's scratch)
  ValueId logits = kNoValue;                           // (rows, V): the model's scores of the next token (kNoValue
                                                       // after fuse_linear_cross_entropy: the step never makes them)
  ValueId loss = kNoValue;                             // scalar: the model's task loss (what the log reports)
  ValueId objective = kNoValue;                        // scalar: what autodiff differentiates, the loss plus the
                                                       // terms of the method's passes (GCT, disagreement, L0)
  std::vector<AttentionSite> attention;                // every attention module (models/transformer.h)
  std::vector<ValueId> params, grads;                  // autodiff: each parameter leaf and its gradient
                                                       // (kNoValue where the objective does not depend on it)
  int first_backward_node = -1;                        // autodiff: the first node of the backward (-1: none yet)
  MemoryPlan memory;                                   // plan_memory: where every value lives in the arena
  std::map<std::string, ValueId, std::less<>> named;   // values readers fetch after a run (outputs)
  std::map<std::string, RunInput, std::less<>> inputs; // run-time inputs by name, with their fill
  std::vector<LoggedTerm> terms;                       // what the progress log reports
  // Per node: the index (in the pass list) of the pass that added it; kByModel for the model's.
  std::vector<int> added_by;
  static constexpr int kByModel = -1;
  static constexpr int kNew = -2; // made by the pass now running (run_passes renames it)

  // A step graph of a model's forward graph (Seq2SeqGraph, LmGraph): its graph, logits, loss and
  // attention sites; the objective starts as the loss. The model's inputs are found
  // again by name once the passes are done (they may renumber values).
  template <class Model>
  static StepGraph of(Model&& m, bool train, Device device) {
    StepGraph s;
    s.graph = std::move(m.graph);
    s.train = train, s.device = device;
    s.logits = m.logits;
    s.loss = s.objective = m.loss;
    s.attention = std::move(m.attention);
    s.added_by.assign(s.graph.nodes().size(), kByModel);
    return s;
  }

  // Records `v` under `name` and marks it a graph output, so its value survives the run.
  void name(const std::string& name, ValueId v);
  // The value recorded under `name`; kNoValue when no pass recorded it.
  ValueId named_value(std::string_view name) const;
  // Declares the f32 input `name` of `shape`, bound to fill(info) before every run.
  ValueId add_input(const std::string& name, const Shape& shape, std::function<Tensor(const StepInfo&)> fill);
  // Reports the scalar `v` (marked an output) divided by `divide_by` in the progress log under `key`.
  void log_term(const std::string& key, ValueId v, double divide_by = 1);

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
  bool fuse_linear = false;                                          // train.fuse_linear_activation
  bool fuse_cross_entropy = false;                                   // train.fuse_linear_cross_entropy
  int64_t cross_entropy_block_bytes = kLinearCrossEntropyBlockBytes; // its block of logits (tests shrink it)
  bool bf16_saved_activations = false;                               // train.saved_activations = bf16
};

struct Pass {
  std::string name;
  std::function<void(StepGraph&)> run;
};
using PassList = std::vector<Pass>;

// Runs the passes in order and records in s.added_by which pass added each node. `last`
// (non-empty) stops after the pass of that name.
void run_passes(const PassList& passes, StepGraph& s, std::string_view last = {});

} // namespace pillars::steps
