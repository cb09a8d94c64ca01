// Elementwise ops. Binary ops broadcast numpy-style (shapes aligned at the right; an extent of 1,
// or a missing leading axis, stretches). Gradients of broadcast inputs are summed back with sum_to.
#pragma once
#include "engine/graph.h"
#include "engine/tensor.h"

namespace pillars::ops {

// ---- parameters (params_of<P>(node), engine/graph.h) ----

// scale: y = factor · x.
struct ScaleParams {
  float factor = 1.0f; // the multiplier (neg is scale by −1)
};

// add_scalar: y = x + value.
struct AddScalarParams {
  float value = 0.0f; // the constant added to every element
};

// fill: an f32 tensor of `shape` with every element `value` (no inputs).
struct FillParams {
  Shape shape;        // the output's shape ({} is a scalar)
  float value = 0.0f; // every element's value
};

// leaky_relu and leaky_relu_backward: y = x for x > 0, slope·x otherwise.
struct LeakyReluParams {
  float slope = 0.01f; // the gradient for x < 0
};

// sum_to and broadcast_to: the output's shape (the input's shape broadcasts to it, or it to the
// input's).
struct TargetShapeParams {
  Shape shape; // the output's shape
};

// The binary and activation ops (add, sub, mul, div, exp, log, sqrt, tanh, relu, gelu and the
// activation gradients) have no parameters.

// The ops themselves, for passes that match nodes (node.op == &ops::kRelu; engine/passes/fuse_linear.cpp).
extern const OpDef kAdd, kRelu, kGelu;

// ---- builders ----

ValueId add(Graph& g, ValueId a, ValueId b);
ValueId sub(Graph& g, ValueId a, ValueId b);
ValueId mul(Graph& g, ValueId a, ValueId b);
ValueId div(Graph& g, ValueId a, ValueId b);
ValueId scale(Graph& g, ValueId x, float s);      // s · x
ValueId add_scalar(Graph& g, ValueId x, float c); // x + c
ValueId neg(Graph& g, ValueId x);

ValueId exp(Graph& g, ValueId x);
ValueId log(Graph& g, ValueId x);
ValueId sqrt(Graph& g, ValueId x);
ValueId tanh(Graph& g, ValueId x);
ValueId relu(Graph& g, ValueId x);
ValueId gelu(Graph& g, ValueId x);                    // exact: x · Φ(x) = x/2 · (1 + erf(x/√2))
ValueId leaky_relu(Graph& g, ValueId x, float slope); // x (...) → y (...): x for x > 0, slope·x otherwise

// Backward helpers (also ordinary ops): dy · [y > 0] given relu's output y, dy · gelu'(x).
ValueId relu_backward(Graph& g, ValueId dy, ValueId y);
ValueId gelu_backward(Graph& g, ValueId dy, ValueId x);
ValueId leaky_relu_backward(Graph& g, ValueId dy, ValueId x, float slope); // dy for x > 0, slope·dy otherwise

ValueId fill(Graph& g, const Shape& shape, float value); // a constant-valued f32 tensor
// Sum x down to `shape` (the inverse of broadcasting): the gradient of a broadcast.
ValueId sum_to(Graph& g, ValueId x, const Shape& shape);
// Broadcast x up to `shape` (copies).
ValueId broadcast_to(Graph& g, ValueId x, const Shape& shape);

} // namespace pillars::ops
