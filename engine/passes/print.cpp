// Graph printer; see print.h.
#include "engine/passes/print.h"

#include <sstream>

#include "base/error.h"
#include "engine/op.h"

namespace pillars {

namespace {

std::string value_str(const Graph& g, ValueId v) { return str_cat("%", v, ":", dtype_name(g.dtype(v)), shape_str(g.shape(v))); }

// The attributes that differ from their defaults, so a line shows only what matters.
std::string attrs_str(const Attrs& a) {
  const Attrs d;
  std::ostringstream os;
  if (!a.name.empty()) os << " name=" << a.name;
  if (a.axis != d.axis) os << " axis=" << a.axis;
  if (a.keepdim) os << " keepdim";
  if (a.trans_a) os << " trans_a";
  if (a.trans_b) os << " trans_b";
  if (a.scale != d.scale) os << " scale=" << a.scale;
  if (a.eps != d.eps) os << " eps=" << a.eps;
  if (a.p != d.p) os << " p=" << a.p;
  if (a.value != d.value) os << " value=" << a.value;
  if (a.smoothing != d.smoothing) os << " smoothing=" << a.smoothing;
  if (a.ignore_index != d.ignore_index) os << " ignore_index=" << a.ignore_index;
  if (a.causal) os << " causal";
  if (a.heads) os << " heads=" << a.heads;
  if (a.seed) os << " seed=" << a.seed;
  if (a.rng_offset) os << " offset=" << a.rng_offset;
  if (!a.ints.empty()) {
    os << " ints=[";
    for (size_t i = 0; i < a.ints.size(); ++i) os << (i ? "," : "") << a.ints[i];
    os << "]";
  }
  return os.str();
}

} // namespace

void print_graph_node(const Graph& g, std::ostream& os, int node) {
  const Node& n = g.node(node);
  for (size_t k = 0; k < n.outputs.size(); ++k) os << (k ? ", " : "") << value_str(g, n.outputs[k]);
  os << " = " << n.op->name << "(";
  for (size_t k = 0; k < n.inputs.size(); ++k) os << (k ? ", " : "") << "%" << n.inputs[k];
  os << ")" << attrs_str(n.attrs);
  for (ValueId v : n.outputs)
    for (ValueId o : g.outputs())
      if (o == v) os << "  [output %" << v << "]";
  os << "\n";
}

void print_graph(const Graph& g, std::ostream& os, int from, const std::vector<bool>* marked) {
  for (int i = from; i < static_cast<int>(g.nodes().size()); ++i) {
    if (marked) os << (marked->at(static_cast<size_t>(i)) ? "+ " : "  ");
    print_graph_node(g, os, i);
  }
}

std::string graph_to_string(const Graph& g, int from) {
  std::ostringstream os;
  print_graph(g, os, from);
  return os.str();
}

} // namespace pillars
