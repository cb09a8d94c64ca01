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
  permute({.x_dims = c.in[0].shape(),
           .y_dims = c.out[0].shape(),
           .order = params_of<ops::PermuteParams>(c.node).order,
           .elem_size = dtype_size(c.in[0].dtype())},
          c.in[0].raw(), c.out[0].raw());
}

// SliceParams: axis, [begin, end)
void op_slice(const KernelContext& c) {
  const ops::SliceParams& p = params_of<ops::SliceParams>(c.node);
  const auto sp = ops::detail::split_at(c.in[0].shape(), p.axis);
  const int64_t begin = p.begin, len = p.end - begin;
  slice({.outer = sp.outer,
         .n = sp.n,
         .inner = sp.inner,
         .begin = begin,
         .len = len,
         .elem_size = dtype_size(c.in[0].dtype())},
        c.in[0].raw(), c.out[0].raw());
}

// PadSliceParams: axis, begin, full extent
void op_pad_slice(const KernelContext& c) {
  const ops::PadSliceParams& p = params_of<ops::PadSliceParams>(c.node);
  const auto sp = ops::detail::split_at(c.in[0].shape(), p.axis);
  const int64_t begin = p.begin, full = p.full;
  pad_slice({.outer = sp.outer,
             .n = sp.n,
             .inner = sp.inner,
             .begin = begin,
             .full = full,
             .elem_size = dtype_size(c.in[0].dtype())},
            c.in[0].raw(), c.out[0].raw());
}

// inputs x_1 … x_m, joined along ConcatParams' axis
void op_concat(const KernelContext& c) {
  const int64_t axis = params_of<ops::ConcatParams>(c.node).axis;
  const auto sp = ops::detail::split_at(c.out[0].shape(), axis);
  const size_t es = dtype_size(c.out[0].dtype());
  int64_t at = 0;
  for (const Tensor& x : c.in) {
    const int64_t xn = x.dim(static_cast<int>(axis));
    concat_part({.outer = sp.outer, .x_n = xn, .y_n = sp.n, .at = at, .inner = sp.inner, .elem_size = es}, x.raw(),
                c.out[0].raw());
    at += xn;
  }
}

} // namespace pillars::cuda
