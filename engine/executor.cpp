// Executor; see executor.h.
#include "engine/executor.h"

#include "engine/error.h"
#include "engine/op.h"

namespace pillars {

void SharedArena::reserve(size_t arena_bytes, size_t workspace_bytes) {
  // Growing costs a fresh allocation (and its page faults on first touch) and re-pointing every
  // executor's views: grow by at least a quarter, so a run of slightly larger shapes grows rarely.
  auto grown = [](const std::shared_ptr<Storage>& s, size_t need) { return s ? std::max(need, s->bytes + s->bytes / 4) : need; };
  bool grew = false;
  if (!arena || arena->bytes < arena_bytes) {
    const size_t bytes = grown(arena, arena_bytes);
    arena = nullptr; // free the old one first: peak memory is one arena, not two
    arena = Storage::allocate(bytes);
    grew = true;
  }
  if (workspace_bytes && (!workspace || workspace->bytes < workspace_bytes))
    workspace = Storage::allocate(grown(workspace, workspace_bytes)), grew = true;
  if (grew) ++generation;
}

Executor::Executor(const Graph& g, std::shared_ptr<SharedArena> shared)
    : graph_(g), plan_(plan_memory(g)), arena_(shared ? std::move(shared) : std::make_shared<SharedArena>()),
      planned_nodes_(g.nodes().size()) {
  arena_->reserve(plan_.arena_bytes, plan_.workspace_bytes);
  values_.resize(static_cast<size_t>(g.num_values()));
  point_views_at_arena();
  for (const Node& n : g.nodes())
    if (n.op == &kConstantOp) values_[static_cast<size_t>(n.outputs[0])] = g.constants()[static_cast<size_t>(n.attrs.ints[0])];
  node_in_.resize(g.nodes().size());
  node_out_.resize(g.nodes().size());
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    node_in_[i].resize(g.node(static_cast<int>(i)).inputs.size());
    node_out_[i].resize(g.node(static_cast<int>(i)).outputs.size());
  }
}

void Executor::point_views_at_arena() {
  char* base = static_cast<char*>(arena_->arena->data);
  for (ValueId v = 0; v < graph_.num_values(); ++v) {
    const int64_t off = plan_.offset[static_cast<size_t>(v)];
    if (off != MemoryPlan::kExternal)
      values_[static_cast<size_t>(v)] = Tensor::view_of(base + off, graph_.shape(v), graph_.dtype(v));
  }
  arena_generation_ = arena_->generation;
}

void Executor::bind(ValueId leaf, const Tensor& value) {
  const Node& n = graph_.producer(leaf);
  PILLARS_CHECK(is_leaf(n), "executor: value %", leaf, " is not an input or parameter");
  PILLARS_CHECK(!value.defined() || value.device() == Device::cpu, "executor: ", n.op->name, " '", n.attrs.name,
                "' is a ", device_name(value.device()), " tensor; this executor runs on the CPU");
  PILLARS_CHECK(value.defined() && value.shape() == graph_.value(leaf).shape && value.dtype() == graph_.dtype(leaf), "executor: ",
                n.op->name, " '", n.attrs.name, "' expects ", dtype_name(graph_.dtype(leaf)), shape_str(graph_.shape(leaf)),
                ", got ", value.defined() ? std::string(dtype_name(value.dtype())) + shape_str(value.shape()) : "nothing");
  values_[static_cast<size_t>(leaf)] = value;
}

void Executor::bind(const std::string& input_name, const Tensor& value) {
  const ValueId v = graph_.find_input(input_name);
  PILLARS_CHECK(v != kNoValue, "executor: the graph has no input named '", input_name, "'");
  bind(v, value);
}

void Executor::bind_params(ParamStore& store) {
  for (ValueId v : graph_.params()) bind(v, store.get(graph_.producer(v).attrs.name));
}

void Executor::run() {
  const auto& nodes = graph_.nodes();
  PILLARS_CHECK(nodes.size() == planned_nodes_, "executor: the graph grew from ", planned_nodes_, " to ", nodes.size(),
                " nodes after the executor was built; build it after autodiff and the other passes");
  if (arena_generation_ != arena_->generation) point_views_at_arena(); // another executor grew the shared arena
  void* workspace = arena_->workspace ? arena_->workspace->data : nullptr;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    if (is_leaf(n)) {
      PILLARS_CHECK(values_[static_cast<size_t>(n.outputs[0])].defined(), "executor: ", n.op->name, " '", n.attrs.name,
                    "' was not bound before run()");
      continue;
    }
    if (n.op->is_view) { // same bytes as the input (which may be an external tensor), new shape
      const Tensor& src = values_[static_cast<size_t>(n.inputs[0])];
      Tensor& dst = values_[static_cast<size_t>(n.outputs[0])];
      if (!dst.defined() || dst.raw() != src.raw()) dst.assign_view(src, graph_.value(n.outputs[0]).shape); // no allocation
      continue;
    }
    auto& in = node_in_[i];
    auto& out = node_out_[i];
    for (size_t k = 0; k < n.inputs.size(); ++k) in[k] = values_[static_cast<size_t>(n.inputs[k])];
    for (size_t k = 0; k < n.outputs.size(); ++k) out[k] = values_[static_cast<size_t>(n.outputs[k])];
    PILLARS_CHECK(n.op->cpu != nullptr, "executor: op '", n.op->name, "' has no CPU kernel");
    n.op->cpu(KernelContext{n, in, out, workspace, run_seed_});
  }
}

} // namespace pillars
