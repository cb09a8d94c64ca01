// The CUDA slot of linear_cross_entropy (engine/ops/linear_cross_entropy.cpp): the same blocked
// sweep as the CPU kernel (kernels/cpu/linear_cross_entropy.h), composed of the cuBLAS products of
// kernels/cuda/matmul.h and the row steps of kernels/cuda/cross_entropy.h, all queued on
// cuda::stream() with no host synchronization:
//
//   scale = 1 / n_valid                                  (cross_entropy_scale, once)
//   per block of C rows r:
//     x_c  = h_c Wᵀ                (C, V)   gemm into the workspace
//     lse_c, loss_c                         cross_entropy_rows_forward
//     dx_c = (softmax − q)·scale   (C, V)   cross_entropy_rows_backward, over x_c
//     dh_c = dx_c W                (C, d)   gemm into dh's rows
//     dW  += dx_cᵀ h_c             (V, d)   gemm with beta = 1 after the first block
//   L = Σ loss_n / n_valid                               (cross_entropy_mean_loss, once)
//
// Workspace (floats): the block's logits C·V | its lse C | the N row losses | the scale.
// As cross_entropy's CUDA kernels, a target outside [0, V) counts as ignored (the GPU cannot
// throw); the products run in cuda::precision() like every matmul.
#include <cuda_runtime.h>

#include <algorithm>

#include "engine/ops/cuda/ops.h"
#include "engine/ops/linear_cross_entropy.h"
#include "kernels/cuda/cross_entropy.h"
#include "kernels/cuda/matmul.h"
#include "runtime/cuda_runtime.h"

namespace pillars::cuda {
namespace {

struct Extents {
  int64_t N, V, d, C; // rows, classes, hidden size, rows per block
};

Extents extents_of(const Node& n, const Shape& h, const Shape& w) {
  const int64_t block_rows = params_of<ops::LinearCrossEntropyParams>(n).block_rows;
  return {h[0], w[0], h[1], std::min(block_rows, h[0])};
}

size_t workspace_floats(const Extents& e) { return static_cast<size_t>(e.C * e.V + e.C + e.N + 1); }

} // namespace

size_t op_linear_cross_entropy_workspace(const Graph& g, const Node& n) {
  return workspace_floats(extents_of(n, g.shape(n.inputs[0]), g.shape(n.inputs[1]))) * sizeof(float);
}

// inputs: h (N, d), W (V, d), targets (N) → loss [], dh (N, d), dW (V, d)
void op_linear_cross_entropy(const KernelContext& c) {
  const ops::LinearCrossEntropyParams& op = params_of<ops::LinearCrossEntropyParams>(c.node);
  const Extents e = extents_of(c.node, c.in[0].shape(), c.in[1].shape());
  const float *h = c.in[0].data<float>(), *W = c.in[1].data<float>();
  const int32_t* targets = c.in[2].data<int32_t>();
  float *loss = c.out[0].data<float>(), *dh = c.out[1].data<float>(), *dW = c.out[2].data<float>();
  float* logits = static_cast<float*>(c.workspace); // (C, V)
  float* lse = logits + e.C * e.V;                  // (C)
  float* row_loss = lse + e.C;                      // (N)
  float* scale = row_loss + e.N;                    // (1)

  const CrossEntropyParams all = cross_entropy_params(e.N, e.V, op.smoothing, op.ignore_index);
  if (e.N == 0) PILLARS_CUDA_CHECK(cudaMemsetAsync(dW, 0, static_cast<size_t>(e.V * e.d) * sizeof(float), stream()));
  cross_entropy_scale(all, targets, nullptr, scale);
  for (int64_t r = 0; r < e.N; r += e.C) {
    CrossEntropyParams block = all;
    block.N = std::min(e.C, e.N - r);
    const float* h_c = h + r * e.d;
    gemm(false, true, block.N, e.V, e.d, 1.0f, h_c, W, 0.0f, logits); // x_c = h_c Wᵀ
    cross_entropy_rows_forward(block, logits, targets + r, lse, row_loss + r);
    cross_entropy_rows_backward(block, logits, targets + r, lse, scale, logits);       // dx_c over x_c
    gemm(false, false, block.N, e.d, e.V, 1.0f, logits, W, 0.0f, dh + r * e.d);        // dh_c = dx_c W
    gemm(true, false, e.V, e.d, block.N, 1.0f, logits, h_c, r == 0 ? 0.0f : 1.0f, dW); // dW += dx_cᵀ h_c
  }
  cross_entropy_mean_loss(all, row_loss, targets, loss);
}

} // namespace pillars::cuda
