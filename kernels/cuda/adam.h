// The optimizers' elementwise loops on the GPU: the same updates as kernels/cpu/adam.h (read the
// rules there), on device pointers, with structs of the same fields.
//
// Each update performs exactly the CPU kernel's fp32 operations in the same order, each rounded
// once (no fused multiply-adds), so the GPU and the CPU agree bit for bit on the same inputs
// (tests/test_cuda_optim.cpp holds them to 1e-6 relative and reports the bitwise matches).
//
// adam_update, sgd_update and scale are asynchronous on cuda::stream(). sum_of_squares returns to
// the host, so it waits for the stream; its summation order depends on n alone (fixed blocks, a
// fixed-order tree, fp64 throughout), so it is reproducible bit for bit. It uses a static device
// buffer: call it from one host thread at a time, and not while capturing a CUDA graph.
// Plain C++: callable from host code compiled without nvcc.
#pragma once
#include <cstdint>

namespace pillars::cuda {

// The fields of cpu::AdamArgs / cpu::SgdArgs (kernels/cpu/adam.h, where each is explained); the
// caller fills both from the same floats.
struct AdamArgs {
  int64_t n = 0;
  float beta1 = 0, one_minus_beta1 = 0;
  float beta2 = 0, one_minus_beta2 = 0;
  float l2 = 0;
  float decay = 1;
  float neg_step_size = 0;
  float bias_correction2_sqrt = 1;
  float eps = 0;
};

struct SgdArgs {
  int64_t n = 0;
  float weight_decay = 0;
  float momentum = 0;
  float one_minus_dampening = 1;
  float neg_lr = 0;
  bool nesterov = false;
  bool first = false;
};

// One Adam/AdamW update of n elements in place: p, g, m, v (n); `v_max` (n) is the AMSGrad
// running maximum, or null.
void adam_update(const AdamArgs& a, float* p, const float* g, float* m, float* v, float* v_max);

// One SGD update of n elements in place: p, g (n); `buf` (n) is the momentum buffer (null when
// μ = 0).
void sgd_update(const SgdArgs& a, float* p, const float* g, float* buf);

// The fields of cpu::SumOfSquaresArgs, cpu::ScaleArgs, cpu::AccumulateWeightedArgs and
// cpu::DivideArgs (kernels/cpu/adam.h, where each is explained).
struct SumOfSquaresArgs {
  int64_t n = 0;
};
struct ScaleArgs {
  int64_t n = 0;
  float s = 1;
};
struct AccumulateWeightedArgs {
  int64_t n = 0;
  float w = 0;
  bool first = false;
};
struct DivideArgs {
  int64_t n = 0;
  float s = 1;
};

// Σ xᵢ² over x (n), accumulated in double (each square is exact in double).
double sum_of_squares(const SumOfSquaresArgs& a, const float* x);

// x ← s·x, x (n) in place.
void scale(const ScaleArgs& a, float* x);

// Gradient accumulation, as cpu::accumulate_weighted and cpu::divide (the same rounding): g (n) or
// null → acc (n), in place; x ← x / s, x (n) in place.
void accumulate_weighted(const AccumulateWeightedArgs& a, const float* g, float* acc);
void divide(const DivideArgs& a, float* x);

} // namespace pillars::cuda
