// A linear layer and its activation as one op: what the fuse_linear_activation pass
// (engine/passes/fuse_linear.h) puts where a model wrote ops::linear followed by ops::relu/gelu.
#pragma once
#include "base/enum_names.h"
#include "engine/graph.h"

namespace pillars::ops {

// The feed-forward activation: ReLU, or the exact (erf) GELU. Also the experiment's model.activation.
enum class Activation : uint8_t { relu, gelu };
constexpr auto enum_table(Activation) {
  return enum_words<Activation>({{Activation::relu, "relu"}, {Activation::gelu, "gelu"}});
}

// linear_act's parameters (params_of<LinearActParams>(node)).
struct LinearActParams {
  Activation activation = Activation::relu; // act: relu (one output) or gelu (also returns pre)
};

struct LinearAct {
  ValueId y = kNoValue;   // (..., out) act(x Wᵀ + b)
  ValueId pre = kNoValue; // (..., out) x Wᵀ + b, the GELU's input (gelu only; kNoValue for relu)
};

// y = act(x Wᵀ + b): x (..., in) with rank >= 2, W (out, in), b (out) → y (..., out).
// ReLU's gradient reads y (as ops::relu's does); GELU's reads the pre-activation, which the op
// therefore returns as a second output (on the GPU it is cuBLASLt's "aux" output).
// The node's LinearActParams hold the activation.
LinearAct linear_act(Graph& g, ValueId x, ValueId w, ValueId b, Activation act);

} // namespace pillars::ops
