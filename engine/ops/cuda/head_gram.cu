// The CUDA slots of head_gram and head_gram_backward (engine/ops/head_gram.cpp, GHT's Gram
// matrix): each reads (B, T, H, D) off x, finds the optional lengths input, and calls
// kernels/cuda/head_gram.h; the forward's workspace holds the kernel's per-chunk partial sums.
#include "engine/ops/cuda/ops.h"
#include "kernels/cuda/head_gram.h"

namespace pillars::cuda {

// inputs: x (B, T, H, D) [, lengths i32 (B)] → G (H, H); workspace: (chunks, P) doubles
void op_head_gram(const KernelContext& c) {
  const Tensor& x = c.in[0];
  head_gram({.B = x.dim(0), .T = x.dim(1), .H = x.dim(2), .D = x.dim(3)}, x.data<float>(),
            c.in.size() > 1 ? c.in[1].data<int32_t>() : nullptr, c.out[0].data<float>(), c.workspace);
}

size_t op_head_gram_workspace(const Graph& g, const Node& n) {
  const Shape& x = g.shape(n.inputs[0]);
  return head_gram_workspace({.B = x[0], .T = x[1], .H = x[2], .D = x[3]});
}

// inputs: x (B, T, H, D), dG (H, H) [, lengths i32 (B)] → dx (B, T, H, D)
void op_head_gram_backward(const KernelContext& c) {
  const Tensor& x = c.in[0];
  head_gram_backward({.B = x.dim(0), .T = x.dim(1), .H = x.dim(2), .D = x.dim(3)}, x.data<float>(),
                     c.in[1].data<float>(), c.in.size() > 2 ? c.in[2].data<int32_t>() : nullptr,
                     c.out[0].data<float>());
}

} // namespace pillars::cuda
