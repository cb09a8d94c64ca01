// Reductions over one axis, seen as x (outer, n, inner) → y (outer, inner).
//
//   sum   y = Σ_k x[k]            dx = broadcast(g)
//   mean  y = (1/n) Σ_k x[k]      dx = broadcast(g) / n
//   max   y = max_k x[k]          dx = g at the first arg-max, 0 elsewhere
// Kernels: kernels/cpu/reduce.h, kernels/cuda/reduce.h (the same functions).
#include "engine/ops/reduce.h"

#include "engine/ops/common.h"
#include "engine/ops/elementwise.h"
#include "engine/ops/shape.h"
#include "kernels/cpu/reduce.h"

namespace pillars::ops {

using detail::AxisSplit;
using detail::split_at;

namespace {

Shape reduced_shape(const Shape& s, int64_t axis, bool keepdim) {
  Shape out;
  for (int64_t i = 0; i < static_cast<int64_t>(s.size()); ++i) {
    if (i != axis)
      out.push_back(s[static_cast<size_t>(i)]);
    else if (keepdim)
      out.push_back(1);
  }
  return out;
}

int64_t axis_of(const Node& n) { return params_of<ReduceParams>(n).axis; }

std::vector<OutputSpec> infer_reduce(const Graph& g, const Node& n) {
  detail::expect_f32(n.op->name, g, n.inputs[0]);
  const Shape& s = g.shape(n.inputs[0]);
  const ReduceParams& p = params_of<ReduceParams>(n);
  PILLARS_CHECK(p.axis >= 0 && p.axis < static_cast<int64_t>(s.size()), n.op->name, ": bad axis");
  return {{reduced_shape(s, p.axis, p.keepdim), DType::f32}};
}

std::string print_reduce(const Node& n) {
  const ReduceParams& p = params_of<ReduceParams>(n);
  return str_cat(" axis=", p.axis, p.keepdim ? " keepdim" : "");
}

// The CPU slots: the tensor viewed as (outer, n, inner) around the axis (kernels/cpu/reduce.h).
void sum_cpu_impl(const KernelContext& c, bool mean) {
  const AxisSplit sp = split_at(c.in[0].shape(), axis_of(c.node));
  cpu::reduce_sum({.outer = sp.outer, .n = sp.n, .inner = sp.inner, .mean = mean}, c.in[0].data<float>(),
                  c.out[0].data<float>());
}
void sum_cpu(const KernelContext& c) { sum_cpu_impl(c, false); }
void mean_cpu(const KernelContext& c) { sum_cpu_impl(c, true); }
void max_cpu(const KernelContext& c) {
  const AxisSplit sp = split_at(c.in[0].shape(), axis_of(c.node));
  cpu::reduce_max({.outer = sp.outer, .n = sp.n, .inner = sp.inner}, c.in[0].data<float>(), c.out[0].data<float>());
}

// g (reduced shape) → broadcast back over the reduced axis.
ValueId expand_back(Graph& g, ValueId grad, const Node& n) {
  const Shape& xs = g.shape(n.inputs[0]);
  return broadcast_to(g, reshape(g, grad, reduced_shape(xs, axis_of(n), true)), xs);
}
std::vector<ValueId> sum_vjp(Graph& g, const Node& n, const std::vector<ValueId>& go, const std::vector<bool>&) {
  return {expand_back(g, go[0], n)};
}
std::vector<ValueId> mean_vjp(Graph& g, const Node& n, const std::vector<ValueId>& go, const std::vector<bool>&) {
  const int64_t count = g.shape(n.inputs[0])[static_cast<size_t>(axis_of(n))];
  return {expand_back(g, scale(g, go[0], 1.0f / static_cast<float>(count)), n)};
}

// max_backward(x, y, g) → dx: g routed to the first position where x equals the max.
std::vector<OutputSpec> infer_max_backward(const Graph& g, const Node& n) {
  return {{g.shape(n.inputs[0]), DType::f32}};
}
void max_backward_cpu(const KernelContext& c) {
  const AxisSplit sp = split_at(c.in[0].shape(), axis_of(c.node));
  cpu::max_backward({.outer = sp.outer, .n = sp.n, .inner = sp.inner}, c.in[0].data<float>(), c.in[1].data<float>(),
                    c.in[2].data<float>(), c.out[0].data<float>());
}
// max_backward carries max's ReduceParams (it reads the axis; keepdim only says how y was shaped).
const OpDef kMaxBackward{.name = "max_backward",
                         .infer = infer_max_backward,
                         .cpu = max_backward_cpu,
                         .cuda = PILLARS_CUDA_KERNEL(max_backward),
                         .print = print_reduce};
std::vector<ValueId> max_vjp(Graph& g, const Node& n, const std::vector<ValueId>& go, const std::vector<bool>&) {
  return {g.add1(kMaxBackward, {n.inputs[0], n.outputs[0], go[0]}, n.params)};
}

const OpDef kSum{.name = "sum",
                 .infer = infer_reduce,
                 .cpu = sum_cpu,
                 .cuda = PILLARS_CUDA_KERNEL(sum),
                 .vjp = sum_vjp,
                 .print = print_reduce};
const OpDef kMean{.name = "mean",
                  .infer = infer_reduce,
                  .cpu = mean_cpu,
                  .cuda = PILLARS_CUDA_KERNEL(mean),
                  .vjp = mean_vjp,
                  .print = print_reduce};
const OpDef kMax{.name = "max",
                 .infer = infer_reduce,
                 .cpu = max_cpu,
                 .cuda = PILLARS_CUDA_KERNEL(max),
                 .vjp = max_vjp,
                 .print = print_reduce};

ValueId reduce(const OpDef& op, Graph& g, ValueId x, int64_t axis, bool keepdim) {
  return g.add1(op, {x},
                ReduceParams{.axis = detail::normalize_axis(op.name, axis, g.shape(x).size()), .keepdim = keepdim});
}

} // namespace

ValueId sum(Graph& g, ValueId x, int64_t axis, bool keepdim) { return reduce(kSum, g, x, axis, keepdim); }
ValueId mean(Graph& g, ValueId x, int64_t axis, bool keepdim) { return reduce(kMean, g, x, axis, keepdim); }
ValueId max(Graph& g, ValueId x, int64_t axis, bool keepdim) { return reduce(kMax, g, x, axis, keepdim); }
ValueId sum_all(Graph& g, ValueId x) { return sum(g, reshape(g, x, {numel(g.shape(x))}), 0); }

} // namespace pillars::ops
