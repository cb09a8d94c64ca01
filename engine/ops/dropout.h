// The dropout op family: dropout and masked_fill (engine/ops/dropout.cpp; kernels:
// kernels/cpu/dropout.h, kernels/cuda/dropout.h).
#pragma once
#include <cstddef>
#include <cstdint>

#include "engine/graph.h"

namespace pillars::ops {

// dropout (its gradient is the same op with the same parameters).
struct DropoutParams {
  float p = 0.0f;          // the probability of zeroing an element, in [0, 1]
  uint64_t seed = 0;       // the stream's seed; the executor's run seed is added at run time
  uint64_t rng_offset = 0; // where in the stream element 0 draws (kernels/philox.h)
};

struct MaskedFillParams {
  float value = 0.0f; // written where the mask is non-zero (−inf for attention masks)
};

// Dropout with the counter-based RNG (kernels/philox.h): element i is kept when
// philox_uniform(seed, offset, i) >= p and scaled by 1/(1 − p). Same mask from the same
// (seed, offset) on any device; the backward regenerates it.
ValueId dropout(Graph& g, ValueId x, float p, uint64_t seed, uint64_t offset);

// y = where(mask != 0, value, x); mask is i32, broadcast to x's shape.
ValueId masked_fill(Graph& g, ValueId x, ValueId mask, float value);

} // namespace pillars::ops
