// layer_norm (fused) and its backward op; layer_norm_reference (composed of simple ops).
//
//   x (..., D), γ (D) | none, β (D) | none  →  y (..., D), μ (...), r (...)
//   μ = mean_d x,  r = 1 / sqrt(mean_d (x − μ)² + eps),  x̂ = (x − μ) · r,  y = x̂ ∘ γ + β
// μ and r are outputs 1 and 2 (N = numel / D floats each): the backward reads them instead of
// recomputing the statistics. Gradients (g = dL/dy, ĝ = g ∘ γ, means over the last axis):
//   dx = r · (ĝ − mean(ĝ) − x̂ · mean(ĝ ∘ x̂)),   dγ = Σ_rows g ∘ x̂,   dβ = Σ_rows g
// all from one op: layer_norm_backward(x, μ, r, g [, γ]) → dx [, dγ, dβ].
// Kernels: kernels/cpu/layernorm.h.
//
// Node layout. layer_norm:          inputs x [, γ] [, β];  LayerNormParams {eps, has_gamma, has_beta}
//              layer_norm_backward: inputs x, μ, r, g [, γ]; LayerNormBackwardParams {has_gamma, param_grads}
//                                   outputs dx, and dγ, dβ (D) when param_grads.
#include "engine/ops/common.h"
#include "engine/ops/elementwise.h"
#include "engine/ops/layernorm.h"
#include "engine/ops/reduce.h"
#include "kernels/cpu/layernorm.h"

