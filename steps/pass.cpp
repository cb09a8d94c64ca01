// See pass.h.
#include "steps/pass.h"

#include "base/error.h"

namespace pillars::steps {

namespace {

void remap(ValueId& v, const std::vector<ValueId>& value_map) {
  if (v == kNoValue) return;
  const ValueId old = v;
  v = value_map.at(static_cast<size_t>(old));
  PILLARS_CHECK(v != kNoValue, "pass: the step records value %", old, ", which the pass removed");
}

} // namespace

void StepGraph::name(const std::string& n, ValueId v) {
  graph.mark_output(v);
  named[n] = v;
}

ValueId StepGraph::named_value(std::string_view n) const {
  const auto it = named.find(n);
  return it == named.end() ? kNoValue : it->second;
}

ValueId StepGraph::add_input(const std::string& n, const Shape& shape, std::function<Tensor(const StepInfo&)> fill) {
  PILLARS_CHECK(!inputs.contains(n), "step: two passes declare the input '", n, "'");
  const ValueId v = graph.input(n, shape, DType::f32);
  inputs[n] = {v, std::move(fill)};
  return v;
}

void StepGraph::log_term(const std::string& key, ValueId v, double divide_by) {
  graph.mark_output(v);
  terms.push_back({key, v, divide_by});
}

void StepGraph::replace_graph(Graph g, const std::vector<ValueId>& value_map, const std::vector<int>& node_map) {
  const std::vector<const OpDef*> old_ops = ops_of(graph);
  graph = std::move(g);
  renumber(old_ops, value_map, node_map);
}

std::vector<const OpDef*> StepGraph::ops_of(const Graph& g) {
  std::vector<const OpDef*> ops;
  ops.reserve(g.nodes().size());
  for (const Node& n : g.nodes()) ops.push_back(n.op);
  return ops;
}

void StepGraph::renumber(const std::vector<const OpDef*>& old_ops, const std::vector<ValueId>& value_map,
                         const std::vector<int>& node_map) {
  for (ValueId* v : {&logits, &loss, &objective}) remap(*v, value_map);
  for (std::vector<ValueId>* list : {&params, &grads})
    for (ValueId& v : *list) remap(v, value_map);
  for (auto& [name, v] : named) remap(v, value_map);
  for (auto& [name, in] : inputs) remap(in.value, value_map);
  for (LoggedTerm& t : terms) remap(t.value, value_map);
  for (AttentionSite& s : attention) {
    for (ValueId* v : {&s.q, &s.k, &s.v, &s.out, &s.probs, &s.gate, &s.query_lengths, &s.key_lengths})
      remap(*v, value_map);
    if (s.node >= 0) s.node = node_map.at(static_cast<size_t>(s.node));
  }
  // A node the new graph copies keeps its origin; a node it made, or one that took an old node's
  // place with another op (linear_act for an activation), is the running pass's (kNew until
  // run_passes names it).
  std::vector<int> origin(graph.nodes().size(), kNew);
  for (size_t i = 0; i < node_map.size(); ++i) {
    const int now = node_map[i];
    if (now >= 0 && i < added_by.size() && graph.node(now).op == old_ops.at(i))
      origin[static_cast<size_t>(now)] = added_by[i];
  }
  added_by = std::move(origin);
}

void run_passes(const PassList& passes, StepGraph& s, std::string_view last) {
  if (!last.empty()) {
    bool known = false;
    for (const Pass& p : passes) known = known || p.name == last;
    PILLARS_CHECK(known, "no pass named \"", last, "\" in this step");
  }
  for (size_t i = 0; i < passes.size(); ++i) {
    passes[i].run(s);
    // Appended nodes, and the nodes a rewrite made, belong to this pass.
    s.added_by.resize(s.graph.nodes().size(), StepGraph::kNew);
    for (int& origin : s.added_by)
      if (origin == StepGraph::kNew) origin = static_cast<int>(i);
    if (passes[i].name == last) return;
  }
}

} // namespace pillars::steps
