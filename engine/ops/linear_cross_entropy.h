// The language-model head and its cross-entropy as one op: what the fuse_linear_cross_entropy pass
// (engine/passes/fuse_linear_cross_entropy.h) puts where a training step wrote
//   logits = matmul(h, W) trans_b;  L = cross_entropy(logits, t)
// so that the (N, V) logits — a training step's largest buffer — are never stored.
#pragma once
#include <cstdint>

#include "engine/graph.h"

namespace pillars::ops {

// linear_cross_entropy's parameters (params_of<LinearCrossEntropyParams>(node)).
struct LinearCrossEntropyParams {
  float smoothing = 0.0f;      // label smoothing ε in [0, 1] (as ops::cross_entropy)
  int64_t ignore_index = -100; // rows with this target count neither in the loss nor in the mean
  int64_t block_rows = 1;      // rows per block of the sweep: the scratch holds block_rows × V logits
};

// The op itself, for passes that match nodes.
extern const OpDef kLinearCrossEntropy;

struct LinearCrossEntropy {
  ValueId loss = kNoValue; // scalar: cross_entropy(h Wᵀ, t), exactly ops::cross_entropy's definition
  ValueId dh = kNoValue;   // (N, d): ∂loss/∂h, made in the forward sweep
  ValueId dW = kNoValue;   // (V, d): ∂loss/∂W, made in the forward sweep
};

// h (N, d) f32, W (V, d) f32, targets (N) i32. The gradients of the loss come out of the forward
// node (they cost the two products the unfused backward would run, and need no logits); the op's
// vjp only scales them by the upstream gradient G: dh_total = G·dh, dW_total = G·dW.
LinearCrossEntropy linear_cross_entropy(Graph& g, ValueId h, ValueId W, ValueId targets, float smoothing,
                                        int64_t ignore_index, int64_t block_rows);

} // namespace pillars::ops
