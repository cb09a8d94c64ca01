// See head_gates.h.
#include "steps/head_gates.h"

#include <map>

#include "base/error.h"
#include "engine/ops.h"
#include "engine/passes/copy_node.h"

namespace pillars::steps {

void gate_heads(StepGraph& s, const std::vector<HeadGate>& gate_of) {
  const Graph old = std::move(s.graph);
  // The new graph, with what the gates record (inputs, names) in numbers of the new graph; s's own
  // records are renumbered below and these added to them.
  StepGraph built;
  built.train = s.train, built.device = s.device;
  Graph& g = built.graph;
  std::map<int, std::vector<size_t>> sites_after; // node making a module's O → its sites
  for (size_t m = 0; m < s.attention.size(); ++m) sites_after[old.value(s.attention[m].out).producer].push_back(m);

  const size_t values = static_cast<size_t>(old.num_values());
  std::vector<ValueId> value_map(values, kNoValue); // old value → the same value in g
  std::vector<ValueId> read_as(values, kNoValue);   // old value → what later nodes read instead
  std::vector<int> node_map(old.nodes().size(), -1);
  std::vector<ValueId> gates(s.attention.size(), kNoValue);
  for (int i = 0; i < static_cast<int>(old.nodes().size()); ++i) {
    const Node& n = old.node(i);
    std::vector<ValueId> in;
    for (ValueId v : n.inputs) {
      const size_t k = static_cast<size_t>(v);
      in.push_back(read_as[k] != kNoValue ? read_as[k] : value_map[k]);
    }
    const std::vector<ValueId> outs = copy_node(old, n, g, std::move(in));
    node_map[static_cast<size_t>(i)] = static_cast<int>(g.nodes().size()) - 1;
    for (size_t k = 0; k < n.outputs.size(); ++k) value_map[static_cast<size_t>(n.outputs[k])] = outs[k];

    const auto here = sites_after.find(i);
    if (here == sites_after.end()) continue;
    for (size_t m : here->second) {
      const AttentionSite& site = s.attention[m];
      ValueId xi = kNoValue; // (H)
      for (const HeadGate& gate : gate_of) {
        const ValueId x = gate(built, site, m);
        if (x == kNoValue) continue;
        PILLARS_CHECK(g.shape(x) == Shape{site.heads}, "head_gates: the gate of ", site.module, " must have shape [",
                      site.heads, "], got ", shape_str(g.shape(x)));
        xi = xi == kNoValue ? x : ops::mul(g, xi, x);
      }
      if (xi == kNoValue) continue;
      const ValueId o = value_map[static_cast<size_t>(site.out)];                                    // (B, Tq, H, Dh)
      read_as[static_cast<size_t>(site.out)] = ops::mul(g, o, ops::reshape(g, xi, {site.heads, 1})); // ξ_h · O_h
      gates[m] = xi;
    }
  }
  for (ValueId v : old.outputs()) g.mark_output(value_map[static_cast<size_t>(v)]);
  s.graph = std::move(built.graph);
  s.renumber(StepGraph::ops_of(old), value_map, node_map);
  for (auto& [name, in] : built.inputs) s.inputs[name] = std::move(in);
  for (auto& [name, v] : built.named) s.name(name, v);
  for (size_t m = 0; m < gates.size(); ++m) {
    s.attention[m].gate = gates[m];
    if (gates[m] != kNoValue) s.name("head_gate." + s.attention[m].module + ".xi", gates[m]);
  }
}

} // namespace pillars::steps
