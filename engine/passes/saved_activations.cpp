// The saved_activations pass; see saved_activations.h.
//
// Four steps: find the saved activations (forward values with a backward reader), append their
// casts, move every appended cast to where it belongs in the order (the narrowing right after the
// producer, each widening right before its reader), then point the readers at the widened copies.
#include "engine/passes/saved_activations.h"

#include <algorithm>
#include <utility>

#include "base/error.h"
#include "engine/op.h"
#include "engine/ops/cast.h"

namespace pillars {

namespace {

// The value whose bytes v shares (itself unless v is a view or an in-place update of another).
ValueId root_of(const Graph& g, ValueId v) {
  for (;;) {
    const Node& p = g.producer(v);
    if (!(p.op->is_view || p.op->updates_input0)) return v;
    v = p.inputs[0];
  }
}

size_t value_bytes(const Graph& g, ValueId v) {
  return static_cast<size_t>(numel(g.shape(v))) * dtype_size(g.dtype(v));
}

// A statistic: an output after a node's first with fewer elements than the node's first input — a
// per-row summary of it (layer norm's mean and rstd, attention's and cross-entropy's log-sum-exp) —
// unless the op makes gradients (OpDef::makes_gradients: a fused loss's ∂L/∂W is no summary of h).
bool is_statistic(const Graph& g, ValueId v) {
  const ValueInfo& info = g.value(v);
  const Node& producer = g.node(info.producer);
  return info.output_index > 0 && !producer.inputs.empty() && !producer.op->makes_gradients &&
         numel(info.shape) < numel(g.shape(producer.inputs[0]));
}

bool worth_storing(const Graph& g, ValueId v, int first_backward_node, const std::vector<bool>& is_output,
                   int64_t min_elements) {
  const ValueInfo& info = g.value(v);
  if (info.producer >= first_backward_node || is_statistic(g, v)) return false;
  const Node& producer = g.node(info.producer);
  if (is_leaf(producer) || producer.op == &ops::kCast) return false;
  if (producer.op->makes_gradients && info.output_index > 0) return false; // a gradient, not an activation
  if (info.dtype != DType::f32 || numel(info.shape) < min_elements || is_output[static_cast<size_t>(v)]) return false;
  return !is_leaf(g.producer(root_of(g, v))); // a view of a leaf lives outside the arena anyway
}

} // namespace

SavedActivations store_saved_activations_bf16(Graph& g, int first_backward_node, int64_t min_elements) {
  const int nn = static_cast<int>(g.nodes().size());
  PILLARS_CHECK(first_backward_node >= 0 && first_backward_node <= nn,
                "saved_activations: the backward starts at node ", first_backward_node, " of ", nn);
  std::vector<bool> is_output(static_cast<size_t>(g.num_values()), false);
  for (ValueId v : g.outputs()) is_output[static_cast<size_t>(v)] = true;

  // 1. For every storable forward value v: the backward nodes that read it, and the forward nodes
  //    that made from it a statistic one of those backward nodes reads (they will read v rounded
  //    too, so the statistic describes the values the backward sees). A value a backward node reads
  //    beside a statistic made from something else (attention's O beside the lse of its scores)
  //    stays f32: the backward's algebra assumes the two agree exactly (D = rowsum(dO ∘ O) = Σ P dP).
  std::vector<std::vector<int>> readers(static_cast<size_t>(g.num_values())), makers(readers.size());
  std::vector<bool> unstorable(readers.size(), false);
  const auto add_once = [](std::vector<int>& list, int node) {
    if (std::find(list.begin(), list.end(), node) == list.end()) list.push_back(node);
  };
  for (int j = first_backward_node; j < nn; ++j) {
    const Node& n = g.node(j);
    std::vector<int> statistic_makers; // forward nodes whose statistics node j reads
    for (ValueId s : n.inputs)
      if (g.value(s).producer < first_backward_node && is_statistic(g, s))
        add_once(statistic_makers, g.value(s).producer);
    for (ValueId v : n.inputs) {
      if (!worth_storing(g, v, first_backward_node, is_output, min_elements)) continue;
      add_once(readers[static_cast<size_t>(v)], j);
      for (int maker : statistic_makers) {
        const std::vector<ValueId>& made_from = g.node(maker).inputs;
        if (std::find(made_from.begin(), made_from.end(), v) != made_from.end())
          add_once(makers[static_cast<size_t>(v)], maker);
        else
          unstorable[static_cast<size_t>(v)] = true;
      }
    }
  }
  for (ValueId v = 0; v < g.num_values(); ++v)
    if (unstorable[static_cast<size_t>(v)]) readers[static_cast<size_t>(v)].clear();
  // ... that wait long enough: from its last forward reader to its first backward reader, the
  // nodes that run meanwhile write at least as many bytes as it holds. (The logits do not wait:
  // the loss reads them last in the forward and its gradient first in the backward, so their bf16
  // copy would be widened back at once, and the two copies together would raise the peak.)
  std::vector<size_t> written_before(static_cast<size_t>(nn) + 1, 0); // bytes the nodes before i write
  std::vector<int> last_forward_reader(static_cast<size_t>(g.num_values()), -1);
  for (int i = 0; i < nn; ++i) {
    const Node& n = g.node(i);
    size_t bytes = 0;
    if (!is_leaf(n) && !n.op->is_view)
      for (ValueId v : n.outputs) bytes += value_bytes(g, v);
    written_before[static_cast<size_t>(i) + 1] = written_before[static_cast<size_t>(i)] + bytes;
    if (i < first_backward_node)
      for (ValueId v : n.inputs) last_forward_reader[static_cast<size_t>(v)] = i;
  }
  for (ValueId v = 0; v < g.num_values(); ++v) {
    std::vector<int>& r = readers[static_cast<size_t>(v)];
    if (r.empty()) continue;
    const int waits_from = std::max(last_forward_reader[static_cast<size_t>(v)], g.value(v).producer);
    const size_t written =
        written_before[static_cast<size_t>(r.front())] - written_before[static_cast<size_t>(waits_from) + 1];
    if (written < value_bytes(g, v)) r.clear();
  }

  // 2. Append the casts; after[i] / before[j]: the appended nodes that run right after node i or
  //    right before node j.
  SavedActivations result;
  std::vector<std::vector<int>> after(static_cast<size_t>(nn)), before(static_cast<size_t>(nn));
  struct Redirect {
    int node;         // a backward reader or a statistic's maker (old index)
    ValueId from, to; // v, and the f32 copy it reads instead
  };
  std::vector<Redirect> redirects;
  const int num_values = g.num_values();
  for (ValueId v = 0; v < num_values; ++v) {
    const std::vector<int>& r = readers[static_cast<size_t>(v)];
    if (r.empty()) continue;
    const ValueId v16 = ops::cast(g, v, DType::bf16);
    after[static_cast<size_t>(g.value(v).producer)].push_back(g.value(v16).producer);
    for (const std::vector<int>* nodes : {&std::as_const(makers[static_cast<size_t>(v)]), &r})
      for (int j : *nodes) {
        const ValueId v32 = ops::cast(g, v16, DType::f32);
        before[static_cast<size_t>(j)].push_back(g.value(v32).producer);
        redirects.push_back({j, v, v32});
        ++(j < first_backward_node ? result.rounded_in_forward : result.widened);
      }
    ++result.stored;
    result.f32_bytes += value_bytes(g, v);
  }

  // 3. The order: every old node, with its casts around it.
  std::vector<int> order;
  order.reserve(g.nodes().size());
  for (int i = 0; i < nn; ++i) {
    if (i == first_backward_node) result.first_backward_node = static_cast<int>(order.size());
    for (int c : before[static_cast<size_t>(i)]) order.push_back(c);
    order.push_back(i);
    for (int c : after[static_cast<size_t>(i)]) order.push_back(c);
  }
  if (first_backward_node == nn) result.first_backward_node = static_cast<int>(order.size());
  const std::vector<int> moved = g.reorder(order);
  result.node_map.assign(moved.begin(), moved.begin() + nn);

  // 4. The backward readers and the statistics' makers read the widened copies, which now run
  //    right before them.
  for (const Redirect& r : redirects) {
    const int j = moved[static_cast<size_t>(r.node)];
    const std::vector<ValueId> inputs = g.node(j).inputs; // a copy: redirect_input edits them
    for (size_t slot = 0; slot < inputs.size(); ++slot)
      if (inputs[slot] == r.from) g.redirect_input(j, slot, r.to);
  }
  return result;
}

} // namespace pillars
