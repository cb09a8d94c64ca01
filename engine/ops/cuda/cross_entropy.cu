// The CUDA slots of cross_entropy and cross_entropy_backward (engine/ops/cross_entropy.cpp): each
// flattens the logits to (N, V), reads smoothing and ignore_index off the node's
// ops::CrossEntropyParams, and calls
// kernels/cuda/cross_entropy.h with the executor's workspace as the kernels' scratch.
#include "engine/ops/cuda/ops.h"
#include "engine/ops/cross_entropy.h"
#include "kernels/cuda/cross_entropy.h"

namespace pillars::cuda {
namespace {

CrossEntropyParams kernel_params(const KernelContext& c) {
  const ops::CrossEntropyParams& op = params_of<ops::CrossEntropyParams>(c.node);
  const Tensor& logits = c.in[0];
  const int64_t V = logits.dim(-1);
  return cross_entropy_params(logits.numel() / V, V, op.smoothing, op.ignore_index);
}

} // namespace

// inputs: logits, targets → loss [], lse (...); workspace: the N row losses
void op_cross_entropy(const KernelContext& c) {
  cross_entropy_forward(kernel_params(c), c.in[0].data<float>(), c.in[1].data<int32_t>(), c.out[0].data<float>(),
                        c.out[1].data<float>(), static_cast<float*>(c.workspace));
}

// inputs: logits, targets, lse, dL → dlogits (in place over logits allowed); workspace: the scale
void op_cross_entropy_backward(const KernelContext& c) {
  cross_entropy_backward(kernel_params(c), c.in[0].data<float>(), c.in[1].data<int32_t>(), c.in[2].data<float>(),
                         c.in[3].data<float>(), c.out[0].data<float>(), static_cast<float*>(c.workspace));
}

size_t op_cross_entropy_workspace(const Graph& g, const Node& n) {
  return static_cast<size_t>(numel(g.shape(n.inputs[1]))) * sizeof(float);
}

size_t op_cross_entropy_backward_workspace(const Graph&, const Node&) { return sizeof(float); }

} // namespace pillars::cuda
