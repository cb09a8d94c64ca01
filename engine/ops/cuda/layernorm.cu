// The CUDA slots of layer_norm and layer_norm_backward (engine/ops/layernorm.cpp): each
// flattens x to (N, D), finds the optional γ / β inputs and gradients from its params struct
// (engine/ops/layernorm.h), and calls
// kernels/cuda/layernorm.h; the backward's workspace holds the kernel's partial sums.
#include "engine/ops/cuda/ops.h"
#include "engine/ops/layernorm.h"
#include "kernels/cuda/layernorm.h"

namespace pillars::cuda {

// inputs x [, γ] [, β]; LayerNormParams; outputs y, μ, r
void op_layer_norm(const KernelContext& c) {
  const ops::LayerNormParams& p = params_of<ops::LayerNormParams>(c.node);
  const Tensor& x = c.in[0];
  const int64_t D = x.dim(-1);
  layer_norm_forward({.N = x.numel() / D,
                      .D = D,
                      .x = x.data<float>(),
                      .gamma = p.has_gamma ? c.in[1].data<float>() : nullptr,
                      .beta = p.has_beta ? c.in[p.beta_input()].data<float>() : nullptr,
                      .y = c.out[0].data<float>(),
                      .mean = c.out[1].data<float>(),
                      .rstd = c.out[2].data<float>(),
                      .eps = p.eps});
}

// inputs x, μ, r, g [, γ]; LayerNormBackwardParams; outputs dx [, dγ, dβ]
void op_layer_norm_backward(const KernelContext& c) {
  const ops::LayerNormBackwardParams& p = params_of<ops::LayerNormBackwardParams>(c.node);
  const bool has_gamma = p.has_gamma, param_grads = p.param_grads;
  const Tensor& x = c.in[0];
  const int64_t D = x.dim(-1);
  const LayerNormBackwardArgs a{.N = x.numel() / D,
                                .D = D,
                                .x = x.data<float>(),
                                .gamma = has_gamma ? c.in[4].data<float>() : nullptr,
                                .mean = c.in[1].data<float>(),
                                .rstd = c.in[2].data<float>(),
                                .dy = c.in[3].data<float>(),
                                .dx = c.out[0].data<float>(),
                                .dgamma = param_grads ? c.out[1].data<float>() : nullptr,
                                .dbeta = param_grads ? c.out[2].data<float>() : nullptr,
                                .partials = param_grads ? static_cast<float*>(c.workspace) : nullptr};
  PILLARS_CHECK(!param_grads || a.partials, "layer_norm_backward: the CUDA kernel needs its workspace");
  layer_norm_backward(a);
}

// The partials (2, P, D) floats when the parameter gradients are wanted.
size_t op_layer_norm_backward_workspace(const Graph& g, const Node& n) {
  if (!params_of<ops::LayerNormBackwardParams>(n).param_grads) return 0;
  const Shape xs = g.shape(n.inputs[0]);
  const int64_t D = xs.back(), N = numel(xs) / D;
  return layer_norm_backward_partials_bytes(N, D);
}

} // namespace pillars::cuda
