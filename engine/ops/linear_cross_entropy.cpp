// linear_cross_entropy: logits x = h Wᵀ and the cross-entropy of x in one node, by row blocks.
//
//   h (N, d), W (V, d), t (N) i32  →  L (scalar), dh° (N, d), dW° (V, d)
//   x     = h Wᵀ                                       (N, V), one block of rows at a time
//   L     = Σ_{n : t_n ≠ ignore} loss_n / n_valid      (ops::cross_entropy: loss_n = lse_n − Σ_v q_v x_{n,v})
//   dx    = (softmax(x) − q) / n_valid, 0 on ignored rows
//   dh°   = dx W = ∂L/∂h,   dW° = dxᵀ h = ∂L/∂W
// Gradient, with G = dL_total/dL:  dh = G·dh°,  dW = G·dW°  (mul with a scalar: broadcast).
//
// Why the gradients come out of the forward: the backward of the unfused pair needs the logits
// (or a recomputation of them: a fourth product). Computing dx while a block's logits are still
// in the scratch costs the same three products and keeps only dh° and dW° — (N + V)·d floats
// instead of N·V — between the forward and the backward. On the `bench` model that is 14 MB
// instead of 160 MB. The op only makes sense in a training step, which is where the pass puts it.
//
// Kernels: kernels/cpu/linear_cross_entropy.h; CUDA: engine/ops/cuda/linear_cross_entropy.cu.
#include "engine/ops/linear_cross_entropy.h"

#include "engine/ops/common.h"
#include "engine/ops/elementwise.h"
#include "kernels/cpu/linear_cross_entropy.h"

namespace pillars::ops {

namespace {

// inputs: h, W, targets → loss [], dh (N, d), dW (V, d)
std::vector<OutputSpec> infer(const Graph& g, const Node& n) {
  PILLARS_CHECK(n.inputs.size() == 3, "linear_cross_entropy: expects h, W, targets");
  detail::expect_f32("linear_cross_entropy", g, n.inputs[0]);
  detail::expect_f32("linear_cross_entropy", g, n.inputs[1]);
  const Shape &h = g.shape(n.inputs[0]), &w = g.shape(n.inputs[1]), &t = g.shape(n.inputs[2]);
  PILLARS_CHECK(g.dtype(n.inputs[2]) == DType::i32, "linear_cross_entropy: targets must be i32, got ",
                dtype_name(g.dtype(n.inputs[2])));
  PILLARS_CHECK(h.size() == 2 && w.size() == 2 && h[1] == w[1] && h[1] > 0 && w[0] > 0 && t == Shape{h[0]},
                "linear_cross_entropy: h ", shape_str(h), ", W ", shape_str(w), " and targets ", shape_str(t),
                " do not match (want h (N, d), W (V, d), targets (N), with d > 0 and V > 0)");
  const LinearCrossEntropyParams& p = params_of<LinearCrossEntropyParams>(n);
  PILLARS_CHECK(p.smoothing >= 0.0f && p.smoothing <= 1.0f, "linear_cross_entropy: label smoothing ", p.smoothing,
                " is not in [0, 1]");
  PILLARS_CHECK(p.block_rows > 0, "linear_cross_entropy: block_rows must be positive, got ", p.block_rows);
  return {{Shape{}, DType::f32}, {h, DType::f32}, {w, DType::f32}};
}

// The kernel's arguments: the node's parameters and the extents of h (N, d) and W (V, d).
cpu::LinearCrossEntropyParams kernel_params(const Node& n, const Shape& h, const Shape& w) {
  const LinearCrossEntropyParams& op = params_of<LinearCrossEntropyParams>(n);
  cpu::LinearCrossEntropyParams p;
  p.ce.N = h[0];
  p.ce.V = w[0];
  p.ce.smoothing = op.smoothing;
  p.ce.ignore_index = op.ignore_index;
  p.d = h[1];
  p.block_rows = op.block_rows;
  return p;
}

size_t workspace(const Graph& g, const Node& n) {
  return static_cast<size_t>(
             cpu::linear_cross_entropy_scratch_floats(kernel_params(n, g.shape(n.inputs[0]), g.shape(n.inputs[1])))) *
         sizeof(float);
}

void cpu_forward(const KernelContext& c) {
  c.out[0].data<float>()[0] = cpu::linear_cross_entropy(
      kernel_params(c.node, c.in[0].shape(), c.in[1].shape()), c.in[0].data<float>(), c.in[1].data<float>(),
      c.in[2].data<int32_t>(), c.out[1].data<float>(), c.out[2].data<float>(), static_cast<float*>(c.workspace));
}

std::vector<ValueId> vjp(Graph& g, const Node& n, const std::vector<ValueId>& dy, const std::vector<bool>& needs) {
  PILLARS_CHECK(dy[1] == kNoValue && dy[2] == kNoValue,
                "linear_cross_entropy: its gradient outputs cannot be differentiated again");
  if (dy[0] == kNoValue) return {kNoValue, kNoValue, kNoValue};
  return {needs[0] ? mul(g, n.outputs[1], dy[0]) : kNoValue, needs[1] ? mul(g, n.outputs[2], dy[0]) : kNoValue,
          kNoValue};
}

std::string print_params(const Node& n) {
  const LinearCrossEntropyParams& p = params_of<LinearCrossEntropyParams>(n);
  return str_cat(" smoothing=", p.smoothing, " ignore_index=", p.ignore_index, " block_rows=", p.block_rows);
}

// The three products (x = h Wᵀ, dx W, dxᵀ h: 2·N·V·d each) under "matmul"; under "other" what
// cross_entropy (its N + 1 outputs) and its backward (N·V) count, so a graph counts the same
// before and after the fusion.
NodeFlops flops(const Graph& g, const Node& n) {
  const double N = static_cast<double>(g.shape(n.inputs[0])[0]), d = static_cast<double>(g.shape(n.inputs[0])[1]),
               V = static_cast<double>(g.shape(n.inputs[1])[0]);
  return {.matmul = 3.0 * 2.0 * N * V * d, .other = N * V + N + 1.0};
}

} // namespace

const OpDef kLinearCrossEntropy{.name = "linear_cross_entropy",
                                .infer = infer,
                                .cpu = cpu_forward,
                                .cuda = PILLARS_CUDA_KERNEL(linear_cross_entropy),
                                .vjp = vjp,
                                .workspace = workspace,
                                .cuda_workspace = PILLARS_CUDA_WORKSPACE(linear_cross_entropy),
                                .print = print_params,
                                .flops = flops,
                                .makes_gradients = true};

LinearCrossEntropy linear_cross_entropy(Graph& g, ValueId h, ValueId W, ValueId targets, float smoothing,
                                        int64_t ignore_index, int64_t block_rows) {
  const std::vector<ValueId> outs =
      g.add(kLinearCrossEntropy, {h, W, targets},
            LinearCrossEntropyParams{.smoothing = smoothing, .ignore_index = ignore_index, .block_rows = block_rows});
  return {outs[0], outs[1], outs[2]};
}

} // namespace pillars::ops
