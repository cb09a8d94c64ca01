// The argument structs of the shape kernels (permute, slice, pad_slice, concat_part), declared once
// for both devices: kernels/cpu/shape.h and kernels/cuda/shape.h bring them into cpu:: and cuda::
// (the functions and their arrays are documented there). Device-neutral: standard headers only.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>

namespace pillars::kernels {

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

} // namespace pillars::kernels
