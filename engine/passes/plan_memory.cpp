// plan_memory: liveness + best-fit; see plan_memory.h.
//
// A value is live from the node that produces it to the last node that reads it (or to the end,
// for graph outputs). Walking the nodes in order, we allocate each node's outputs from a free list,
// then release every value whose last reader was this node. Outputs are allocated before inputs
// are released, so a kernel never writes over its own inputs.
#include "engine/passes/plan_memory.h"

#include <algorithm>
#include <map>

#include "engine/op.h"

namespace pillars {

namespace {

constexpr size_t kAlign = 64;
size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// A free list of [offset, offset + size) holes, merged when adjacent; the arena grows at the end.
class Arena {
 public:
  size_t allocate(size_t bytes) {
    // Best fit: the smallest hole that is large enough, so big holes stay whole for big values.
    auto best = holes_.end();
    for (auto it = holes_.begin(); it != holes_.end(); ++it)
      if (it->second >= bytes && (best == holes_.end() || it->second < best->second)) best = it;
    if (best != holes_.end()) {
      const size_t offset = best->first, size = best->second;
      holes_.erase(best);
      if (size > bytes) holes_[offset + bytes] = size - bytes;
      return offset;
    }
    // No hole fits: extend, reusing a trailing hole if there is one.
    size_t offset = end_;
    if (!holes_.empty()) {
      auto last = std::prev(holes_.end());
      if (last->first + last->second == end_) {
        offset = last->first;
        holes_.erase(last);
      }
    }
    end_ = offset + bytes;
    return offset;
  }
  void release(size_t offset, size_t bytes) {
    auto it = holes_.emplace(offset, bytes).first;
    auto next = std::next(it);
    if (next != holes_.end() && it->first + it->second == next->first) {
      it->second += next->second;
      holes_.erase(next);
    }
    if (it != holes_.begin()) {
      auto prev = std::prev(it);
      if (prev->first + prev->second == it->first) {
        prev->second += it->second;
        holes_.erase(it);
      }
    }
  }
  size_t size() const { return end_; }

 private:
  std::map<size_t, size_t> holes_; // offset → size
  size_t end_ = 0;
};

} // namespace

MemoryPlan plan_memory(const Graph& g, Device device) {
  const size_t nv = static_cast<size_t>(g.num_values());
  const int nn = static_cast<int>(g.nodes().size());
  MemoryPlan plan;
  plan.offset.assign(nv, MemoryPlan::kExternal);
  plan.alias_of.resize(nv);
  for (size_t v = 0; v < nv; ++v) plan.alias_of[v] = static_cast<int32_t>(v);

  // Views share their source's bytes: resolve every value to the root of its alias chain.
  std::vector<bool> external(nv, false);
  for (const Node& n : g.nodes()) {
    if (is_leaf(n)) external[static_cast<size_t>(n.outputs[0])] = true;
    if (n.op->is_view || n.op->updates_input0) {
      const ValueId root = plan.alias_of[static_cast<size_t>(n.inputs[0])];
      plan.alias_of[static_cast<size_t>(n.outputs[0])] = root;
      external[static_cast<size_t>(n.outputs[0])] = external[static_cast<size_t>(root)];
    }
  }

  // last_use[root] = the last node reading the root or any of its views; outputs live forever.
  std::vector<int> last_use(nv, -1);
  for (int i = 0; i < nn; ++i) {
    const Node& n = g.node(i);
    for (ValueId v : n.inputs) last_use[static_cast<size_t>(plan.alias_of[static_cast<size_t>(v)])] = i;
    for (ValueId v : n.outputs) { // an unread output dies at its producer
      const size_t root = static_cast<size_t>(plan.alias_of[static_cast<size_t>(v)]);
      last_use[root] = std::max(last_use[root], i);
    }
  }
  for (ValueId v : g.outputs()) last_use[static_cast<size_t>(plan.alias_of[static_cast<size_t>(v)])] = nn;

  std::vector<std::vector<size_t>> dies_at(static_cast<size_t>(nn) + 1);
  for (size_t v = 0; v < nv; ++v)
    if (plan.alias_of[v] == static_cast<int32_t>(v) && !external[v] && last_use[v] >= 0)
      dies_at[static_cast<size_t>(last_use[v])].push_back(v);

  auto bytes_of = [&](size_t v) {
    return align_up(static_cast<size_t>(numel(g.shape(static_cast<ValueId>(v)))) *
                    dtype_size(g.dtype(static_cast<ValueId>(v))));
  };
  plan.took_over.assign(nv, -1);
  std::vector<bool> handed_over(nv, false); // a root whose buffer an in-place output now owns

  Arena arena;
  for (int i = 0; i < nn; ++i) {
    const Node& n = g.node(i);
    if (!is_leaf(n) && !n.op->is_view) {
      for (size_t k = 0; k < n.outputs.size(); ++k) {
        const size_t v = static_cast<size_t>(n.outputs[k]);
        if (k == 0 && n.op->updates_input0) continue; // input 0's own bytes (aliased above)
        plan.naive_bytes += bytes_of(v);
        // In place: output 0 over input 0, when input 0 (its root) dies here and is the same size.
        if (k == 0 && n.op->inplace && !n.inputs.empty()) {
          const size_t in = static_cast<size_t>(plan.alias_of[static_cast<size_t>(n.inputs[0])]);
          if (!external[in] && last_use[in] == i && !handed_over[in] && bytes_of(in) == bytes_of(v)) {
            plan.offset[v] = plan.offset[in];
            plan.took_over[v] = static_cast<int32_t>(in);
            handed_over[in] = true;
            continue;
          }
        }
        plan.offset[v] = static_cast<int64_t>(arena.allocate(bytes_of(v)));
      }
      const auto scratch = device == Device::cuda ? n.op->cuda_workspace : n.op->workspace;
      if (scratch) plan.workspace_bytes = std::max(plan.workspace_bytes, align_up(scratch(g, n)));
    }
    for (size_t v : dies_at[static_cast<size_t>(i)]) {
      if (plan.offset[v] == MemoryPlan::kExternal || handed_over[v]) continue;
      arena.release(static_cast<size_t>(plan.offset[v]), bytes_of(v));
    }
  }
  // Views inherit their root's offset.
  for (size_t v = 0; v < nv; ++v)
    if (plan.alias_of[v] != static_cast<int32_t>(v))
      plan.offset[v] = plan.offset[static_cast<size_t>(plan.alias_of[v])];
  plan.arena_bytes = arena.size();
  return plan;
}

} // namespace pillars
