// See copy_node.h.
#include "engine/passes/copy_node.h"

#include "engine/op.h"

namespace pillars {

std::vector<ValueId> copy_node(const Graph& from, const Node& n, Graph& to, std::vector<ValueId> inputs) {
  if (n.op == &kInputOp) return {to.input(n.name, from.shape(n.outputs[0]), from.dtype(n.outputs[0]))};
  if (n.op == &kParamOp) return {to.param(n.name, from.shape(n.outputs[0]))};
  if (n.op == &kConstantOp) return {to.constant(from.constants().at(static_cast<size_t>(n.constant_index)))};
  return to.add(*n.op, std::move(inputs), n.params); // the same parameters object, shared
}

} // namespace pillars
