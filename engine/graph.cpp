// Graph construction: see graph.h.
#include "engine/graph.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>

#include "base/error.h"
#include "engine/op.h"

namespace pillars {

namespace {

// The leaves print what binds them.
std::string print_leaf_name(const Node& n) { return str_cat(" name=", n.name); }
std::string print_constant(const Node& n) { return str_cat(" index=", n.constant_index); }

// "pillars::ops::LayerNormParams" for a type's mangled name (the mangled name if that fails).
std::string type_name(const std::type_info& t) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(t.name(), nullptr, nullptr, &status), std::free);
  return status == 0 && d ? std::string(d.get()) : std::string(t.name());
}

} // namespace

const OpDef kInputOp{.name = "input", .print = print_leaf_name};
const OpDef kParamOp{.name = "param", .print = print_leaf_name};
const OpDef kConstantOp{.name = "constant", .print = print_constant};

namespace detail {
void throw_wrong_params(const Node& node, const std::type_info& wanted) {
  throw Error(str_cat(node.op ? node.op->name : "(no op)", ": the node's parameters should be a ", type_name(wanted),
                      ", but it carries ", node.params ? type_name(node.params->type()) : std::string("none")));
}
} // namespace detail

ValueId Graph::leaf(Node n, const Shape& shape, DType dtype) {
  const ValueId v = static_cast<ValueId>(values_.size());
  values_.push_back(ValueInfo{shape, dtype, static_cast<int32_t>(nodes_.size()), 0});
  n.outputs.push_back(v);
  nodes_.push_back(std::move(n));
  return v;
}

ValueId Graph::input(const std::string& name, const Shape& shape, DType dtype) {
  PILLARS_CHECK(find_input(name) == kNoValue, "graph: input '", name, "' declared twice");
  Node n;
  n.op = &kInputOp;
  n.name = name;
  return leaf(std::move(n), shape, dtype);
}

ValueId Graph::param(const std::string& name, const Shape& shape) {
  const ValueId existing = find_param(name);
  if (existing != kNoValue) {
    PILLARS_CHECK(value(existing).shape == shape, "graph: parameter '", name, "' used with shapes ",
                  shape_str(value(existing).shape), " and ", shape_str(shape));
    return existing; // a parameter used twice (tied embeddings) is one value
  }
  Node n;
  n.op = &kParamOp;
  n.name = name;
  return leaf(std::move(n), shape, DType::f32);
}

ValueId Graph::constant(const Tensor& value) {
  Node n;
  n.op = &kConstantOp;
  n.constant_index = static_cast<int64_t>(constants_.size());
  constants_.push_back(value);
  return leaf(std::move(n), value.shape(), value.dtype());
}

std::vector<ValueId> Graph::add(const OpDef& op, std::vector<ValueId> inputs, std::shared_ptr<const OpParams> params) {
  for (ValueId v : inputs)
    PILLARS_CHECK(v >= 0 && v < num_values(), "graph: op '", op.name, "' given an undefined value ", v);
  Node n;
  n.op = &op;
  n.inputs = std::move(inputs);
  n.params = std::move(params);
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
    if (n.op == &kParamOp && n.name == name) return n.outputs[0];
  return kNoValue;
}

ValueId Graph::find_input(const std::string& name) const {
  for (const Node& n : nodes_)
    if (n.op == &kInputOp && n.name == name) return n.outputs[0];
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
