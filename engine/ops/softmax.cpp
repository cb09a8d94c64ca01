// softmax and log_softmax along any axis, and their backward ops.
//
//   softmax      y = exp(x − max) / Σ exp(x − max)        x (...) f32 → y (same shape)
//   log_softmax  y = x − max − log Σ exp(x − max)
// Vector-Jacobian products (g = dL/dy, sums along the axis; y is the op's own output):
//   softmax      dx = y ∘ (g − Σ g∘y)          → op softmax_backward(y, g)
//   log_softmax  dx = g − exp(y) ∘ Σ g          → op log_softmax_backward(y, g)
// Both backward ops read only y (not x), so x can be freed after the forward. Kernels:
// kernels/cpu/softmax.h (a row of all −inf gives softmax 0 / log-softmax −inf, never NaN).
#include "engine/ops/common.h"
#include "engine/ops/softmax.h"
#include "kernels/cpu/softmax.h"

namespace pillars::ops {
namespace {

// The kernel's arguments: (outer, len, inner) around the node's axis, for a tensor of shape s.
cpu::SoftmaxArgs kernel_args(const Shape& s, int64_t axis, bool log) {
  const detail::AxisSplit v = detail::split_at(s, axis);
  return {.outer = v.outer, .len = v.n, .inner = v.inner, .log = log};
}

// Shape rule shared by all four ops: every input is f32 of one shape; the output has it too.
std::vector<OutputSpec> infer_same_shape(const Graph& g, const Node& n) {
  const Shape& s = g.shape(n.inputs[0]);
  for (ValueId v : n.inputs) {
    detail::expect_f32(n.op->name, g, v);
    PILLARS_CHECK(g.shape(v) == s, n.op->name, ": shapes ", shape_str(s), " and ", shape_str(g.shape(v)), " differ");
  }
  detail::normalize_axis(n.op->name, params_of<SoftmaxParams>(n).axis, s.size());
  return {{s, DType::f32}};
}

std::string print_softmax(const Node& n) { return str_cat(" axis=", params_of<SoftmaxParams>(n).axis); }

template <bool Log>
void cpu_forward(const KernelContext& c) {
  const cpu::SoftmaxArgs a = kernel_args(c.in[0].shape(), params_of<SoftmaxParams>(c.node).axis, Log);
  cpu::softmax_forward(a, c.in[0].data<float>(), c.out[0].data<float>());
}

// inputs: y, dy
template <bool Log>
void cpu_backward(const KernelContext& c) {
  const cpu::SoftmaxArgs a = kernel_args(c.in[0].shape(), params_of<SoftmaxParams>(c.node).axis, Log);
  cpu::softmax_backward(a, c.in[0].data<float>(), c.in[1].data<float>(), c.out[0].data<float>());
}

const OpDef kSoftmaxBackward{.name = "softmax_backward",
                             .infer = infer_same_shape,
                             .cpu = cpu_backward<false>,
                             .cuda = PILLARS_CUDA_KERNEL(softmax_backward),
                             .print = print_softmax};
const OpDef kLogSoftmaxBackward{.name = "log_softmax_backward",
                                .infer = infer_same_shape,
                                .cpu = cpu_backward<true>,
                                .cuda = PILLARS_CUDA_KERNEL(log_softmax_backward),
                                .print = print_softmax};

template <bool Log>
std::vector<ValueId> vjp(Graph& g, const Node& n, const std::vector<ValueId>& dy, const std::vector<bool>& needs) {
  if (!needs[0] || dy[0] == kNoValue) return {kNoValue};
  return {g.add1(Log ? kLogSoftmaxBackward : kSoftmaxBackward, {n.outputs[0], dy[0]}, n.params)};
}

const OpDef kSoftmax{.name = "softmax",
                     .infer = infer_same_shape,
                     .cpu = cpu_forward<false>,
                     .cuda = PILLARS_CUDA_KERNEL(softmax),
                     .vjp = vjp<false>,
                     .print = print_softmax};
const OpDef kLogSoftmax{.name = "log_softmax",
                        .infer = infer_same_shape,
                        .cpu = cpu_forward<true>,
                        .cuda = PILLARS_CUDA_KERNEL(log_softmax),
                        .vjp = vjp<true>,
                        .print = print_softmax};
ValueId add_softmax(Graph& g, const OpDef& op, ValueId x, int64_t axis) {
  // stored non-negative: prints plainly
  return g.add1(op, {x}, SoftmaxParams{.axis = detail::normalize_axis(op.name, axis, g.shape(x).size())});
}

} // namespace

ValueId softmax(Graph& g, ValueId x, int64_t axis) { return add_softmax(g, kSoftmax, x, axis); }
ValueId log_softmax(Graph& g, ValueId x, int64_t axis) { return add_softmax(g, kLogSoftmax, x, axis); }

ValueId softmax_backward(Graph& g, ValueId y, ValueId dy, int64_t axis) {
  return g.add1(kSoftmaxBackward, {y, dy},
                SoftmaxParams{.axis = detail::normalize_axis("softmax_backward", axis, g.shape(y).size())});
}

} // namespace pillars::ops
