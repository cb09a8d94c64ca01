// linear_act: y = act(x Wᵀ + b) in one node, act ∈ {relu, gelu}.
//
//   x (..., in), W (out, in), b (out)  →  y (..., out)           relu
//                                      →  y (..., out), pre (..., out)   gelu (pre = x Wᵀ + b)
//
// It is exactly ops::linear followed by ops::relu / ops::gelu (engine/ops/matmul.cpp,
// elementwise.cpp), computed with fewer passes over the output:
//   CPU   the GEMM of ops::linear (kernels/cpu/gemm_precision.h: all rows of all batches at once,
//         at the CPU's matmul precision like the matmul op), then
//         cpu::bias_activation — bias and activation in one pass, row by row while it is in cache —
//         with the same arithmetic as the unfused add and activation, so the results are identical.
//   CUDA  cuBLASLt with a bias(+ReLU) epilogue (kernels/cuda/linear_act.cu).
//
// Gradient, with z = x Wᵀ + b and dy = dL/dy (plus dL/dpre when something read pre):
//   dz = dy ∘ [y > 0]            relu (from the output, as relu_backward; z may die early)
//   dz = dy ∘ gelu'(pre)         gelu (from the pre-activation output)
//   dx = dz · W                  (..., out) · (out, in) → (..., in)
//   dW = dzᵀ · x                 rows of all batches flattened: (out, N) · (N, in) → (out, in)
//   db = Σ_rows dz               (out)
// all of them existing ops (relu_backward / gelu_backward, matmul, sum_to): the same nodes the
// unfused graph's vjps emit, so the backward costs and computes the same.
#include "engine/ops/linear_act.h"

#include "engine/ops/common.h"
#include "engine/ops/elementwise.h"
#include "engine/ops/matmul.h"
#include "engine/ops/shape.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/gemm_precision.h"

namespace pillars::ops {

namespace {

bool is_gelu(const Node& n) { return params_of<LinearActParams>(n).activation == Activation::gelu; }

std::vector<OutputSpec> infer_linear_act(const Graph& g, const Node& n) {
  PILLARS_CHECK(n.inputs.size() == 3, "linear_act: expects x, W, b");
  for (ValueId v : n.inputs) detail::expect_f32("linear_act", g, v);
  const Shape x = g.shape(n.inputs[0]), w = g.shape(n.inputs[1]), b = g.shape(n.inputs[2]);
  PILLARS_CHECK(x.size() >= 2 && w.size() == 2 && x.back() == w[1] && b == Shape{w[0]}, "linear_act: x ", shape_str(x),
                ", W ", shape_str(w), ", b ", shape_str(b), " do not fit x (..., in), W (out, in), b (out)");
  Shape y = x;
  y.back() = w[0];
  if (is_gelu(n)) return {{y, DType::f32}, {y, DType::f32}};
  return {{y, DType::f32}};
}

void linear_act_cpu(const KernelContext& c) {
  const Tensor &x = c.in[0], &w = c.in[1], &b = c.in[2];
  const int64_t in = w.shape()[1], out = w.shape()[0], rows = x.numel() / in;
  const bool gelu = is_gelu(c.node);
  float* y = c.out[0].data<float>();
  float* z = gelu ? c.out[1].data<float>() : y; // where x Wᵀ (+ b) goes
  // z (rows, out) = x (rows, in) · W (out, in)ᵀ, the call ops::linear's matmul makes.
  cpu::gemm_at_precision(false, true, rows, out, in, 1.0f, x.data<float>(), in, w.data<float>(), in, 0.0f, z, out);
  cpu::bias_activation({.kind = gelu ? cpu::UnaryKind::gelu : cpu::UnaryKind::relu, .rows = rows, .n = out}, z,
                       b.data<float>(), y);
}

std::vector<ValueId> linear_act_vjp(Graph& g, const Node& n, const std::vector<ValueId>& go,
                                    const std::vector<bool>& needs) {
  const ValueId x = n.inputs[0], W = n.inputs[1];
  const bool gelu = is_gelu(n);
  ValueId dz = kNoValue;
  if (go[0] != kNoValue) dz = gelu ? gelu_backward(g, go[0], n.outputs[1]) : relu_backward(g, go[0], n.outputs[0]);
  if (gelu && go[1] != kNoValue) dz = dz == kNoValue ? go[1] : add(g, dz, go[1]);
  const int64_t out = g.shape(W)[0];
  ValueId dx = kNoValue, dW = kNoValue, db = kNoValue;
  if (needs[0]) dx = matmul(g, dz, W); // (..., out) · (out, in)
  if (needs[1]) {
    const bool batched = g.shape(x).size() > 2;
    const ValueId rows_dz = batched ? reshape(g, dz, {-1, out}) : dz;            // (N, out)
    const ValueId rows_x = batched ? reshape(g, x, {-1, g.shape(x).back()}) : x; // (N, in)
    dW = matmul(g, rows_dz, rows_x, /*trans_a=*/true, /*trans_b=*/false);
  }
  if (needs[2]) db = sum_to(g, dz, {out});
  return {dx, dW, db};
}

std::string print_linear_act(const Node& n) {
  return str_cat(" activation=", enum_name(params_of<LinearActParams>(n).activation));
}

// y (..., out) = act(x (..., in) · Wᵀ + b): the product's 2·in per element under "matmul", and the
// bias add and the activation it replaces (one each per element) under "other", so a graph counts
// the same before and after fuse_linear_activation.
NodeFlops flops_linear_act(const Graph& g, const Node& n) {
  const double elements = static_cast<double>(numel(g.shape(n.outputs[0])));
  return {.matmul = 2.0 * static_cast<double>(g.shape(n.inputs[1])[1]) * elements, .other = 2.0 * elements};
}

const OpDef kLinearAct{.name = "linear_act",
                       .infer = infer_linear_act,
                       .cpu = linear_act_cpu,
                       .cuda = PILLARS_CUDA_KERNEL(linear_act),
                       .vjp = linear_act_vjp,
                       .cuda_workspace = PILLARS_CUDA_WORKSPACE(linear_act),
                       .print = print_linear_act,
                       .flops = flops_linear_act};

} // namespace

LinearAct linear_act(Graph& g, ValueId x, ValueId w, ValueId b, Activation act) {
  const std::vector<ValueId> outs = g.add(kLinearAct, {x, w, b}, LinearActParams{.activation = act});
  return {outs[0], outs.size() > 1 ? outs[1] : kNoValue};
}

} // namespace pillars::ops
