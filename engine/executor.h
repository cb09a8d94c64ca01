// Executor: runs a graph on the CPU.
//
//   Executor ex(g);                      // plans memory, allocates the arena once
//   ex.bind_params(store);               // parameters by name
//   ex.bind("tokens", ids);              // inputs by name (shape and dtype must match the graph)
//   ex.run();                            // every node, in order
//   Tensor loss = ex.value(loss_id);     // a view into the arena (valid until the next run)
//
// Nothing is allocated by run(): values are views into the arena, kernels get pre-sized scratch.
// Callers cache one Executor per distinct graph (per batch shape), so a training loop with
// bucketed shapes reaches a steady state with no allocation at all. Such executors never run at
// the same time, so they can share one arena (SharedArena): memory is then the largest plan, not
// the sum of all plans. Values read from an executor stay valid until the next run of any
// executor sharing its arena.
#pragma once
#include <string>
#include <vector>

#include "engine/graph.h"
#include "engine/params.h"
#include "engine/passes/plan_memory.h"

namespace pillars {

// Arena and kernel workspace shared by executors that run one at a time. It only grows (to the
// largest plan seen); each growth bumps `generation`, and an executor re-points its views at the
// new memory before its next run.
struct SharedArena {
  std::shared_ptr<Storage> arena, workspace;
  uint64_t generation = 0;
  void reserve(size_t arena_bytes, size_t workspace_bytes);
};

class Executor {
 public:
  // Keeps a reference: g must outlive the executor and must not grow after it is built (run()
  // checks; build the executor after autodiff and every other pass). Without `shared`, the
  // executor owns its arena.
  explicit Executor(const Graph& g, std::shared_ptr<SharedArena> shared = nullptr);
  Executor(Graph&&) = delete; // a temporary graph would dangle
  void bind(const std::string& input_name, const Tensor& value);
  void bind(ValueId leaf, const Tensor& value);
  void bind_params(ParamStore& store); // every parameter leaf of the graph must be in the store
  // The seed random ops add to their own (dropout masks differ per step; see KernelContext).
  void set_seed(uint64_t seed) { run_seed_ = seed; }
  void run();
  const Tensor& value(ValueId v) const { return values_.at(static_cast<size_t>(v)); }
  const MemoryPlan& plan() const { return plan_; }
  const Graph& graph() const { return graph_; }

 private:
  void point_views_at_arena(); // (re)creates the views of arena-resident values

  const Graph& graph_;
  MemoryPlan plan_;
  std::shared_ptr<SharedArena> arena_;
  uint64_t arena_generation_ = 0;
  std::vector<Tensor> values_;                  // one per value
  std::vector<std::vector<Tensor>> node_in_, node_out_; // per node, reused every run
  uint64_t run_seed_ = 0;
  size_t planned_nodes_ = 0; // the graph's size when planned: growing it later is an error
};

} // namespace pillars
