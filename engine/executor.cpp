// Executor; see executor.h.
#include "engine/executor.h"

#include <algorithm>

#include "base/error.h"
#include "engine/op.h"
#include "runtime/cuda_device.h"

namespace pillars {

void SharedArena::reserve(size_t arena_bytes, size_t workspace_bytes) {
  // Growing costs a fresh allocation (and its page faults on first touch) and re-pointing every
  // executor's views: grow by at least a quarter, so a run of slightly larger shapes grows rarely.
  auto grown = [](const std::shared_ptr<Storage>& s, size_t need) {
    return s ? std::max(need, s->bytes + s->bytes / 4) : need;
  };
  bool grew = false;
  if (!arena || arena->bytes < arena_bytes) {
    const size_t bytes = grown(arena, arena_bytes);
    arena = nullptr; // free the old one first: peak memory is one arena, not two
    arena = Storage::allocate(bytes, device);
    grew = true;
  }
  if (workspace_bytes && (!workspace || workspace->bytes < workspace_bytes))
    workspace = Storage::allocate(grown(workspace, workspace_bytes), device), grew = true;
  if (grew) ++generation;
}

Executor::Executor(const Graph& g, std::shared_ptr<SharedArena> shared) : Executor(g, Device::cpu, std::move(shared)) {}

Executor::Executor(const Graph& g, Device device, std::shared_ptr<SharedArena> shared)
    : Executor(g, device, std::move(shared), plan_memory(g, device)) {}

Executor::Executor(const Graph& g, Device device, std::shared_ptr<SharedArena> shared, MemoryPlan plan)
    : graph_(g), device_(device), plan_(std::move(plan)), arena_(std::move(shared)), planned_nodes_(g.nodes().size()) {
  PILLARS_CHECK(plan_.offset.size() == static_cast<size_t>(g.num_values()),
                "executor: the memory plan is of another graph (", plan_.offset.size(), " values, the graph has ",
                g.num_values(), ")");
  if (!arena_) {
    arena_ = std::make_shared<SharedArena>();
    arena_->device = device;
  }
  PILLARS_CHECK(arena_->device == device, "executor: a ", device_name(device), " executor cannot share a ",
                device_name(arena_->device), " arena");
  if (device == Device::cuda)
    PILLARS_CHECK(cuda_device_count() > 0, "executor: no CUDA device (", cuda_unavailable_reason(), ")");
  arena_->reserve(plan_.arena_bytes, plan_.workspace_bytes);
  values_.resize(static_cast<size_t>(g.num_values()));
  point_views_at_arena();
  for (const Node& n : g.nodes())
    if (n.op == &kConstantOp)
      values_[static_cast<size_t>(n.outputs[0])] = g.constants()[static_cast<size_t>(n.constant_index)].to(device);
  const size_t nodes = g.nodes().size();
  node_in_.resize(nodes);
  node_out_.resize(nodes);
  for (size_t i = 0; i < nodes; ++i) {
    node_in_[i].resize(g.node(static_cast<int>(i)).inputs.size());
    node_out_[i].resize(g.node(static_cast<int>(i)).outputs.size());
  }
  if (device == Device::cuda) {
    staged_.resize(static_cast<size_t>(g.num_values()));
    device_seed_ = Tensor::empty({1}, DType::i64, Device::cuda);
    for (const Node& n : g.nodes())
      if (!is_leaf(n) && !n.op->is_view && !n.op->cuda &&
          std::find(host_fallback_.begin(), host_fallback_.end(), n.op->name) == host_fallback_.end())
        host_fallback_.push_back(n.op->name);
    if (!host_fallback_.empty()) prepare_host_fallback();
  }
}

void Executor::prepare_host_fallback() {
  const size_t nodes = graph_.nodes().size();
  host_in_.resize(nodes);
  host_out_.resize(nodes);
  host_calls_.resize(nodes);
  size_t scratch = 0;
  auto pinned_mirror = [&](ValueId v) {
    const size_t bytes = static_cast<size_t>(numel(graph_.shape(v))) * dtype_size(graph_.dtype(v));
    pinned_.push_back(Storage::allocate_pinned(bytes));
    return Tensor::view_of(pinned_.back()->data, graph_.shape(v), graph_.dtype(v));
  };
  for (size_t i = 0; i < nodes; ++i) {
    const Node& n = graph_.node(static_cast<int>(i));
    if (is_leaf(n) || n.op->is_view || n.op->cuda) continue;
    PILLARS_CHECK(n.op->cpu != nullptr, "executor: op '", n.op->name, "' has neither a CUDA nor a CPU kernel");
    for (ValueId v : n.inputs) host_in_[i].push_back(pinned_mirror(v));
    for (ValueId v : n.outputs) host_out_[i].push_back(pinned_mirror(v));
    host_calls_[i] = HostCall{this, i};
    if (n.op->workspace) scratch = std::max(scratch, n.op->workspace(graph_, n));
  }
  if (scratch) host_workspace_ = Storage::allocate(scratch);
}

Executor::~Executor() {
  if (!host_fallback_.empty()) { // queued host functions point at this executor: let them finish
    try {
      cuda_synchronize();
    } catch (...) { // a failed device has nothing left to wait for
    }
  }
  drop_graph();
}

void Executor::point_views_at_arena() {
  char* base = static_cast<char*>(arena_->arena->data);
  for (ValueId v = 0; v < graph_.num_values(); ++v) {
    const int64_t off = plan_.offset[static_cast<size_t>(v)];
    if (off != MemoryPlan::kExternal)
      values_[static_cast<size_t>(v)] = Tensor::view_of(base + off, graph_.shape(v), graph_.dtype(v), device_);
  }
  arena_generation_ = arena_->generation;
}

void Executor::bind(ValueId leaf, const Tensor& value) {
  const Node& n = graph_.producer(leaf);
  PILLARS_CHECK(is_leaf(n), "executor: value %", leaf, " is not an input or parameter");
  PILLARS_CHECK(value.defined() && value.shape() == graph_.value(leaf).shape && value.dtype() == graph_.dtype(leaf),
                "executor: ", n.op->name, " '", n.name, "' expects ", dtype_name(graph_.dtype(leaf)),
                shape_str(graph_.shape(leaf)), ", got ",
                value.defined() ? std::string(dtype_name(value.dtype())) + shape_str(value.shape()) : "nothing");
  const size_t at = static_cast<size_t>(leaf);
  if (value.device() == device_) {
    values_[at] = value;
    return;
  }
  PILLARS_CHECK(device_ == Device::cuda, "executor: ", n.op->name, " '", n.name, "' is a ", device_name(value.device()),
                " tensor; this executor runs on the CPU");
  // A host tensor for a GPU executor: copy it into a device buffer of our own (made once).
  if (!staged_[at].defined()) staged_[at] = Tensor::empty(value.shape(), value.dtype(), Device::cuda);
  staged_[at].copy_from(value);
  values_[at] = staged_[at];
}

void Executor::bind(const std::string& input_name, const Tensor& value) {
  const ValueId v = graph_.find_input(input_name);
  PILLARS_CHECK(v != kNoValue, "executor: the graph has no input named '", input_name, "'");
  bind(v, value);
}

void Executor::bind_params(ParamStore& store) {
  for (ValueId v : graph_.params()) bind(v, store.get(graph_.producer(v).name));
}

void Executor::enable_graph_capture(bool on) {
  PILLARS_CHECK(!on || device_ == Device::cuda, "executor: CUDA graph capture needs a CUDA executor");
  capture_ = on;
  if (!on) drop_graph();
}

void Executor::drop_graph() {
  if (cuda_graph_) cuda_graph_destroy(cuda_graph_);
  cuda_graph_ = nullptr;
  runs_since_bind_change_ = 0;
}

bool Executor::bindings_moved() const {
  size_t k = 0;
  for (const Node& n : graph_.nodes())
    if (is_leaf(n)) {
      const Tensor& t = values_[static_cast<size_t>(n.outputs[0])];
      if (k >= captured_leaf_addresses_.size() || captured_leaf_addresses_[k++] != t.raw()) return true;
    }
  return false;
}

void Executor::run_node(size_t i, void* workspace) {
  const Node& n = graph_.nodes()[i];
  if (n.op->is_view) { // same bytes as the input (which may be an external tensor), new shape
    const Tensor& src = values_[static_cast<size_t>(n.inputs[0])];
    Tensor& dst = values_[static_cast<size_t>(n.outputs[0])];
    if (!dst.defined() || dst.raw() != src.raw())
      dst.assign_view(src, graph_.value(n.outputs[0]).shape); // no allocation
    return;
  }
  if (n.op->updates_input0) { // output 0 is (the first rows of) input 0's buffer, written by the kernel
    const Tensor& src = values_[static_cast<size_t>(n.inputs[0])];
    Tensor& dst = values_[static_cast<size_t>(n.outputs[0])];
    const Shape& shape = graph_.value(n.outputs[0]).shape;
    if (!dst.defined() || dst.raw() != src.raw()) dst.assign_view(src.slice0(0, shape[0]), shape);
  }
  auto& in = node_in_[i];
  auto& out = node_out_[i];
  for (size_t k = 0; k < n.inputs.size(); ++k) in[k] = values_[static_cast<size_t>(n.inputs[k])];
  for (size_t k = 0; k < n.outputs.size(); ++k) out[k] = values_[static_cast<size_t>(n.outputs[k])];
  if (device_ == Device::cpu) {
    PILLARS_CHECK(n.op->cpu != nullptr, "executor: op '", n.op->name, "' has no CPU kernel");
    n.op->cpu(KernelContext{n, in, out, workspace, run_seed_});
  } else if (n.op->cuda) {
    n.op->cuda(KernelContext{n, in, out, workspace, run_seed_, static_cast<const uint64_t*>(device_seed_.raw())});
  } else {
    run_on_host(i);
  }
}

// Queued, in stream order: inputs → pinned mirrors, the CPU kernel (a host function), mirrors →
// outputs. In-place ops read output 0's old contents through input 0: the mirrors are separate,
// so the kernel reads the input copy and writes the output copy, which is the same function.
void Executor::run_on_host(size_t i) {
  const Node& n = graph_.nodes()[i];
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    const Tensor& v = values_[static_cast<size_t>(n.inputs[k])];
    cuda_copy_to_pinned(host_in_[i][k].raw(), v.raw(), v.nbytes());
  }
  cuda_launch_host_function(&Executor::host_entry, &host_calls_[i]);
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    const Tensor& v = values_[static_cast<size_t>(n.outputs[k])];
    cuda_copy_from_pinned(v.raw(), host_out_[i][k].raw(), v.nbytes());
  }
}

