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

namespace pillars::cpu {

void permute(const void* x, void* y, std::span<const int64_t> x_dims, std::span<const int64_t> y_dims,
             std::span<const int64_t> order, size_t elem_size);
void slice(const void* x, void* y, int64_t outer, int64_t n, int64_t inner, int64_t begin, int64_t len, size_t elem_size);
void pad_slice(const void* x, void* y, int64_t outer, int64_t n, int64_t inner, int64_t begin, int64_t full,
               size_t elem_size);
void concat_part(const void* x, void* y, int64_t outer, int64_t x_n, int64_t y_n, int64_t at, int64_t inner,
                 size_t elem_size);

} // namespace pillars::cpu
