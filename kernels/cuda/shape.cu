// Shape ops on the GPU: permute, slice, pad_slice, concat. All are copies.
//
//   permute    x (s_0 … s_r−1) → y (s_π0 … s_πr−1):  y[j] = x[Σ_ax coord_ax(j) · stride_x(π_ax)]
//   slice      x (outer, n, inner) → y (outer, e − b, inner) = x[:, b:e, :]
//   pad_slice  x (outer, n, inner) → y (outer, full, inner): zeros with x written at [:, b:b+n, :]
//   concat     x_1 … x_m (outer, n_k, inner) → y (outer, Σ n_k, inner)
// Every element type is copied as raw bytes of its size (permute also moves i32 tensors).
// Block copies go through cudaMemcpy2DAsync: `outer` rows of one contiguous run each, with
// different pitches on the two sides — exactly what the copy engine does best.
#include "engine/ops/common.h"
#include "kernels/cuda/ops.h"
#include "kernels/cuda/runtime.h"

namespace pillars::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxRank = 8;

struct Permutation {
  int rank = 0;
  int64_t out_extent[kMaxRank];
  int64_t x_stride[kMaxRank]; // stride in x of each output axis
};

template <class T> __global__ void permute_kernel(const T* x, T* y, int64_t n, Permutation p) {
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < n; j += static_cast<int64_t>(gridDim.x) * blockDim.x) {
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

void op_permute(const KernelContext& c) {
  const Shape& xs = c.in[0].shape();
  const auto& order = c.node.attrs.ints;
  const int64_t n = c.out[0].numel();
  const size_t es = dtype_size(c.in[0].dtype());
  if (n == 0) return;
  PILLARS_CHECK(xs.size() <= kMaxRank, "permute: rank ", xs.size(), " > ", kMaxRank, " on the GPU");
  Permutation p;
  p.rank = static_cast<int>(xs.size());
  int64_t xstride[kMaxRank];
  int64_t st = 1;
  for (int ax = p.rank - 1; ax >= 0; --ax) xstride[ax] = st, st *= xs[static_cast<size_t>(ax)];
  for (int ax = 0; ax < p.rank; ++ax) {
    p.out_extent[ax] = c.out[0].shape()[static_cast<size_t>(ax)];
    p.x_stride[ax] = xstride[order[static_cast<size_t>(ax)]];
  }
  const unsigned grid = static_cast<unsigned>(std::min<int64_t>(blocks_for(n, kThreads), 65535));
  if (es == 4) permute_kernel<<<grid, kThreads, 0, stream()>>>(static_cast<const uint32_t*>(c.in[0].raw()), static_cast<uint32_t*>(c.out[0].raw()), n, p);
  else if (es == 8) permute_kernel<<<grid, kThreads, 0, stream()>>>(static_cast<const uint64_t*>(c.in[0].raw()), static_cast<uint64_t*>(c.out[0].raw()), n, p);
  else permute_kernel<<<grid, kThreads, 0, stream()>>>(static_cast<const uint16_t*>(c.in[0].raw()), static_cast<uint16_t*>(c.out[0].raw()), n, p);
  PILLARS_CUDA_LAUNCHED("permute");
}

void op_slice(const KernelContext& c) {
  const auto sp = ops::detail::split_at(c.in[0].shape(), c.node.attrs.ints[0]);
  const int64_t begin = c.node.attrs.ints[1], len = c.node.attrs.ints[2] - begin;
  const size_t es = dtype_size(c.in[0].dtype());
  const size_t x_pitch = static_cast<size_t>(sp.n * sp.inner) * es, y_pitch = static_cast<size_t>(len * sp.inner) * es;
  copy_rows(c.out[0].raw(), y_pitch, static_cast<const char*>(c.in[0].raw()) + static_cast<size_t>(begin * sp.inner) * es, x_pitch,
            y_pitch, static_cast<size_t>(sp.outer));
}

void op_pad_slice(const KernelContext& c) {
  const auto sp = ops::detail::split_at(c.in[0].shape(), c.node.attrs.ints[0]);
  const int64_t begin = c.node.attrs.ints[1], full = c.node.attrs.ints[2];
  const size_t es = dtype_size(c.in[0].dtype());
  if (c.out[0].nbytes()) PILLARS_CUDA_CHECK(cudaMemsetAsync(c.out[0].raw(), 0, c.out[0].nbytes(), stream()));
  const size_t x_pitch = static_cast<size_t>(sp.n * sp.inner) * es, y_pitch = static_cast<size_t>(full * sp.inner) * es;
  copy_rows(static_cast<char*>(c.out[0].raw()) + static_cast<size_t>(begin * sp.inner) * es, y_pitch, c.in[0].raw(), x_pitch,
            x_pitch, static_cast<size_t>(sp.outer));
}

void op_concat(const KernelContext& c) {
  const auto sp = ops::detail::split_at(c.out[0].shape(), c.node.attrs.axis);
  const size_t es = dtype_size(c.out[0].dtype());
  const size_t y_pitch = static_cast<size_t>(sp.n * sp.inner) * es;
  int64_t at = 0;
  for (const Tensor& x : c.in) {
    const int64_t xn = x.dim(static_cast<int>(c.node.attrs.axis));
    const size_t x_pitch = static_cast<size_t>(xn * sp.inner) * es;
    copy_rows(static_cast<char*>(c.out[0].raw()) + static_cast<size_t>(at * sp.inner) * es, y_pitch, x.raw(), x_pitch, x_pitch,
              static_cast<size_t>(sp.outer));
    at += xn;
  }
}

} // namespace pillars::cuda
