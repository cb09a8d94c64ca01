// The graph IR.
//
// A Graph is an append-only list of nodes in topological order. Each node applies one op to input
// *values* and produces one or more output values; a value is an int (ValueId) naming a tensor of a
// known shape and dtype. Models *emit* graphs through the builder functions of engine/ops/*.h;
// nothing is computed until an Executor runs the graph. Passes (autodiff, plan_memory, and later
// HUDS/GCT/V2S) read a graph and append to it or annotate it.
//
//   Graph g;
//   ValueId x = g.input("tokens", {B, T}, DType::i32);   // fed by the caller each run
//   ValueId w = g.param("embed.weight", {V, D});          // bound from a ParamStore by name
//   ValueId e = ops::embedding(g, w, x);                  // (B, T, D)
//
// Three ops have no kernel: `input`, `param` (bound by name at run time) and `constant` (a tensor
// owned by the graph).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/tensor.h"

namespace pillars {

using ValueId = int32_t;
constexpr ValueId kNoValue = -1;

struct OpDef; // engine/op.h

// Per-node attributes. One struct for all ops keeps the IR flat and printable; each op's
// definition says which fields it reads (the others keep their defaults).
struct Attrs {
  std::string name;              // input/param name; free-form tag elsewhere
  int64_t axis = -1;             // reductions, softmax, concat, slice, cosine
  bool keepdim = false;          // reductions
  bool trans_a = false, trans_b = false; // matmul
  float scale = 1.0f;            // scale, matmul alpha, attention softmax scale
  float eps = 1e-5f;             // layer norm, cosine similarity
  float p = 0.0f;                // dropout probability
  float value = 0.0f;            // fill / masked_fill value
  float smoothing = 0.0f;        // cross-entropy label smoothing
  int64_t ignore_index = -100;   // cross-entropy
  bool causal = false;           // attention
  int64_t heads = 0;             // attention
  uint64_t seed = 0, rng_offset = 0; // dropout streams (kernels/philox.h)
  std::vector<int64_t> ints;     // permutation, target shape, slice bounds, ... (op-specific)
};

struct ValueInfo {
  Shape shape;
  DType dtype = DType::f32;
  int32_t producer = -1;         // node index
  int32_t output_index = 0;      // which output of the producer
};

struct Node {
  const OpDef* op = nullptr;
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;
  Attrs attrs;
};

class Graph {
 public:
  // Leaves.
  ValueId input(const std::string& name, const Shape& shape, DType dtype = DType::f32);
  ValueId param(const std::string& name, const Shape& shape);
  ValueId constant(const Tensor& value);

  // Appends a node applying `op`; runs the op's shape rule, which throws on bad inputs.
  std::vector<ValueId> add(const OpDef& op, std::vector<ValueId> inputs, Attrs attrs = {});
  ValueId add1(const OpDef& op, std::vector<ValueId> inputs, Attrs attrs = {}) { return add(op, std::move(inputs), std::move(attrs))[0]; }

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

 private:
  ValueId leaf(const OpDef& op, const Shape& shape, DType dtype, Attrs attrs);
  std::vector<Node> nodes_;
  std::vector<ValueInfo> values_;
  std::vector<Tensor> constants_;
  std::vector<ValueId> outputs_;
};

} // namespace pillars
