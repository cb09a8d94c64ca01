// Softmax and log-softmax on the GPU: the plain-pointer API under the softmax ops (their adapters
// are engine/ops/cuda/softmax.cu) and the benchmark (`pillars bench softmax --device cuda`). Same
// function as kernels/cpu/softmax.h:
//
//   x, y, dy, dx: device pointers to (outer, len, inner) row-major floats; the "rows" are the
//   outer·inner vectors x[o, 0..len−1, i] (stride `inner`), each normalized on its own:
//     softmax      y_l = exp(x_l − m) / s,        m = max_l x_l,  s = Σ_l exp(x_l − m)
//     log-softmax  y_l = x_l − m − log s
//   backward (from the op's output y and g = dL/dy):
//     softmax      dx_l = y_l · (g_l − Σ_k g_k y_k)
//     log-softmax  dx_l = g_l − exp(y_l) · Σ_k g_k
//   A row that is all −inf gives softmax 0 and log-softmax −inf (never NaN).
//
// Launched on cuda::stream() (asynchronous: nothing waits). Plain C++: callable from host code
// compiled without nvcc.
#pragma once
#include <cstdint>

#include "kernels/args/softmax.h"

namespace pillars::cuda {

using kernels::SoftmaxArgs; // kernels/args/softmax.h, shared with the other device

// x, y: (outer, len, inner).
void softmax_forward(const SoftmaxArgs& a, const float* x, float* y);
// y, dy, dx: (outer, len, inner); y is the forward's output.
void softmax_backward(const SoftmaxArgs& a, const float* y, const float* dy, float* dx);

// How a row of len floats (8192 < len ≤ 16 · 8192) is split over a thread-block cluster: `blocks`
// slices of `chunk` floats, block r taking [r·chunk, min(len, (r+1)·chunk)). chunk is a multiple of
// 4 (every slice starts 16-byte aligned) and at most 8192 (what a block holds in registers).
struct ClusterSplit {
  int blocks, chunk;
};
constexpr ClusterSplit softmax_cluster_split(int64_t len) {
  const int64_t blocks = (len + 8191) / 8192;
  return ClusterSplit{static_cast<int>(blocks), static_cast<int>(((len + blocks - 1) / blocks + 3) / 4 * 4)};
}

// Rows of 8k–128k floats run on thread-block clusters where the GPU has them (Hopper, with sm_90 code
// in this build); set_softmax_clusters(false) sends them to the kernels every GPU runs (so that a
// test on Hopper covers both). Returns the setting before.
bool set_softmax_clusters(bool on);
bool softmax_clusters_available();
int64_t softmax_cluster_launches(); // how many cluster kernels this process has launched

} // namespace pillars::cuda
