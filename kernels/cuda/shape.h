// Shape ops on the GPU (copies): the plain-pointer API under permute, slice, pad_slice and
// concat (adapters: engine/ops/cuda/shape.cu; algorithm: shape.cu). Pointers are contiguous,
// row-major device arrays of elements of `elem_size` bytes (permute: 2, 4 or 8); the slicing ops
// view a tensor as (outer, n, inner) around their axis:
//
//   permute      x (x_dims) → y (y_dims), y_dims[ax] = x_dims[order[ax]]; rank ≤ 8
//   slice        x (outer, n, inner) → y (outer, len, inner) = x[:, begin:begin+len, :]
//   pad_slice    x (outer, n, inner) → y (outer, full, inner): zeros with x at [:, begin:begin+n, :]
//   concat_part  x (outer, x_n, inner) → y[:, at:at+x_n, :] of y (outer, y_n, inner): one input
//                of a concat (the others' ranges are left as they are)
//
// Queued on cuda::stream(). Plain C++: callable from host code compiled without nvcc.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>

#include "kernels/args/shape.h"

namespace pillars::cuda {

// The argument structs, shared with the other device: kernels/args/shape.h.
using kernels::ConcatPartArgs;
using kernels::PadSliceArgs;
using kernels::PermuteArgs;
using kernels::SliceArgs;

void permute(const PermuteArgs& a, const void* x, void* y);
void slice(const SliceArgs& a, const void* x, void* y);
void pad_slice(const PadSliceArgs& a, const void* x, void* y);
void concat_part(const ConcatPartArgs& a, const void* x, void* y);

} // namespace pillars::cuda