void Executor::host_entry(void* call) {
  const HostCall* c = static_cast<const HostCall*>(call);
  try {
    c->executor->run_host_kernel(c->node);
  } catch (...) { // the stream's thread cannot throw to the caller: kept for the next run()/fetch()
    if (!c->executor->host_error_) c->executor->host_error_ = std::current_exception();
  }
}

void Executor::run_host_kernel(size_t i) {
  const Node& n = graph_.nodes()[i];
  n.op->cpu(
      KernelContext{n, host_in_[i], host_out_[i], host_workspace_ ? host_workspace_->data : nullptr, host_run_seed_});
}

void Executor::rethrow_host_error() const {
  if (!host_error_) return;
  std::exception_ptr e = host_error_;
  host_error_ = nullptr;
  std::rethrow_exception(e);
}

Tensor Executor::fetch(ValueId v) const {
  // A copy on the CPU too: value(v) there is a view of the arena, which the next run overwrites and
  // the executor's destruction frees.
  const Tensor& x = value(v);
  Tensor host = x.device() == Device::cpu
                    ? x.clone()
                    : x.to(Device::cpu); // on the GPU: waits for the stream, host functions included
  rethrow_host_error();
  return host;
}

void Executor::run() {
  const auto& nodes = graph_.nodes();
  PILLARS_CHECK(nodes.size() == planned_nodes_, "executor: the graph grew from ", planned_nodes_, " to ", nodes.size(),
                " nodes after the executor was built; build it after autodiff and the other passes");
  if (arena_generation_ != arena_->generation) { // another executor grew the shared arena
    point_views_at_arena();
    drop_graph();
  }
  for (const Node& n : nodes)
    if (is_leaf(n))
      PILLARS_CHECK(values_[static_cast<size_t>(n.outputs[0])].defined(), "executor: ", n.op->name, " '", n.name,
                    "' was not bound before run()");
  void* workspace = arena_->workspace ? arena_->workspace->data : nullptr;
  if (device_ == Device::cuda && !host_fallback_.empty()) {
    // The previous run's host functions may still be queued, and they read run_seed_ and the
    // mirrors: let them finish (and report) before this run changes anything.
    cuda_synchronize();
    rethrow_host_error();
    host_run_seed_ = run_seed_; // what this run's host functions see (set_seed may change run_seed_ any time)
  }
  if (device_ == Device::cuda) cuda_copy_to_device(device_seed_.raw(), &run_seed_, sizeof run_seed_);

  if (device_ == Device::cuda && capture_ && !after_node_) { // a watched run is queued node by node
    if (cuda_graph_ && bindings_moved()) drop_graph();
    if (cuda_graph_) {
      cuda_graph_launch(cuda_graph_);
      return;
    }
    // Capture on the second run with the same bindings (the first one warms up library handles
    // and lazily created buffers, which must not happen inside a capture).
    const bool can_capture = runs_since_bind_change_ >= 1 && !bindings_moved();
    if (can_capture) {
      cuda_graph_begin_capture();
      try {
        for (size_t i = 0; i < nodes.size(); ++i)
          if (!is_leaf(nodes[i])) run_node(i, workspace);
      } catch (...) {
        cuda_graph_destroy(cuda_graph_end_capture());
        throw;
      }
      cuda_graph_ = cuda_graph_end_capture();
      cuda_graph_launch(cuda_graph_);
      return;
    }
    captured_leaf_addresses_.clear();
    for (const Node& n : nodes)
      if (is_leaf(n)) captured_leaf_addresses_.push_back(values_[static_cast<size_t>(n.outputs[0])].raw());
    ++runs_since_bind_change_;
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (is_leaf(nodes[i])) continue;
    run_node(i, workspace);
    if (after_node_) after_node_(i);
  }
}

void Executor::set_after_node(std::function<void(size_t node)> f) { after_node_ = std::move(f); }

} // namespace pillars
