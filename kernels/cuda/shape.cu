// Shape ops on the GPU: permute, slice, pad_slice, concat. All are copies.
//
//   permute    x (s_0 … s_r−1) → y (s_π0 … s_πr−1):  y[j] = x[Σ_ax coord_ax(j) · stride_x(π_ax)]
//   slice      x (outer, n, inner) → y (outer, e − b, inner) = x[:, b:e, :]
//   pad_slice  x (outer, n, inner) → y (outer, full, inner): zeros with x written at [:, b:b+n, :]
//   concat     x_1 … x_m (outer, n_k, inner) → y (outer, Σ n_k, inner)
// Every element type is copied as raw bytes of its size (permute also moves i32 tensors).
// Block copies go through cudaMemcpy2DAsync: `outer` rows of one contiguous run each, with
// different pitches on the two sides — exactly what the copy engine does best.
// The API is shape.h; engine/ops/cuda/shape.cu adapts the ops to it.
#include "kernels/cuda/shape.h"

#include <algorithm>

#include "runtime/cuda_runtime.h"
#include "kernels/dims.h"

namespace pillars::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxRank = 8;

struct Permutation {
  int rank = 0;
  int64_t out_extent[kMaxRank];
  int64_t x_stride[kMaxRank]; // stride in x of each output axis
};

template <class T>
__global__ void permute_kernel(const T* x, T* y, int64_t n, Permutation p) {
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < n;
       j += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t rem = j, off = 0;
    for (int ax = p.rank - 1; ax >= 0; --ax) {
      off += (rem % p.out_extent[ax]) * p.x_stride[ax];
      rem /= p.out_extent[ax];
    }
    y[j] = x[off];
  }
}

// Copies `rows` runs of `run` bytes from src (pitch src_pitch) to dst (pitch dst_pitch).
void copy_rows(void* dst, size_t dst_pitch, const void* src, size_t src_pitch, size_t run, size_t rows) {
  if (run == 0 || rows == 0) return;
  PILLARS_CUDA_CHECK(cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, run, rows, cudaMemcpyDeviceToDevice, stream()));
}

} // namespace

void permute(const PermuteArgs& a, const void* x, void* y) {
  const std::span<const int64_t> xs = a.x_dims, y_dims = a.y_dims, order = a.order;
  const size_t es = a.elem_size;
  const int64_t n = dims_count(y_dims);
  if (n == 0) return;
  PILLARS_CHECK(xs.size() <= kMaxRank, "permute: rank ", xs.size(), " > ", kMaxRank, " on the GPU");
  Permutation p;
  p.rank = static_cast<int>(xs.size());
  int64_t xstride[kMaxRank];
  int64_t st = 1;
  for (int ax = p.rank - 1; ax >= 0; --ax) xstride[ax] = st, st *= xs[static_cast<size_t>(ax)];
  for (int ax = 0; ax < p.rank; ++ax) {
    p.out_extent[ax] = y_dims[static_cast<size_t>(ax)];
    p.x_stride[ax] = xstride[order[static_cast<size_t>(ax)]];
  }
  const unsigned grid = static_cast<unsigned>(std::min<int64_t>(blocks_for(n, kThreads), 65535));
  if (es == 4)
    permute_kernel<<<grid, kThreads, 0, stream()>>>(static_cast<const uint32_t*>(x), static_cast<uint32_t*>(y), n, p);
  else if (es == 8)
    permute_kernel<<<grid, kThreads, 0, stream()>>>(static_cast<const uint64_t*>(x), static_cast<uint64_t*>(y), n, p);
  else
    permute_kernel<<<grid, kThreads, 0, stream()>>>(static_cast<const uint16_t*>(x), static_cast<uint16_t*>(y), n, p);
  PILLARS_CUDA_LAUNCHED("permute");
}

void slice(const SliceArgs& a, const void* x, void* y) {
  const int64_t outer = a.outer, n = a.n, inner = a.inner, begin = a.begin, len = a.len;
  const size_t es = a.elem_size;
  const size_t x_pitch = static_cast<size_t>(n * inner) * es, y_pitch = static_cast<size_t>(len * inner) * es;
  copy_rows(y, y_pitch, static_cast<const char*>(x) + static_cast<size_t>(begin * inner) * es, x_pitch, y_pitch,
            static_cast<size_t>(outer));
}

void pad_slice(const PadSliceArgs& a, const void* x, void* y) {
  const int64_t outer = a.outer, n = a.n, inner = a.inner, begin = a.begin, full = a.full;
  const size_t es = a.elem_size;
  const size_t y_bytes = static_cast<size_t>(outer * full * inner) * es;
  if (y_bytes) PILLARS_CUDA_CHECK(cudaMemsetAsync(y, 0, y_bytes, stream()));
  const size_t x_pitch = static_cast<size_t>(n * inner) * es, y_pitch = static_cast<size_t>(full * inner) * es;
  copy_rows(static_cast<char*>(y) + static_cast<size_t>(begin * inner) * es, y_pitch, x, x_pitch, x_pitch,
            static_cast<size_t>(outer));
}

void concat_part(const ConcatPartArgs& a, const void* x, void* y) {
  const int64_t outer = a.outer, x_n = a.x_n, y_n = a.y_n, at = a.at, inner = a.inner;
  const size_t es = a.elem_size;
  const size_t y_pitch = static_cast<size_t>(y_n * inner) * es;
  const size_t x_pitch = static_cast<size_t>(x_n * inner) * es;
  copy_rows(static_cast<char*>(y) + static_cast<size_t>(at * inner) * es, y_pitch, x, x_pitch, x_pitch,
            static_cast<size_t>(outer));
}

} // namespace pillars::cuda
