// Shape ops on the CPU (copies): the plain-pointer API under permute, slice, pad_slice and concat
// (adapters: engine/ops/shape.cpp), the same functions as kernels/cuda/shape.h. Pointers are
// contiguous, row-major arrays of elements of `elem_size` bytes; the slicing ops view a tensor as
// (outer, n, inner) around their axis:
//
//   permute      x (x_dims) → y (y_dims), y_dims[ax] = x_dims[order[ax]]; rank ≤ 8
//   slice        x (outer, n, inner) → y (outer, len, inner) = x[:, begin:begin+len, :]
//   pad_slice    x (outer, n, inner) → y (outer, full, inner): zeros with x at [:, begin:begin+n, :]
//   concat_part  x (outer, x_n, inner) → y[:, at:at+x_n, :] of y (outer, y_n, inner): one input
//                of a concat (the others' ranges are left as they are)
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>

#include "kernels/args/shape.h"

namespace pillars::cpu {

// The argument structs, shared with the other device: kernels/args/shape.h.
using kernels::ConcatPartArgs;
using kernels::PadSliceArgs;
using kernels::PermuteArgs;
using kernels::SliceArgs;

void permute(const PermuteArgs& a, const void* x, void* y);
void slice(const SliceArgs& a, const void* x, void* y);
void pad_slice(const PadSliceArgs& a, const void* x, void* y);
void concat_part(const ConcatPartArgs& a, const void* x, void* y);

} // namespace pillars::cpu
