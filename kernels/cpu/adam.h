// The optimizers' elementwise loops on the CPU: Adam/AdamW, SGD (momentum, Nesterov), and the two
// passes of gradient-norm clipping. Every loop is one fused pass over the parameter's elements.
//
// Adam / AdamW, per element (t = this parameter's step, 1 for its first update):
//
//   g  ← g + λ₂·p                          (Adam's L2 weight decay; λ₂ = 0 for AdamW)
//   p  ← p · (1 − lr·λ)                    (AdamW's decoupled decay; the factor is 1 for Adam)
//   m  ← β₁·m + (1 − β₁)·g
//   v  ← β₂·v + (1 − β₂)·g·g
//   v̂  ← max(v̂, v)                         (AMSGrad only; v̂ replaces v below)
//   p  ← p − (lr / (1 − β₁ᵗ)) · m / (√v / √(1 − β₂ᵗ) + ε)
//
// SGD, per element (the first update of a parameter sets b ← d instead of the momentum rule):
//
//   d  ← g + λ·p
//   b  ← μ·b + (1 − τ)·d                   (μ = momentum, τ = dampening; skipped when μ = 0)
//   d  ← d + μ·b  (Nesterov)   or   d ← b  (heavy ball)
//   p  ← p − lr·d
//
// The float32 operations are the ones torch 1.13's single-tensor optimizers perform, in the same
// order (each torch op rounds once: m·β₁ and (1−β₁)·g are two roundings, addcmul is (c·g)·g,
// addcdiv is (c·m)/denom). The scalar coefficients are computed by the caller in double, as torch
// does in Python, and rounded to float once (see AdamArgs / SgdArgs).
//
// Threads: large tensors are cut into fixed blocks that run on OpenMP threads; the arithmetic per
// element never depends on the blocking, so results are identical for any thread count. The inner
// loops are branch-free per element (the flags are loop-invariant) and vectorize.
#pragma once
#include <cstdint>

namespace pillars::cpu {

// The arguments of one update of n elements: the scalars are computed by the caller in double and
// rounded to float once (the same fields as cuda::AdamArgs / cuda::SgdArgs).
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

// One Adam/AdamW update of n elements in place: p, g, m, v (n); `v_max` (n) is the AMSGrad
// running maximum, or null.
void adam_update(const AdamArgs& a, float* p, const float* g, float* m, float* v, float* v_max);

struct SgdArgs {
  int64_t n = 0;
  float weight_decay = 0;        // λ
  float momentum = 0;            // μ (0: no momentum buffer)
  float one_minus_dampening = 1; // 1 − τ
  float neg_lr = 0;              // −lr
  bool nesterov = false;
  bool first = false; // the parameter's first update: b ← d
};

// One SGD update of n elements in place: p, g (n); `buf` (n) is the momentum buffer (null when
// μ = 0).
void sgd_update(const SgdArgs& a, float* p, const float* g, float* buf);

// Σ xᵢ² over x (n), accumulated in double. The summation order depends on n only (fixed blocks,
// fixed lanes), never on the thread count, so the result is reproducible bit for bit.
struct SumOfSquaresArgs {
  int64_t n = 0;
};
double sum_of_squares(const SumOfSquaresArgs& a, const float* x);

// x ← s·x, x (n) in place.
struct ScaleArgs {
  int64_t n = 0;
  float s = 1;
};
void scale(const ScaleArgs& a, float* x);

// Gradient accumulation (train.update_freq > 1) over the batches of one update:
//   accumulate_weighted  acc ← w·g (first batch) or acc + w·g; g = null adds nothing (a parameter
//                        without a gradient in this batch), and on the first batch zeroes acc
//   divide               x ← x / s (the update's gradient: the token-weighted mean)
struct AccumulateWeightedArgs {
  int64_t n = 0;
  float w = 0;        // the batch's weight
  bool first = false; // the update's first batch: acc is overwritten, not added to
};
// g (n) or null → acc (n), in place.
void accumulate_weighted(const AccumulateWeightedArgs& a, const float* g, float* acc);
struct DivideArgs {
  int64_t n = 0;
  float s = 1;
};
// x (n) in place.
void divide(const DivideArgs& a, float* x);

} // namespace pillars::cpu
