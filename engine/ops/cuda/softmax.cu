// The CUDA slots of softmax, log_softmax and their backward ops (engine/ops/softmax.cpp): each
// views its tensor as (outer, len, inner) around its SoftmaxParams' axis and calls kernels/cuda/softmax.h.
#include "engine/ops/cuda/ops.h"
#include "engine/ops/softmax.h"
#include "kernels/cuda/softmax.h"

namespace pillars::cuda {
namespace {

struct AxisView {
  int64_t outer = 1, len = 1, inner = 1;
};

// (outer, len, inner) around `axis` (stored non-negative by the op builders).
AxisView view_around_axis(const Tensor& t, int64_t axis) {
  AxisView v;
  const Shape& s = t.shape();
  for (int64_t i = 0; i < static_cast<int64_t>(s.size()); ++i) {
    const int64_t extent = s[static_cast<size_t>(i)];
    if (i < axis)
      v.outer *= extent;
    else if (i == axis)
      v.len = extent;
    else
      v.inner *= extent;
  }
  return v;
}

void forward_op(const KernelContext& c, bool log) {
  const AxisView v = view_around_axis(c.in[0], params_of<ops::SoftmaxParams>(c.node).axis);
  softmax_forward({.outer = v.outer, .len = v.len, .inner = v.inner, .log = log}, c.in[0].data<float>(),
                  c.out[0].data<float>());
}

// inputs: y, dy
void backward_op(const KernelContext& c, bool log) {
  const AxisView v = view_around_axis(c.in[0], params_of<ops::SoftmaxParams>(c.node).axis);
  softmax_backward({.outer = v.outer, .len = v.len, .inner = v.inner, .log = log}, c.in[0].data<float>(),
                   c.in[1].data<float>(), c.out[0].data<float>());
}

} // namespace

void op_softmax(const KernelContext& c) { forward_op(c, false); }
void op_log_softmax(const KernelContext& c) { forward_op(c, true); }
void op_softmax_backward(const KernelContext& c) { backward_op(c, false); }
void op_log_softmax_backward(const KernelContext& c) { backward_op(c, true); }

} // namespace pillars::cuda
