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

namespace pillars::cuda {

struct PermuteArgs {
  std::span<const int64_t> x_dims, y_dims, order; // y_dims[ax] = x_dims[order[ax]]
  size_t elem_size = 0;
};
struct SliceArgs {
  int64_t outer = 1, n = 0, inner = 1; // x (outer, n, inner)
  int64_t begin = 0, len = 0;          // y (outer, len, inner) = x[:, begin:begin+len, :]
  size_t elem_size = 0;
};
struct PadSliceArgs {
  int64_t outer = 1, n = 0, inner = 1; // x (outer, n, inner)
  int64_t begin = 0, full = 0;         // y (outer, full, inner), x at [:, begin:begin+n, :]
  size_t elem_size = 0;
};
struct ConcatPartArgs {
  int64_t outer = 1, x_n = 0, y_n = 0; // x (outer, x_n, inner), y (outer, y_n, inner)
  int64_t at = 0, inner = 1;           // x goes to y[:, at:at+x_n, :]
  size_t elem_size = 0;
};

void permute(const PermuteArgs& a, const void* x, void* y);
void slice(const SliceArgs& a, const void* x, void* y);
void pad_slice(const PadSliceArgs& a, const void* x, void* y);
void concat_part(const ConcatPartArgs& a, const void* x, void* y);

} // namespace pillars::cuda
