// Conversions between fp32 and bf16, the storage type of activations kept for the backward in
// bf16 (engine/ops/cast.h, engine/passes/saved_activations.h).
//
// bf16 is the upper half of an IEEE fp32: 1 sign bit, 8 exponent bits (fp32's range), 7 mantissa
// bits (about 2–3 decimal digits). Narrowing rounds to nearest, ties to even, by adding 0x7fff
// plus the lowest kept bit to the fp32 pattern before dropping the low 16 bits; a NaN stays a
// (quiet) NaN, ±inf stay ±inf. Widening appends 16 zero bits, so it is exact.
// These loops give the same bits as engine/tensor.h's scalar f32_to_bf16 / bf16_to_f32.
#pragma once
#include <cstdint>

#include "kernels/args/cast.h"

namespace pillars::cpu {

using kernels::CastArgs; // kernels/args/cast.h, shared with the GPU's casts
// y[i] = bf16(x[i]): x (n) → y (n).
void f32_to_bf16(const CastArgs& a, const float* x, uint16_t* y);
// y[i] = float(x[i]): x (n) → y (n).
void bf16_to_f32(const CastArgs& a, const uint16_t* x, float* y);

// x[i] ← float(bf16(x[i])), in place: x (n) keeps fp32 storage but holds bf16 values (the low 16
// bits zero), the operands of a bf16 product that runs on fp32 arithmetic (kernels/cpu/attention.h).
// Rounding a bf16 value again leaves it unchanged, so a value rounded once may be read as rounded.
// One thread: it serves small tiles, inside kernels that already run on OpenMP threads.
void round_to_bf16(float* x, int64_t n);

} // namespace pillars::cpu
