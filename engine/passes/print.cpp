// Graph printer; see print.h.
#include "engine/passes/print.h"

#include <sstream>

#include "base/error.h"
#include "engine/op.h"

namespace pillars {

namespace {

std::string value_str(const Graph& g, ValueId v) {
  return str_cat("%", v, ":", dtype_name(g.dtype(v)), shape_str(g.shape(v)));
}

} // namespace

void print_graph_node(const Graph& g, std::ostream& os, int node) {
  const Node& n = g.node(node);
  for (size_t k = 0; k < n.outputs.size(); ++k) os << (k ? ", " : "") << value_str(g, n.outputs[k]);
  os << " = " << n.op->name << "(";
  for (size_t k = 0; k < n.inputs.size(); ++k) os << (k ? ", " : "") << "%" << n.inputs[k];
  os << ")";
  if (n.op->print) os << n.op->print(n); // the parameters, as the op prints them
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
