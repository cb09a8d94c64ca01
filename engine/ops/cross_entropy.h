// The cross-entropy op family: cross_entropy and cross_entropy_backward (engine/ops/cross_entropy.cpp;
// kernels: kernels/cpu/cross_entropy.h, kernels/cuda/cross_entropy.h).
#pragma once
#include <cstddef>
#include <cstdint>

#include "engine/graph.h"

namespace pillars::ops {

// cross_entropy and cross_entropy_backward.
struct CrossEntropyParams {
  float smoothing = 0.0f;      // label smoothing ε in [0, 1]
  int64_t ignore_index = -100; // rows with this target count neither in the loss nor in the mean
};

// The op itself, for passes that match nodes (engine/passes/fuse_linear_cross_entropy.cpp).
extern const OpDef kCrossEntropy;

// Cross-entropy of logits (N, V) against i32 targets (N), mean over targets != ignore_index,
// with label smoothing ε: loss_n = (1 − ε)·(−log p_t) + ε/V · Σ_v (−log p_v) (PyTorch's definition).
// Output: a scalar. (N with no valid target gives 0.) Also accepts logits (..., V) with targets (...).
// Fused: the node's second output is the per-row log-sum-exp (N), all the backward needs besides
// the logits (no (N, V) softmax is kept). A target outside [0, V) that is not ignore_index is an
// error reported by the kernel.
ValueId cross_entropy(Graph& g, ValueId logits, ValueId targets, float smoothing = 0.0f, int64_t ignore_index = -100);

} // namespace pillars::ops
