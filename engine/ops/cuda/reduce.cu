// The CUDA slots of the reductions (engine/ops/reduce.cpp): each views its input as
// (outer, n, inner) around its ReduceParams' axis and calls the kernels of kernels/cuda/reduce.h.
#include "engine/ops/common.h"
#include "engine/ops/cuda/ops.h"
#include "engine/ops/reduce.h"
#include "kernels/cuda/reduce.h"

namespace pillars::cuda {
namespace {

void reduce(const KernelContext& c, bool max, bool mean) {
  const auto sp = ops::detail::split_at(c.in[0].shape(), params_of<ops::ReduceParams>(c.node).axis);
  const float* x = c.in[0].data<float>();
  float* y = c.out[0].data<float>();
  if (max)
    reduce_max({.outer = sp.outer, .n = sp.n, .inner = sp.inner, .name = c.node.op->name}, x, y);
  else
    reduce_sum({.outer = sp.outer, .n = sp.n, .inner = sp.inner, .mean = mean, .name = c.node.op->name}, x, y);
}

} // namespace

void op_sum(const KernelContext& c) { reduce(c, false, false); }
void op_mean(const KernelContext& c) { reduce(c, false, true); }
void op_max(const KernelContext& c) { reduce(c, true, false); }

// inputs: x, y = max(x), g → dx
void op_max_backward(const KernelContext& c) {
  const auto sp = ops::detail::split_at(c.in[0].shape(), params_of<ops::ReduceParams>(c.node).axis);
  max_backward({.outer = sp.outer, .n = sp.n, .inner = sp.inner}, c.in[0].data<float>(), c.in[1].data<float>(),
               c.in[2].data<float>(), c.out[0].data<float>());
}

} // namespace pillars::cuda
