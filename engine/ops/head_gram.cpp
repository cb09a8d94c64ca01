// head_gram (the k × k Gram matrix of GHT, docs/METHOD.md §2) and its backward op.
//
// head_gram: x (B, T, H, D) f32, lengths (B) i32 or none → G (H, H)
//   G[i, j] = Σ_{b, t < len_b, d} x[b,t,i,d] · x[b,t,j,d]     (padding positions t ≥ len_b left out)
//   With E_i the flattened valid features of head i, G = E Eᵀ, so dE = (dG + dGᵀ) E, i.e.
//   dx[b,t,i,:] = Σ_j (dG + dGᵀ)[i, j] · x[b,t,j,:] on valid positions, 0 on padding.
//                                                    → op head_gram_backward(x, dG [, lengths])
// Kernels: kernels/cpu/head_gram.h, kernels/cuda/head_gram.h (the same functions; each sums in a
// fixed order, deterministic for any thread count).
#include "engine/ops/common.h"
#include "engine/ops/head_gram.h"
#include "kernels/cpu/head_gram.h"

namespace pillars::ops {
namespace {

// ---- head_gram ---------------------------------------------------------------------------------

// The kernel's arguments for x (B, T, H, D).
cpu::HeadGramArgs kernel_args(const Tensor& x) { return {.B = x.dim(0), .T = x.dim(1), .H = x.dim(2), .D = x.dim(3)}; }

// The lengths input's data (nullptr without one), each checked to lie in [0, T].
const int32_t* checked_lengths(const cpu::HeadGramArgs& a, const Tensor* lengths) {
  if (!lengths) return nullptr;
  cpu::head_gram_check_lengths(a, lengths->data<int32_t>());
  return lengths->data<int32_t>();
}

// inputs: x [, lengths] (head_gram) or x, dG [, lengths] (backward)
std::vector<OutputSpec> infer_gram(const Graph& g, const Node& n, bool backward) {
  const Shape& xs = g.shape(n.inputs[0]);
  PILLARS_CHECK(xs.size() == 4 && g.dtype(n.inputs[0]) == DType::f32, n.op->name, ": x must be f32 (B, T, H, D), got ",
                shape_str(xs));
  const size_t first_extra = backward ? 2 : 1;
  if (n.inputs.size() > first_extra) {
    const ValueId len = n.inputs[first_extra];
    PILLARS_CHECK(g.dtype(len) == DType::i32 && g.shape(len) == Shape{xs[0]}, n.op->name,
                  ": lengths must be i32 of shape [", xs[0], "]");
  }
  if (!backward) return {{{xs[2], xs[2]}, DType::f32}};
  PILLARS_CHECK(g.shape(n.inputs[1]) == (Shape{xs[2], xs[2]}), n.op->name, ": dG must be (H, H)");
  return {{xs, DType::f32}};
}
std::vector<OutputSpec> infer_gram_forward(const Graph& g, const Node& n) { return infer_gram(g, n, false); }
std::vector<OutputSpec> infer_gram_backward(const Graph& g, const Node& n) { return infer_gram(g, n, true); }

size_t workspace_gram(const Graph& g, const Node& n) {
  const Shape& xs = g.shape(n.inputs[0]);
  return cpu::head_gram_workspace({.B = xs[0], .T = xs[1], .H = xs[2]});
}

// inputs: x (B, T, H, D) [, lengths (B)] → G (H, H)
void cpu_gram(const KernelContext& c) {
  const cpu::HeadGramArgs a = kernel_args(c.in[0]);
  cpu::head_gram(a, c.in[0].data<float>(), checked_lengths(a, c.in.size() > 1 ? &c.in[1] : nullptr),
                 c.out[0].data<float>(), c.workspace);
}

// inputs: x (B, T, H, D), dG (H, H) [, lengths (B)] → dx (B, T, H, D)
void cpu_gram_backward(const KernelContext& c) {
  const cpu::HeadGramArgs a = kernel_args(c.in[0]);
  cpu::head_gram_backward(a, c.in[0].data<float>(), c.in[1].data<float>(),
                          checked_lengths(a, c.in.size() > 2 ? &c.in[2] : nullptr), c.out[0].data<float>());
}

const OpDef kGramBackward{.name = "head_gram_backward",
                          .infer = infer_gram_backward,
                          .cpu = cpu_gram_backward,
                          .cuda = PILLARS_CUDA_KERNEL(head_gram_backward)};

std::vector<ValueId> vjp_gram(Graph& g, const Node& n, const std::vector<ValueId>& dy, const std::vector<bool>& needs) {
  std::vector<ValueId> grads(n.inputs.size(), kNoValue);
  if (!needs[0] || dy[0] == kNoValue) return grads;
  std::vector<ValueId> in{n.inputs[0], dy[0]};
  if (n.inputs.size() > 1) in.push_back(n.inputs[1]);
  grads[0] = g.add1(kGramBackward, in);
  return grads;
}

const OpDef kGram{.name = "head_gram",
                  .infer = infer_gram_forward,
                  .cpu = cpu_gram,
                  .cuda = PILLARS_CUDA_KERNEL(head_gram),
                  .vjp = vjp_gram,
                  .workspace = workspace_gram,
                  .cuda_workspace = PILLARS_CUDA_WORKSPACE(head_gram)};

} // namespace

ValueId head_gram(Graph& g, ValueId x, ValueId lengths) {
  return g.add1(kGram, lengths == kNoValue ? std::vector<ValueId>{x} : std::vector<ValueId>{x, lengths});
}

} // namespace pillars::ops
