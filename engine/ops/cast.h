// cast: the same values in another floating-point storage type, f32 ↔ bf16.
//
//   y = cast(x, bf16)   rounds each element to nearest, ties to even (kernels/cpu/cast.h)
//   y = cast(x, f32)    exact (a bf16 is the upper half of an f32)
//
// Models do not use it: the saved_activations pass (engine/passes/saved_activations.h) puts a
// cast to bf16 behind the activations the backward reads, and a cast back to f32 in front of the
// nodes that read them again, so what lives from the forward to the backward takes half the bytes.
// A cast has no gradient rule: autodiff follows f32 values only (a bf16 value stops it, as an
// integer does), and the pass adds its casts after autodiff, whose backward already treats the
// rounding as the identity.
#pragma once
#include "engine/graph.h"
#include "engine/tensor.h"

namespace pillars::ops {

struct CastParams {
  DType to = DType::f32; // f32 or bf16; the input is the other one (or the same: a copy)
};

extern const OpDef kCast; // for passes that recognize their own nodes

ValueId cast(Graph& g, ValueId x, DType to);

} // namespace pillars::ops
