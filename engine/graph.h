// The graph IR.
//
// A Graph is a list of nodes in topological order, grown by appending. Each node applies one op to input
// *values* and produces one or more output values; a value is an int (ValueId) naming a tensor of a
// known shape and dtype. Models *emit* graphs through the builder functions of engine/ops/*.h;
// nothing is computed until an Executor runs the graph, node by node in this order. Passes
// (autodiff, plan_memory, the method's passes) read a graph and append to it or annotate it; a
// rewrite builds a new graph, or, where values must keep their numbers, edits this one with
// redirect_input and reorder (checked: the order stays topological).
//
//   Graph g;
//   ValueId x = g.input("tokens", {B, T}, DType::i32);   // fed by the caller each run
//   ValueId w = g.param("embed.weight", {V, D});          // bound from a ParamStore by name
//   ValueId e = ops::embedding(g, w, x);                  // (B, T, D)
//
// Three ops have no kernel: `input`, `param` (bound by name at run time, Node::name) and
// `constant` (a tensor owned by the graph, Node::constant_index).
//
// Typed parameters. An op with parameters declares ONE plain struct for them next to its builder
// (engine/ops/<family>.h, ght/ops.h): LayerNormParams, MatmulParams, AttentionParams, ... A node
// holds it type-erased (Node::params, shared and immutable, so copying a node is cheap), and every
// reader — the shape rule, the CPU and CUDA kernels, the vjp, the printer and FLOP counter slots of
// the OpDef — gets it back the same way:
//   const LayerNormParams& p = params_of<LayerNormParams>(node); // throws naming the op otherwise
// Builders pass the struct itself: g.add1(kLayerNorm, {x, gamma, beta}, LayerNormParams{...}).
// Ops without parameters have a null Node::params.
#pragma once
#include <concepts>
#include <cstdint>
#include <memory>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

#include "engine/tensor.h"

namespace pillars {

using ValueId = int32_t;
constexpr ValueId kNoValue = -1;

struct OpDef; // engine/op.h

// The type-erased holder of a node's parameters struct. Ops never derive from it: their structs
// are plain aggregates (designated initializers work), wrapped in OpParamsOf<P> by make_params.
struct OpParams {
  virtual ~OpParams() = default;
  virtual const std::type_info& type() const = 0; // the held struct's type (for error messages)
};

template <class P>
struct OpParamsOf final : OpParams {
  explicit OpParamsOf(P v) : value(std::move(v)) {}
  const std::type_info& type() const override { return typeid(P); }
  P value;
};

template <class P>
std::shared_ptr<const OpParams> make_params(P params) {
  return std::make_shared<const OpParamsOf<P>>(std::move(params));
}

struct ValueInfo {
  Shape shape;
  DType dtype = DType::f32;
  int32_t producer = -1;    // node index
  int32_t output_index = 0; // which output of the producer
};

struct Node {
  const OpDef* op = nullptr;
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;
  // The op's parameters struct (read it with params_of<P>); null for ops without parameters.
  std::shared_ptr<const OpParams> params;
  std::string name;            // input and param leaves: the name they are bound by; "" otherwise
  int64_t constant_index = -1; // constant leaves: the tensor's index in Graph::constants(); -1 otherwise
};

namespace detail {
[[noreturn]] void throw_wrong_params(const Node& node, const std::type_info& wanted); // graph.cpp
}

// The parameters struct of `node`, checked to be a P: throws pillars::Error naming the op, the
// struct it wanted and the one (or none) it found.
template <class P>
const P& params_of(const Node& node) {
  if (const auto* held = dynamic_cast<const OpParamsOf<P>*>(node.params.get())) return held->value;
  detail::throw_wrong_params(node, typeid(P));
}

class Graph {
 public:
  // Leaves.
  ValueId input(const std::string& name, const Shape& shape, DType dtype = DType::f32);
  ValueId param(const std::string& name, const Shape& shape);
  ValueId constant(const Tensor& value);

  // Appends a node applying `op` with the given parameters (the op's params struct, or a node's
  // Node::params to copy; none for ops without parameters); runs the op's shape rule, which throws
  // on bad inputs.
  std::vector<ValueId> add(const OpDef& op, std::vector<ValueId> inputs,
                           std::shared_ptr<const OpParams> params = nullptr);
  template <class P>
  requires(!std::convertible_to<P, std::shared_ptr<const OpParams>>) std::vector<ValueId> add(
      const OpDef& op, std::vector<ValueId> inputs, P params) {
    return add(op, std::move(inputs), make_params(std::move(params)));
  }
  ValueId add1(const OpDef& op, std::vector<ValueId> inputs, std::shared_ptr<const OpParams> params = nullptr) {
    return add(op, std::move(inputs), std::move(params))[0];
  }
  template <class P>
  requires(!std::convertible_to<P, std::shared_ptr<const OpParams>>) ValueId
      add1(const OpDef& op, std::vector<ValueId> inputs, P params) {
    return add(op, std::move(inputs), make_params(std::move(params)))[0];
  }

  const std::vector<Node>& nodes() const { return nodes_; }
  const Node& node(int index) const { return nodes_.at(static_cast<size_t>(index)); }
  const ValueInfo& value(ValueId v) const { return values_.at(static_cast<size_t>(v)); }
  // By value on purpose: a reference would dangle when a nested builder call grows the graph.
  Shape shape(ValueId v) const { return value(v).shape; }
  DType dtype(ValueId v) const { return value(v).dtype; }
  int num_values() const { return static_cast<int>(values_.size()); }
  const Node& producer(ValueId v) const { return node(value(v).producer); }
  const std::vector<Tensor>& constants() const { return constants_; }

  // The parameter / input leaves by name (kNoValue when absent).
  ValueId find_param(const std::string& name) const;
  ValueId find_input(const std::string& name) const;
  std::vector<ValueId> params() const; // in creation order

  // Values the caller wants to read after a run (loss, logits, gradients): plan_memory keeps them alive.
  void mark_output(ValueId v);
  const std::vector<ValueId>& outputs() const { return outputs_; }

  // Two checked edits, for a rewrite that must keep every value's number because earlier passes
  // hold them (engine/passes/saved_activations.h runs after the method's passes and autodiff):
  //
  // Node `node` reads `v` instead of its input `slot`. `v` must have that input's shape and dtype
  // (so the op's shape rule still holds) and be produced before the node.
  void redirect_input(int node, size_t slot, ValueId v);
  // Puts the nodes in the order `order` (a permutation of the node indices: order[k] is the old
  // index of the node that runs k-th). Every node must still come after the producers of its
  // inputs. Values keep their numbers; returns old node index → new.
  std::vector<int> reorder(const std::vector<int>& order);

 private:
  ValueId leaf(Node n, const Shape& shape, DType dtype);
  std::vector<Node> nodes_;
  std::vector<ValueInfo> values_;
  std::vector<Tensor> constants_;
  std::vector<ValueId> outputs_;
};

} // namespace pillars
