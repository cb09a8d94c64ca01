// Counting the arithmetic of a graph: floating-point operations per node, summed.
//
//   FlopCount c = count_flops(graph);          // e.g. a forward graph built with train = false
//   c.total / target_tokens                    // FLOPs per token
//
// Counted (a multiply-add is 2 FLOPs):
//   matmul     2·M·N·K per product (batched: times the batch)
//   linear_act 2·M·N·K under matmul, plus 2 per output element (bias, activation) under other
//   attention  4·B·H·Tq·Tk·D (Q·Kᵀ and P·V; the softmax's exp and divisions under "other"),
//              halved under a causal mask (only the lower triangle is computed)
//   every other op: one FLOP per output element ("other": elementwise ops, norms, softmax)
// Leaves, views and constants cost nothing. Backward ops are counted the same way, so on a
// training graph the total is forward + backward. Each op's count is its OpDef::flops slot
// (engine/op.h; the one-per-element rule when it has none): this pass only sums them.
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "engine/graph.h"

namespace pillars {

struct FlopCount {
  double matmul = 0, attention = 0, other = 0;
  double total() const { return matmul + attention + other; }
  std::map<std::string, double> by_op; // op name → FLOPs
};

FlopCount count_flops(const Graph& g);

} // namespace pillars
