// See copy_node.h.
#include "engine/passes/copy_node.h"

#include "base/error.h"
#include "engine/op.h"

namespace pillars {

std::vector<ValueId> copy_node(const Graph& from, const Node& n, Graph& to, std::vector<ValueId> inputs) {
  if (n.op == &kInputOp) return {to.input(n.name, from.shape(n.outputs[0]), from.dtype(n.outputs[0]))};
  if (n.op == &kParamOp) return {to.param(n.name, from.shape(n.outputs[0]))};
  if (n.op == &kConstantOp) return {to.constant(from.constants().at(static_cast<size_t>(n.constant_index)))};
  return to.add(*n.op, std::move(inputs), n.params); // the same parameters object, shared
}

ValueUses value_uses(const Graph& g) {
  ValueUses u;
  u.readers.assign(static_cast<size_t>(g.num_values()), 0);
  u.is_output.assign(static_cast<size_t>(g.num_values()), false);
  for (const Node& n : g.nodes())
    for (ValueId v : n.inputs) ++u.readers[static_cast<size_t>(v)];
  for (ValueId v : g.outputs()) u.is_output[static_cast<size_t>(v)] = true;
  return u;
}

RewrittenGraph rewrite_graph(const Graph& g, const std::vector<bool>& dropped, const NodeReplacement& replace,
                             const char* pass) {
  const int num_nodes = static_cast<int>(g.nodes().size());
  RewrittenGraph r;
  Graph& out = r.graph;
  r.value_map.assign(static_cast<size_t>(g.num_values()), kNoValue);
  r.node_map.assign(static_cast<size_t>(num_nodes), -1);
  const std::function<ValueId(ValueId)> map = [&](ValueId v) {
    const ValueId m = r.value_map[static_cast<size_t>(v)];
    PILLARS_CHECK(m != kNoValue, pass, ": value %", v, " is read after the node that made it was fused away");
    return m;
  };
  for (int i = 0; i < num_nodes; ++i) {
    if (dropped[static_cast<size_t>(i)]) continue;
    const Node& n = g.node(i);
    std::optional<std::vector<ValueId>> outs = replace(i, out, map);
    if (outs) {
      PILLARS_CHECK(outs->size() == n.outputs.size(), pass, ": the replacement of node ", i, " has ", outs->size(),
                    " outputs, the node ", n.outputs.size());
      ++r.fused;
    } else {
      std::vector<ValueId> in;
      for (ValueId v : n.inputs) in.push_back(map(v));
      outs = copy_node(g, n, out, std::move(in));
    }
    r.node_map[static_cast<size_t>(i)] = static_cast<int>(out.nodes().size()) - 1;
    for (size_t k = 0; k < n.outputs.size(); ++k) r.value_map[static_cast<size_t>(n.outputs[k])] = outs->at(k);
  }
  for (ValueId v : g.outputs()) out.mark_output(map(v));
  return r;
}

} // namespace pillars
