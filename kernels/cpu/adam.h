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

#include "kernels/args/adam.h"

namespace pillars::cpu {

// The argument structs (AdamArgs, SgdArgs, SumOfSquaresArgs, ScaleArgs, AccumulateWeightedArgs,
// DivideArgs) are kernels/args/adam.h's, shared with the GPU (kernels/cuda/adam.h).
using kernels::AccumulateWeightedArgs;
using kernels::AdamArgs;
using kernels::DivideArgs;
using kernels::ScaleArgs;
using kernels::SgdArgs;
using kernels::SumOfSquaresArgs;

// One Adam/AdamW update of n elements in place: p, g, m, v (n); `v_max` (n) is the AMSGrad
// running maximum, or null.
void adam_update(const AdamArgs& a, float* p, const float* g, float* m, float* v, float* v_max);

// One SGD update of n elements in place: p, g (n); `buf` (n) is the momentum buffer (null when
// μ = 0).
void sgd_update(const SgdArgs& a, float* p, const float* g, float* buf);

// Σ xᵢ² over x (n), accumulated in double. The summation order depends on n only (fixed blocks,
// fixed lanes), never on the thread count, so the result is reproducible bit for bit.
double sum_of_squares(const SumOfSquaresArgs& a, const float* x);

// x ← s·x, x (n) in place.
void scale(const ScaleArgs& a, float* x);

// Gradient accumulation (train.update_freq > 1) over the batches of one update:
//   accumulate_weighted  acc ← w·g (first batch) or acc + w·g; g = null adds nothing (a parameter
//                        without a gradient in this batch), and on the first batch zeroes acc
//   divide               x ← x / s (the update's gradient: the token-weighted mean)
// g (n) or null → acc (n), in place.
void accumulate_weighted(const AccumulateWeightedArgs& a, const float* g, float* acc);
// x (n) in place.
void divide(const DivideArgs& a, float* x);

} // namespace pillars::cpu
