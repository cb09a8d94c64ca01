// The CUDA slots of layer_norm and layer_norm_backward (engine/ops/nn_layernorm.cpp): each
// flattens x to (N, D), finds the optional γ / β inputs and gradients from attrs.ints, and calls
// kernels/cuda/layernorm.h; the backward's workspace holds the kernel's partial sums.
#include "engine/ops/cuda/ops.h"
#include "kernels/cuda/layernorm.h"

namespace pillars::cuda {

// inputs x [, γ] [, β]; attrs.ints = {has_gamma, has_beta}; outputs y, μ, r
void op_layer_norm(const KernelContext& c) {
  const bool has_gamma = c.node.attrs.ints[0] != 0, has_beta = c.node.attrs.ints[1] != 0;
  const Tensor& x = c.in[0];
  LayerNormForwardArgs a;
  a.D = x.dim(-1);
  a.N = x.numel() / a.D;
  a.x = x.data<float>();
  a.gamma = has_gamma ? c.in[1].data<float>() : nullptr;
  a.beta = has_beta ? c.in[has_gamma ? 2 : 1].data<float>() : nullptr;
  a.y = c.out[0].data<float>();
  a.mean = c.out[1].data<float>();
  a.rstd = c.out[2].data<float>();
  a.eps = c.node.attrs.eps;
  layer_norm_forward(a);
}

// inputs x, μ, r, g [, γ]; attrs.ints = {has_gamma, param_grads}; outputs dx [, dγ, dβ]
void op_layer_norm_backward(const KernelContext& c) {
  const bool has_gamma = c.node.attrs.ints[0] != 0, param_grads = c.node.attrs.ints[1] != 0;
  const Tensor& x = c.in[0];
  LayerNormBackwardArgs a;
  a.D = x.dim(-1);
  a.N = x.numel() / a.D;
  a.x = x.data<float>();
  a.mean = c.in[1].data<float>();
  a.rstd = c.in[2].data<float>();
  a.dy = c.in[3].data<float>();
  a.gamma = has_gamma ? c.in[4].data<float>() : nullptr;
  a.dx = c.out[0].data<float>();
  a.dgamma = param_grads ? c.out[1].data<float>() : nullptr;
  a.dbeta = param_grads ? c.out[2].data<float>() : nullptr;
  a.partials = param_grads ? static_cast<float*>(c.workspace) : nullptr;
  PILLARS_CHECK(!param_grads || a.partials, "layer_norm_backward: the CUDA kernel needs its workspace");
  layer_norm_backward(a);
}

// The partials (2, P, D) floats when the parameter gradients are wanted.
size_t op_layer_norm_backward_workspace(const Graph& g, const Node& n) {
  if (n.attrs.ints.size() < 2 || n.attrs.ints[1] == 0) return 0;
  const Shape xs = g.shape(n.inputs[0]);
  const int64_t D = xs.back(), N = numel(xs) / D;
  return layer_norm_backward_partials_bytes(N, D);
}

} // namespace pillars::cuda
