// Softmax and log-softmax along one axis, forward and backward, on the CPU.
//
// The tensor is viewed as (outer, len, inner): the axis has `len` entries, `inner` is the product
// of the extents after it (1 for the last axis), `outer` the product of those before it. Each of
// the outer·inner "rows" x_0 .. x_{len−1} (stride `inner` in memory) is normalized on its own:
//
//   softmax      y_l = exp(x_l − m) / s            m = max_l x_l,  s = Σ_l exp(x_l − m)
//   log-softmax  y_l = x_l − m − log s
//
// Gradients (g = dL/dy):
//   softmax      dx_l = y_l · (g_l − Σ_k g_k y_k)
//   log-softmax  dx_l = g_l − exp(y_l) · Σ_k g_k
//
// A row whose entries are all −inf (fully masked) has no distribution: its softmax is 0 and its
// log-softmax −inf (never NaN); the softmax gradient of such a row is 0. Statistics are kept in
// f32; exp is kernels/cpu/vec_math.h's fast_exp (≤ 2 ulp).
#pragma once
#include <cstdint>

#include "kernels/args/softmax.h"

namespace pillars::cpu {

using kernels::SoftmaxArgs; // kernels/args/softmax.h, shared with the other device

// x, y: (outer, len, inner).
void softmax_forward(const SoftmaxArgs& a, const float* x, float* y);
// y, dy, dx: (outer, len, inner); y is the forward's output.
void softmax_backward(const SoftmaxArgs& a, const float* y, const float* dy, float* dx);

} // namespace pillars::cpu
