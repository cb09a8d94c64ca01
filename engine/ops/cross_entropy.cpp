// cross_entropy: fused log-softmax + negative log-likelihood with label smoothing and ignore_index,
// and its fused backward op.
//
//   logits x (..., V) f32, targets t (...) i32  →  L (scalar), lse (...)
//   q_v    = (1 − ε)·[v = t_n] + ε/V                       (the smoothed target distribution)
//   loss_n = lse_n − Σ_v q_v x_{n,v},   lse_n = log Σ_v exp(x_{n,v})
//   L      = Σ_{n : t_n ≠ ignore} loss_n / n_valid          (PyTorch's reduction="mean"; 0 if no row)
// Gradient (G = dL_total/dL):
//   dx_{n,v} = (softmax(x_n)_v − q_v) · G / n_valid,  0 on ignored rows
//            → op cross_entropy_backward(x, t, lse, G), which recomputes softmax from x and lse.
// Memory: the forward keeps lse (one float per row) as output 1, nothing of size (N, V).
// Kernels: kernels/cpu/cross_entropy.h (bad targets raise pillars::Error naming row and value).
#include "engine/ops/common.h"
#include "engine/ops/cross_entropy.h"
#include "engine/ops/softmax.h"
#include "kernels/cpu/cross_entropy.h"

namespace pillars::ops {
namespace {

void check_logits_targets(const Graph& g, const char* op, ValueId logits, ValueId targets) {
  const Shape &xs = g.shape(logits), &ts = g.shape(targets);
  PILLARS_CHECK(g.dtype(logits) == DType::f32 && g.dtype(targets) == DType::i32, op,
                ": expects f32 logits and i32 targets, got ", dtype_name(g.dtype(logits)), " and ",
                dtype_name(g.dtype(targets)));
  PILLARS_CHECK(!xs.empty() && xs.back() > 0 && Shape(xs.begin(), xs.end() - 1) == ts, op, ": logits ", shape_str(xs),
                " and targets ", shape_str(ts), " do not match (want logits (..., V), targets (...))");
}

// The kernel's arguments: the op's CrossEntropyParams and the logits viewed as (N, V).
cpu::CrossEntropyParams kernel_params(const KernelContext& c) {
  const CrossEntropyParams& op = params_of<CrossEntropyParams>(c.node);
  const int64_t V = c.in[0].dim(-1);
  return {.N = c.in[0].numel() / V, .V = V, .smoothing = op.smoothing, .ignore_index = op.ignore_index};
}

std::string print_params(const Node& n) {
  const CrossEntropyParams& p = params_of<CrossEntropyParams>(n);
  return str_cat(" smoothing=", p.smoothing, " ignore_index=", p.ignore_index);
}

// inputs: logits, targets → loss [], lse (...)
std::vector<OutputSpec> infer_forward(const Graph& g, const Node& n) {
  check_logits_targets(g, "cross_entropy", n.inputs[0], n.inputs[1]);
  const float smoothing = params_of<CrossEntropyParams>(n).smoothing;
  PILLARS_CHECK(smoothing >= 0.0f && smoothing <= 1.0f, "cross_entropy: label smoothing ", smoothing,
                " is not in [0, 1]");
  return {{Shape{}, DType::f32}, {g.shape(n.inputs[1]), DType::f32}};
}

// Scratch: one loss per row, summed in a fixed order after the parallel loop.
size_t workspace_forward(const Graph& g, const Node& n) {
  return static_cast<size_t>(numel(g.shape(n.inputs[1]))) * sizeof(float);
}

void cpu_forward(const KernelContext& c) {
  const cpu::CrossEntropyParams p = kernel_params(c);
  c.out[0].data<float>()[0] = cpu::cross_entropy_forward(p, c.in[0].data<float>(), c.in[1].data<int32_t>(),
                                                         c.out[1].data<float>(), static_cast<float*>(c.workspace));
}

// inputs: logits, targets, lse, dL → dlogits
std::vector<OutputSpec> infer_backward(const Graph& g, const Node& n) {
  check_logits_targets(g, "cross_entropy_backward", n.inputs[0], n.inputs[1]);
  PILLARS_CHECK(g.shape(n.inputs[2]) == g.shape(n.inputs[1]) && g.shape(n.inputs[3]).empty(),
                "cross_entropy_backward: lse must match targets and dL must be a scalar");
  return {{g.shape(n.inputs[0]), DType::f32}};
}

void cpu_backward(const KernelContext& c) {
  cpu::cross_entropy_backward(kernel_params(c), c.in[0].data<float>(), c.in[1].data<int32_t>(), c.in[2].data<float>(),
                              c.in[3].data<float>()[0], c.out[0].data<float>());
}

// In place: each row's logits are read before the same positions of dlogits are written, so the
// (N, V) gradient can take over the logits' buffer — the largest of a training step.
const OpDef kCrossEntropyBackward{.name = "cross_entropy_backward",
                                  .infer = infer_backward,
                                  .cpu = cpu_backward,
                                  .cuda = PILLARS_CUDA_KERNEL(cross_entropy_backward),
                                  .cuda_workspace = PILLARS_CUDA_WORKSPACE(cross_entropy_backward),
                                  .print = print_params,
                                  .inplace = true};

std::vector<ValueId> vjp(Graph& g, const Node& n, const std::vector<ValueId>& dy, const std::vector<bool>& needs) {
  PILLARS_CHECK(dy[1] == kNoValue, "cross_entropy: gradients through the lse output are not supported");
  if (!needs[0] || dy[0] == kNoValue) return {kNoValue, kNoValue};
  return {g.add1(kCrossEntropyBackward, {n.inputs[0], n.inputs[1], n.outputs[1], dy[0]}, n.params), kNoValue};
}

} // namespace

const OpDef kCrossEntropy{.name = "cross_entropy",
                          .infer = infer_forward,
                          .cpu = cpu_forward,
                          .cuda = PILLARS_CUDA_KERNEL(cross_entropy),
                          .vjp = vjp,
                          .workspace = workspace_forward,
                          .cuda_workspace = PILLARS_CUDA_WORKSPACE(cross_entropy),
                          .print = print_params};

ValueId cross_entropy(Graph& g, ValueId logits, ValueId targets, float smoothing, int64_t ignore_index) {
  return g.add(kCrossEntropy, {logits, targets},
               CrossEntropyParams{.smoothing = smoothing, .ignore_index = ignore_index})[0];
}

} // namespace pillars::ops
