// Elementwise ops. Binary ops broadcast numpy-style (shapes aligned at the right; an extent of 1,
// or a missing leading axis, stretches). Gradients of broadcast inputs are summed back with sum_to.
#pragma once
#include "engine/graph.h"

namespace pillars::ops {

ValueId add(Graph& g, ValueId a, ValueId b);
ValueId sub(Graph& g, ValueId a, ValueId b);
ValueId mul(Graph& g, ValueId a, ValueId b);
ValueId div(Graph& g, ValueId a, ValueId b);
ValueId scale(Graph& g, ValueId x, float s);        // s · x
ValueId add_scalar(Graph& g, ValueId x, float c);   // x + c
ValueId neg(Graph& g, ValueId x);

ValueId exp(Graph& g, ValueId x);
ValueId log(Graph& g, ValueId x);
ValueId sqrt(Graph& g, ValueId x);
ValueId tanh(Graph& g, ValueId x);
ValueId relu(Graph& g, ValueId x);
ValueId gelu(Graph& g, ValueId x);                  // exact: x · Φ(x) = x/2 · (1 + erf(x/√2))

// Backward helpers (also ordinary ops): dy · [y > 0] given relu's output y, dy · gelu'(x).
ValueId relu_backward(Graph& g, ValueId dy, ValueId y);
ValueId gelu_backward(Graph& g, ValueId dy, ValueId x);

ValueId fill(Graph& g, const Shape& shape, float value); // a constant-valued f32 tensor
ValueId zeros_like(Graph& g, ValueId x);
// Sum x down to `shape` (the inverse of broadcasting): the gradient of a broadcast.
ValueId sum_to(Graph& g, ValueId x, const Shape& shape);
// Broadcast x up to `shape` (copies).
ValueId broadcast_to(Graph& g, ValueId x, const Shape& shape);

} // namespace pillars::ops
