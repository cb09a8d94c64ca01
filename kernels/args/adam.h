// The argument structs of the optimizers' elementwise loops (Adam/AdamW, SGD, gradient-norm
// clipping, gradient accumulation), declared once for both devices: kernels/cpu/adam.h and
// kernels/cuda/adam.h bring them into cpu:: and cuda:: (the update rules are in kernels/cpu/adam.h).
// The caller fills one struct and either device runs it. Device-neutral: standard headers only.
#pragma once
#include <cstdint>

namespace pillars::kernels {

// The arguments of one update of n elements: the scalars are computed by the caller in double and
// rounded to float once.
struct AdamArgs {
  int64_t n = 0;
  float beta1 = 0, one_minus_beta1 = 0; // β₁, 1 − β₁ (rounded from double, as torch does)
  float beta2 = 0, one_minus_beta2 = 0; // β₂, 1 − β₂
  float l2 = 0;                         // λ₂: Adam's weight decay added to the gradient
  float decay = 1;                      // AdamW: 1 − lr·λ; 1 for Adam
  float neg_step_size = 0;              // −lr / (1 − β₁ᵗ)
  float bias_correction2_sqrt = 1;      // √(1 − β₂ᵗ)
  float eps = 0;
};

struct SgdArgs {
  int64_t n = 0;
  float weight_decay = 0;        // λ
  float momentum = 0;            // μ (0: no momentum buffer)
  float one_minus_dampening = 1; // 1 − τ
  float neg_lr = 0;              // −lr
  bool nesterov = false;
  bool first = false; // the parameter's first update: b ← d
};

// Σ xᵢ² over x (n).
struct SumOfSquaresArgs {
  int64_t n = 0;
};

// x ← s·x, x (n).
struct ScaleArgs {
  int64_t n = 0;
  float s = 1;
};

// acc ← w·g (first batch) or acc + w·g, acc and g (n).
struct AccumulateWeightedArgs {
  int64_t n = 0;
  float w = 0;        // the batch's weight
  bool first = false; // the update's first batch: acc is overwritten, not added to
};

// x ← x / s, x (n).
struct DivideArgs {
  int64_t n = 0;
  float s = 1;
};

} // namespace pillars::kernels
