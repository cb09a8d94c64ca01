// The softmax op family: softmax, log_softmax and softmax_backward (engine/ops/softmax.cpp opens
// with the math; kernels: kernels/cpu/softmax.h, kernels/cuda/softmax.h).
#pragma once
#include <cstddef>
#include <cstdint>

#include "engine/graph.h"

namespace pillars::ops {

// softmax, log_softmax and their backward ops.
struct SoftmaxParams {
  int64_t axis = 0; // the normalized axis, stored non-negative (the builders normalize it)
};

// softmax / log-softmax along `axis` (default last), statistics in f32. A row that is entirely
// −inf (fully masked) gives softmax 0 and log-softmax −inf, never NaN.
ValueId softmax(Graph& g, ValueId x, int64_t axis = -1);
ValueId log_softmax(Graph& g, ValueId x, int64_t axis = -1);
// The softmax vector-Jacobian product as an op: dx = y ∘ (dy − Σ_axis dy ∘ y), y = softmax(x).
ValueId softmax_backward(Graph& g, ValueId y, ValueId dy, int64_t axis = -1);

} // namespace pillars::ops
