// fuse_linear_activation: a forward-graph rewrite that puts one `linear_act` node
// (engine/ops/linear_act.h) where the graph has a linear layer followed by ReLU or GELU:
//
//   m = matmul(x, W) trans_b      x (..., in), W (out, in)        (ops::linear emits these two)
//   z = add(m, b)                 b (out)
//   y = relu(z) | gelu(z)                       →     y = linear_act(x, W, b) name=relu|gelu
//
// A chain is fused only when m and z have no other reader and are not graph outputs (nothing else
// may need the values the fused op no longer produces), the matmul is plain (no trans_a, scale 1)
// and W is 2-D. Everything else is copied unchanged, in order.
//
// Run it on the forward graph, BEFORE autodiff: the backward then comes from linear_act's vjp.
// A graph cannot drop nodes, so the pass builds a new graph: leaves keep their names (inputs and
// parameters bind as before), constants are copied, marked outputs stay marked. Value and node
// numbers change; the result maps old ones to new ones so a caller can find its values again
// (StepGraph::replace_graph, steps/pass.h, does this for a step and its attention sites).
#pragma once
#include "engine/graph.h"
#include "engine/passes/copy_node.h"

namespace pillars {

// The new graph; in its maps the m and z of a fused chain are gone (kNoValue), its matmul and add
// nodes map to -1 and its activation's node to the linear_act; `fused` counts the chains.
RewrittenGraph fuse_linear_activation(const Graph& g);

} // namespace pillars
