// Graph construction: see graph.h.
#include "engine/graph.h"

#include "base/error.h"
#include "engine/op.h"

namespace pillars {

const OpDef kInputOp{.name = "input"};
const OpDef kParamOp{.name = "param"};
const OpDef kConstantOp{.name = "constant"};

ValueId Graph::leaf(const OpDef& op, const Shape& shape, DType dtype, Attrs attrs) {
  Node n;
  n.op = &op;
  n.attrs = std::move(attrs);
  const ValueId v = static_cast<ValueId>(values_.size());
  values_.push_back(ValueInfo{shape, dtype, static_cast<int32_t>(nodes_.size()), 0});
  n.outputs.push_back(v);
  nodes_.push_back(std::move(n));
  return v;
}

ValueId Graph::input(const std::string& name, const Shape& shape, DType dtype) {
  PILLARS_CHECK(find_input(name) == kNoValue, "graph: input '", name, "' declared twice");
  Attrs a;
  a.name = name;
  return leaf(kInputOp, shape, dtype, std::move(a));
}

ValueId Graph::param(const std::string& name, const Shape& shape) {
  const ValueId existing = find_param(name);
  if (existing != kNoValue) {
    PILLARS_CHECK(value(existing).shape == shape, "graph: parameter '", name, "' used with shapes ",
                  shape_str(value(existing).shape), " and ", shape_str(shape));
    return existing; // a parameter used twice (tied embeddings) is one value
  }
  Attrs a;
  a.name = name;
  return leaf(kParamOp, shape, DType::f32, std::move(a));
}

ValueId Graph::constant(const Tensor& value) {
  Attrs a;
  a.ints = {static_cast<int64_t>(constants_.size())};
  constants_.push_back(value);
  return leaf(kConstantOp, value.shape(), value.dtype(), std::move(a));
}

std::vector<ValueId> Graph::add(const OpDef& op, std::vector<ValueId> inputs, Attrs attrs) {
  for (ValueId v : inputs)
    PILLARS_CHECK(v >= 0 && v < num_values(), "graph: op '", op.name, "' given an undefined value ", v);
  Node n;
  n.op = &op;
  n.inputs = std::move(inputs);
  n.attrs = std::move(attrs);
  std::vector<OutputSpec> specs = op.infer(*this, n);
  const int32_t index = static_cast<int32_t>(nodes_.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    n.outputs.push_back(static_cast<ValueId>(values_.size()));
    values_.push_back(ValueInfo{std::move(specs[i].shape), specs[i].dtype, index, static_cast<int32_t>(i)});
  }
  nodes_.push_back(std::move(n));
  return nodes_.back().outputs;
}

ValueId Graph::find_param(const std::string& name) const {
  for (const Node& n : nodes_)
    if (n.op == &kParamOp && n.attrs.name == name) return n.outputs[0];
  return kNoValue;
}

ValueId Graph::find_input(const std::string& name) const {
  for (const Node& n : nodes_)
    if (n.op == &kInputOp && n.attrs.name == name) return n.outputs[0];
  return kNoValue;
}

std::vector<ValueId> Graph::params() const {
  std::vector<ValueId> out;
  for (const Node& n : nodes_)
    if (n.op == &kParamOp) out.push_back(n.outputs[0]);
  return out;
}

void Graph::mark_output(ValueId v) {
  PILLARS_CHECK(v >= 0 && v < num_values(), "graph: mark_output of undefined value ", v);
  for (ValueId o : outputs_)
    if (o == v) return;
  outputs_.push_back(v);
}

} // namespace pillars
