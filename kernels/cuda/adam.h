// The optimizers' elementwise loops on the GPU: the same updates as kernels/cpu/adam.h (read the
// rules there), on device pointers, with the same argument structs (kernels/args/adam.h).
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

#include "kernels/args/adam.h"

namespace pillars::cuda {

// The argument structs, shared with the CPU (kernels/args/adam.h; each field is explained there):
// the caller fills one and either device runs it.
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

// Σ xᵢ² over x (n), accumulated in double (each square is exact in double).
double sum_of_squares(const SumOfSquaresArgs& a, const float* x);

// x ← s·x, x (n) in place.
void scale(const ScaleArgs& a, float* x);

// Gradient accumulation, as cpu::accumulate_weighted and cpu::divide (the same rounding): g (n) or
// null → acc (n), in place; x ← x / s, x (n) in place.
void accumulate_weighted(const AccumulateWeightedArgs& a, const float* g, float* acc);
void divide(const DivideArgs& a, float* x);

} // namespace pillars::cuda
