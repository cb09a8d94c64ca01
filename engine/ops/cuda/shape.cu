// The CUDA slots of the copying shape ops (engine/ops/shape.cpp): each reads its axis, bounds or
// permutation from the node's params struct (engine/ops/shape.h), views the tensors as (outer, n, inner) around the axis
// where it slices, and calls the copies of kernels/cuda/shape.h.
#include "engine/ops/common.h"
#include "engine/ops/cuda/ops.h"
#include "engine/ops/shape.h"
#include "kernels/cuda/shape.h"

namespace pillars::cuda {

// PermuteParams: output axis ax is input axis order[ax]
void op_permute(const KernelContext& c) {
  permute(c.in[0].raw(), c.out[0].raw(), c.in[0].shape(), c.out[0].shape(), params_of<ops::PermuteParams>(c.node).order,
          dtype_size(c.in[0].dtype()));
}

// SliceParams: axis, [begin, end)
void op_slice(const KernelContext& c) {
  const ops::SliceParams& p = params_of<ops::SliceParams>(c.node);
  const auto sp = ops::detail::split_at(c.in[0].shape(), p.axis);
  const int64_t begin = p.begin, len = p.end - begin;
  slice(c.in[0].raw(), c.out[0].raw(), sp.outer, sp.n, sp.inner, begin, len, dtype_size(c.in[0].dtype()));
}

// PadSliceParams: axis, begin, full extent
void op_pad_slice(const KernelContext& c) {
  const ops::PadSliceParams& p = params_of<ops::PadSliceParams>(c.node);
  const auto sp = ops::detail::split_at(c.in[0].shape(), p.axis);
  const int64_t begin = p.begin, full = p.full;
  pad_slice(c.in[0].raw(), c.out[0].raw(), sp.outer, sp.n, sp.inner, begin, full, dtype_size(c.in[0].dtype()));
}

// inputs x_1 … x_m, joined along ConcatParams' axis
void op_concat(const KernelContext& c) {
  const int64_t axis = params_of<ops::ConcatParams>(c.node).axis;
  const auto sp = ops::detail::split_at(c.out[0].shape(), axis);
  const size_t es = dtype_size(c.out[0].dtype());
  int64_t at = 0;
  for (const Tensor& x : c.in) {
    const int64_t xn = x.dim(static_cast<int>(axis));
    concat_part(x.raw(), c.out[0].raw(), sp.outer, xn, sp.n, at, sp.inner, es);
    at += xn;
  }
}

} // namespace pillars::cuda
