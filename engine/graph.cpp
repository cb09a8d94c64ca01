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

void Graph::redirect_input(int node, size_t slot, ValueId v) {
  PILLARS_CHECK(node >= 0 && node < static_cast<int>(nodes_.size()), "graph: redirect_input of node ", node, " of ",
                nodes_.size());
  Node& n = nodes_[static_cast<size_t>(node)];
  PILLARS_CHECK(slot < n.inputs.size(), "graph: ", n.op->name, " has no input ", slot);
  PILLARS_CHECK(v >= 0 && v < num_values(), "graph: redirect_input to undefined value ", v);
  const ValueInfo& old = value(n.inputs[slot]);
  const ValueInfo& now = value(v);
  PILLARS_CHECK(now.shape == old.shape && now.dtype == old.dtype, "graph: ", n.op->name, " input ", slot, " is ",
                dtype_name(old.dtype), shape_str(old.shape), "; cannot read ", dtype_name(now.dtype),
                shape_str(now.shape));
  PILLARS_CHECK(now.producer < node, "graph: ", n.op->name, " (node ", node, ") cannot read value ", v,
                ", made later by node ", now.producer);
  n.inputs[slot] = v;
}

std::vector<int> Graph::reorder(const std::vector<int>& order) {
  const size_t nn = nodes_.size();
  PILLARS_CHECK(order.size() == nn, "graph: reorder of ", nn, " nodes given ", order.size());
  std::vector<int> new_index(nn, -1);
  for (size_t k = 0; k < nn; ++k) {
    const int old = order[k];
    PILLARS_CHECK(old >= 0 && static_cast<size_t>(old) < nn && new_index[static_cast<size_t>(old)] < 0,
                  "graph: reorder is not a permutation (node ", old, " at ", k, ")");
    new_index[static_cast<size_t>(old)] = static_cast<int>(k);
  }
  for (size_t k = 0; k < nn; ++k)
    for (ValueId v : nodes_[static_cast<size_t>(order[k])].inputs) {
      const int producer = new_index[static_cast<size_t>(value(v).producer)];
      PILLARS_CHECK(producer < static_cast<int>(k), "graph: reorder puts ",
                    nodes_[static_cast<size_t>(order[k])].op->name, " (node ", order[k],
                    ") before the producer of its input ", v);
    }
  std::vector<Node> nodes(nn);
  for (size_t k = 0; k < nn; ++k) nodes[k] = std::move(nodes_[static_cast<size_t>(order[k])]);
  nodes_ = std::move(nodes);
  for (ValueInfo& info : values_) info.producer = new_index[static_cast<size_t>(info.producer)];
  return new_index;
}

} // namespace pillars
