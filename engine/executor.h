// Executor: runs a graph on the CPU or on a CUDA device.
//
//   Executor ex(g);                      // plans memory, allocates the arena once (CPU)
//   Executor gx(g, Device::cuda);        // the same on the GPU: arena in device memory
//   ex.bind_params(store);               // parameters by name
//   ex.bind("tokens", ids);              // inputs by name (shape and dtype must match the graph)
//   ex.run();                            // every node, in order
//   Tensor loss = ex.value(loss_id);     // a view into the arena (valid until the next run)
//   Tensor host = gx.fetch(loss_id);     // a host copy (waits for the device)
//
// Nothing is allocated by run(): values are views into the arena, kernels get pre-sized scratch.
// Callers cache one Executor per distinct graph (per batch shape), so a training loop with
// bucketed shapes reaches a steady state with no allocation at all. Such executors never run at
// the same time, so they can share one arena (SharedArena): memory is then the largest plan, not
// the sum of all plans. Values read from an executor stay valid until the next run of any
// executor sharing its arena.
//
// On the GPU every node's `cuda` kernel is queued on the backend's stream and run() returns
// without waiting. Host tensors bound to a GPU executor are copied into device buffers it owns
// (once per bind). An op with no CUDA kernel runs through the host fallback (host_fallback_ops()
// names them), in stream order: its inputs are copied into pinned host mirrors, the stream calls a
// host function that runs the op's CPU kernel on them, and the outputs are copied back — three
// queued steps, so run() still does not wait, and a CUDA graph can record them (as copy and host
// nodes). A run() of an executor with host-fallback nodes first waits for the previous run (its
// host functions read the run seed), and an error thrown by a CPU kernel inside a host function
// is rethrown by the next run() or fetch(). With graph capture on, the second run() of an
// executor whose bindings have not moved records the whole step as a CUDA graph and later runs
// replay it with one launch.
#pragma once
#include <exception>
#include <functional>
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
  Device device = Device::cpu;
  void reserve(size_t arena_bytes, size_t workspace_bytes);
};

class Executor {
 public:
  // Keeps a reference: g must outlive the executor and must not grow after it is built (run()
  // checks; build the executor after autodiff and every other pass). Without `shared`, the
  // executor owns its arena; a shared arena must be on the executor's device.
  explicit Executor(const Graph& g, std::shared_ptr<SharedArena> shared = nullptr);
  Executor(const Graph& g, Device device, std::shared_ptr<SharedArena> shared = nullptr);
  // With the memory plan already made (the plan_memory pass of a step, train/pass_list.cpp); the
  // constructors above make it themselves.
  Executor(const Graph& g, Device device, std::shared_ptr<SharedArena> shared, MemoryPlan plan);
  Executor(Graph&&) = delete; // a temporary graph would dangle
  Executor(Graph&&, Device, std::shared_ptr<SharedArena> = nullptr) = delete;
  Executor(Graph&&, Device, std::shared_ptr<SharedArena>, MemoryPlan) = delete;
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  void bind(const std::string& input_name, const Tensor& value);
  void bind(ValueId leaf, const Tensor& value);
  void bind_params(ParamStore& store); // every parameter leaf of the graph must be in the store
  // The seed random ops add to their own (dropout masks differ per step; see KernelContext).
  void set_seed(uint64_t seed) { run_seed_ = seed; }
  // GPU only: capture the step as a CUDA graph once bindings repeat (see the header comment).
  void enable_graph_capture(bool on);
  // run() calls f(i) after node i has run (CPU) or has been queued (GPU: work f queues on the
  // backend's stream runs after node i's, and may overlap the later nodes on another stream), so a
  // caller can act on a value as soon as it is final (data-parallel training starts summing a
  // gradient while the backward goes on: train/gradient_buckets.h). A GPU run with f set is queued
  // node by node, never captured or replayed as a CUDA graph (f must see every node). An empty f
  // removes it.
  void set_after_node(std::function<void(size_t node)> f);
  void run();
  const Tensor& value(ValueId v) const { return values_.at(static_cast<size_t>(v)); }
  Tensor fetch(ValueId v) const; // a host copy, on any device (waits for the device)
  const MemoryPlan& plan() const { return plan_; }
  const Graph& graph() const { return graph_; }
  Device device() const { return device_; }
  const std::vector<std::string>& host_fallback_ops() const {
    return host_fallback_;
  } // ops of this graph with no CUDA kernel
  bool replaying_graph() const { return cuda_graph_ != nullptr; }

 private:
  void point_views_at_arena(); // (re)creates the views of arena-resident values
  void run_node(size_t i, void* workspace);
  void run_on_host(size_t i);         // queues the host fallback of one node on a GPU executor
  void run_host_kernel(size_t i);     // its CPU kernel, called by the stream (see host_entry)
  static void host_entry(void* call); // the host function the stream calls: a HostCall*
  void prepare_host_fallback();       // pinned mirrors and scratch, once, at construction
  void rethrow_host_error() const;
  bool bindings_moved() const; // a leaf's bytes changed address since the graph was captured
  void drop_graph();

  const Graph& graph_;
  Device device_ = Device::cpu;
  MemoryPlan plan_;
  std::shared_ptr<SharedArena> arena_;
  uint64_t arena_generation_ = 0;
  std::vector<Tensor> values_;                          // one per value
  std::vector<std::vector<Tensor>> node_in_, node_out_; // per node, reused every run
  uint64_t run_seed_ = 0;
  std::function<void(size_t)> after_node_; // set_after_node
  size_t planned_nodes_ = 0;               // the graph's size when planned: growing it later is an error

  // GPU state.
  std::vector<std::string> host_fallback_; // op names, found once at construction
  std::vector<Tensor> staged_;             // per leaf value: the device copy of a bound host tensor
  Tensor device_seed_;                     // u64 on the device: the run seed the kernels read
  struct HostCall {
    Executor* executor;
    size_t node;
  };
  std::vector<HostCall> host_calls_;                    // per node: what the stream's host function gets
  std::vector<std::vector<Tensor>> host_in_, host_out_; // host fallback mirrors (pinned), per node
  std::vector<std::shared_ptr<Storage>> pinned_;        // the memory behind the mirrors
  std::shared_ptr<Storage> host_workspace_;
  mutable std::exception_ptr host_error_; // thrown by a CPU kernel in a host function
  uint64_t host_run_seed_ = 0;            // the run seed of the run the host functions belong to
  bool capture_ = false;
  int runs_since_bind_change_ = 0;
  void* cuda_graph_ = nullptr;
  std::vector<const void*> captured_leaf_addresses_;
};

} // namespace pillars
