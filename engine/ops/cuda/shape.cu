// The CUDA slots of the copying shape ops (engine/ops/shape.cpp): each reads its axis, bounds or
// permutation from the node's attributes, views the tensors as (outer, n, inner) around the axis
// where it slices, and calls the copies of kernels/cuda/shape.h.
#include "engine/ops/common.h"
#include "engine/ops/cuda/ops.h"
#include "kernels/cuda/shape.h"

namespace pillars::cuda {

// attrs.ints = the permutation (output axis ax is input axis ints[ax])
void op_permute(const KernelContext& c) {
  permute(c.in[0].raw(), c.out[0].raw(), c.in[0].shape(), c.out[0].shape(), c.node.attrs.ints, dtype_size(c.in[0].dtype()));
}

// attrs.ints = {axis, begin, end}
void op_slice(const KernelContext& c) {
  const auto sp = ops::detail::split_at(c.in[0].shape(), c.node.attrs.ints[0]);
  const int64_t begin = c.node.attrs.ints[1], len = c.node.attrs.ints[2] - begin;
  slice(c.in[0].raw(), c.out[0].raw(), sp.outer, sp.n, sp.inner, begin, len, dtype_size(c.in[0].dtype()));
}

// attrs.ints = {axis, begin, full extent}
void op_pad_slice(const KernelContext& c) {
  const auto sp = ops::detail::split_at(c.in[0].shape(), c.node.attrs.ints[0]);
  const int64_t begin = c.node.attrs.ints[1], full = c.node.attrs.ints[2];
  pad_slice(c.in[0].raw(), c.out[0].raw(), sp.outer, sp.n, sp.inner, begin, full, dtype_size(c.in[0].dtype()));
}

// inputs x_1 … x_m, joined along attrs.axis
void op_concat(const KernelContext& c) {
  const auto sp = ops::detail::split_at(c.out[0].shape(), c.node.attrs.axis);
  const size_t es = dtype_size(c.out[0].dtype());
  int64_t at = 0;
  for (const Tensor& x : c.in) {
    const int64_t xn = x.dim(static_cast<int>(c.node.attrs.axis));
    concat_part(x.raw(), c.out[0].raw(), sp.outer, xn, sp.n, at, sp.inner, es);
    at += xn;
  }
}

} // namespace pillars::cuda
