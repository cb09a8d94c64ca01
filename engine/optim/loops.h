// The optimizers' elementwise loops on whichever device holds the parameter: the CPU kernels of
// kernels/cpu/adam.h, or their CUDA twins (kernels/cuda/adam.h), which perform the same fp32
// operations in the same order. The optimizers and clipping call these and never ask where a
// tensor lives; a CPU-only build throws a clear error for device tensors.
#pragma once
#include <cstdint>

#include "engine/tensor.h"
#include "kernels/cpu/adam.h"

namespace pillars::optim {

void adam_update(Device d, const cpu::AdamArgs& a, float* p, const float* g, float* m, float* v, float* v_max);
void sgd_update(Device d, const cpu::SgdArgs& a, float* p, const float* g, float* buf);
double sum_of_squares(Device d, int64_t n, const float* x);
void scale(Device d, int64_t n, float* x, float s);
void accumulate_weighted(Device d, int64_t n, float* acc, const float* g, float w, bool first);
void divide(Device d, int64_t n, float* x, float s);

} // namespace pillars::optim