namespace pillars::ops {
namespace {

// (..., D) → (...): the shape of the per-row statistics.
Shape rows_shape(const Shape& s) { return Shape(s.begin(), s.end() - 1); }

std::vector<OutputSpec> infer_forward(const Graph& g, const Node& n) {
  const Shape& xs = g.shape(n.inputs[0]);
  detail::expect_f32("layer_norm", g, n.inputs[0]);
  PILLARS_CHECK(!xs.empty() && xs.back() > 0, "layer_norm: x must have a non-empty last axis, got ", shape_str(xs));
  for (size_t i = 1; i < n.inputs.size(); ++i) {
    detail::expect_f32("layer_norm", g, n.inputs[i]);
    PILLARS_CHECK(g.shape(n.inputs[i]) == Shape{xs.back()}, "layer_norm: gamma/beta must have shape [", xs.back(),
                  "] for x of shape ", shape_str(xs), ", got ", shape_str(g.shape(n.inputs[i])));
  }
  return {{xs, DType::f32}, {rows_shape(xs), DType::f32}, {rows_shape(xs), DType::f32}};
}

void cpu_forward(const KernelContext& c) {
  const LayerNormParams& p = params_of<LayerNormParams>(c.node);
  const Tensor& x = c.in[0];
  const float* gamma = p.has_gamma ? c.in[1].data<float>() : nullptr;
  const float* beta = p.has_beta ? c.in[p.beta_input()].data<float>() : nullptr;
  const int64_t D = x.dim(-1);
  cpu::layer_norm_forward({.N = x.numel() / D,
                           .D = D,
                           .x = x.data<float>(),
                           .gamma = gamma,
                           .beta = beta,
                           .y = c.out[0].data<float>(),
                           .mean = c.out[1].data<float>(),
                           .rstd = c.out[2].data<float>(),
                           .eps = p.eps});
}

std::string print_forward(const Node& n) {
  const LayerNormParams& p = params_of<LayerNormParams>(n);
  return str_cat(" eps=", p.eps, p.has_gamma ? " gamma" : "", p.has_beta ? " beta" : "");
}
std::string print_backward(const Node& n) {
  const LayerNormBackwardParams& p = params_of<LayerNormBackwardParams>(n);
  return str_cat(p.has_gamma ? " gamma" : "", p.param_grads ? " param_grads" : "");
}

std::vector<OutputSpec> infer_backward(const Graph& g, const Node& n) {
  const Shape& xs = g.shape(n.inputs[0]);
  PILLARS_CHECK(g.shape(n.inputs[3]) == xs, "layer_norm_backward: dy ", shape_str(g.shape(n.inputs[3])),
                " does not match x ", shape_str(xs));
  std::vector<OutputSpec> out{{xs, DType::f32}};
  if (params_of<LayerNormBackwardParams>(n).param_grads)
    out.insert(out.end(), {{{xs.back()}, DType::f32}, {{xs.back()}, DType::f32}});
  return out;
}

void cpu_backward(const KernelContext& c) {
  const LayerNormBackwardParams& p = params_of<LayerNormBackwardParams>(c.node);
  const bool has_gamma = p.has_gamma, param_grads = p.param_grads;
  const Tensor& x = c.in[0];
  const int64_t D = x.dim(-1);
  cpu::layer_norm_backward({.N = x.numel() / D,
                            .D = D,
                            .x = x.data<float>(),
                            .gamma = has_gamma ? c.in[4].data<float>() : nullptr,
                            .mean = c.in[1].data<float>(),
                            .rstd = c.in[2].data<float>(),
                            .dy = c.in[3].data<float>(),
                            .dx = c.out[0].data<float>(),
                            .dgamma = param_grads ? c.out[1].data<float>() : nullptr,
                            .dbeta = param_grads ? c.out[2].data<float>() : nullptr});
}

const OpDef kLayerNormBackward{.name = "layer_norm_backward",
                               .infer = infer_backward,
                               .cpu = cpu_backward,
                               .cuda = PILLARS_CUDA_KERNEL(layer_norm_backward),
                               .cuda_workspace = PILLARS_CUDA_WORKSPACE(layer_norm_backward),
                               .print = print_backward};

std::vector<ValueId> vjp(Graph& g, const Node& n, const std::vector<ValueId>& dy, const std::vector<bool>& needs) {
  PILLARS_CHECK(dy[1] == kNoValue && dy[2] == kNoValue,
                "layer_norm: gradients through the mean/rstd outputs are not supported");
  std::vector<ValueId> grads(n.inputs.size(), kNoValue);
  if (dy[0] == kNoValue) return grads;
  const bool has_gamma = params_of<LayerNormParams>(n).has_gamma;
  bool param_grads = false;
  for (size_t i = 1; i < needs.size(); ++i) param_grads = param_grads || needs[i];
  std::vector<ValueId> in{n.inputs[0], n.outputs[1], n.outputs[2], dy[0]};
  if (has_gamma) in.push_back(n.inputs[1]);
  const std::vector<ValueId> out =
      g.add(kLayerNormBackward, in, LayerNormBackwardParams{.has_gamma = has_gamma, .param_grads = param_grads});
  if (needs[0]) grads[0] = out[0];
  for (size_t i = 1; i < n.inputs.size(); ++i) {
    const bool is_gamma = has_gamma && i == 1; // inputs: x [, γ] [, β]
    if (needs[i]) grads[i] = out[is_gamma ? 1 : 2];
  }
  return grads;
}

const OpDef kLayerNorm{.name = "layer_norm",
                       .infer = infer_forward,
                       .cpu = cpu_forward,
                       .cuda = PILLARS_CUDA_KERNEL(layer_norm),
                       .vjp = vjp,
                       .print = print_forward};

} // namespace

ValueId layer_norm(Graph& g, ValueId x, ValueId gamma, ValueId beta, float eps) {
  std::vector<ValueId> in{x};
  if (gamma != kNoValue) in.push_back(gamma);
  if (beta != kNoValue) in.push_back(beta);
  return g.add(kLayerNorm, in,
               LayerNormParams{.eps = eps, .has_gamma = gamma != kNoValue, .has_beta = beta != kNoValue})[0];
}

ValueId layer_norm_reference(Graph& g, ValueId x, ValueId gamma, ValueId beta, float eps) {
  const ValueId centered = sub(g, x, mean(g, x, -1, /*keepdim=*/true));
  const ValueId var = mean(g, mul(g, centered, centered), -1, /*keepdim=*/true);
  ValueId y = div(g, centered, sqrt(g, add_scalar(g, var, eps)));
  if (gamma != kNoValue) y = mul(g, y, gamma);
  if (beta != kNoValue) y = add(g, y, beta);
  return y;
}

} // namespace pillars::ops
