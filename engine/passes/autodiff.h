// autodiff: reverse-mode differentiation as a graph pass.
//
// Appends to `g` the nodes computing d loss / d w for every w in `wrt`, by walking the forward
// nodes in reverse topological order and calling each op's vector-Jacobian rule (engine/op.h).
// Gradients reaching a value along several paths are summed. Only values that lie on a path
// from some w to the loss get gradient nodes, so frozen parts of a model cost nothing.
#pragma once
#include <vector>

#include "engine/graph.h"

namespace pillars {

// `loss` must be a scalar (shape []) f32 value. Returns one gradient value per entry of `wrt`
// (same shape), or kNoValue where the loss does not depend on it. The gradients are marked as
// graph outputs so the memory planner keeps them.
std::vector<ValueId> autodiff(Graph& g, ValueId loss, const std::vector<ValueId>& wrt);

} // namespace pillars
