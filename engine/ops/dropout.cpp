// dropout (counter-based, regenerated in the backward) and masked_fill.
//
// dropout: x (...) → y (same shape), with u_i = philox_uniform(seed, offset, i) (kernels/philox.h),
//   seed = the op's seed + the executor's run seed (KernelContext::run_seed: a fresh mask per step)
//   y_i = x_i / (1 − p)  if u_i >= p,   else 0                 (p = 1: y = 0)
//   dx  = dropout(dy) with the same (p, seed, offset): the same mask, the same scale; the mask is
//         never stored. (The vjp is the op itself.)
// Kernels: kernels/cpu/dropout.h, kernels/cuda/dropout.h (the same functions).
// masked_fill: x (...) f32, mask i32 broadcast to x's shape (numpy rules, aligned at the right)
//   y = where(mask != 0, value, x),    dx = where(mask != 0, 0, dy) = masked_fill(dy, mask, 0)
#include "engine/ops/common.h"
#include "engine/ops/dropout.h"
#include "kernels/cpu/dropout.h"

namespace pillars::ops {
namespace {

// ---- dropout -----------------------------------------------------------------------------------

void cpu_dropout(const KernelContext& c) {
  const DropoutParams& p = params_of<DropoutParams>(c.node);
  const cpu::DropoutArgs a{.n = c.in[0].numel(),
                           .p = p.p,
                           .scale = 1.0f / (1.0f - p.p),
                           .seed = p.seed + c.run_seed,
                           .offset = p.rng_offset};
  cpu::dropout(a, c.in[0].data<float>(), c.out[0].data<float>());
}

std::vector<OutputSpec> infer_dropout(const Graph& g, const Node& n) {
  PILLARS_CHECK(g.dtype(n.inputs[0]) == DType::f32, "dropout: x must be f32");
  const float p = params_of<DropoutParams>(n).p;
  PILLARS_CHECK(p >= 0.0f && p <= 1.0f, "dropout: p = ", p, " is not in [0, 1]");
  return {{g.shape(n.inputs[0]), DType::f32}};
}

std::vector<ValueId> vjp_dropout(Graph& g, const Node& n, const std::vector<ValueId>& dy,
                                 const std::vector<bool>& needs) {
  if (!needs[0] || dy[0] == kNoValue) return {kNoValue};
  const DropoutParams& p = params_of<DropoutParams>(n);
  return {dropout(g, dy[0], p.p, p.seed, p.rng_offset)};
}

std::string print_dropout(const Node& n) {
  const DropoutParams& p = params_of<DropoutParams>(n);
  return str_cat(" p=", p.p, " seed=", p.seed, " offset=", p.rng_offset);
}

const OpDef kDropout{.name = "dropout",
                     .infer = infer_dropout,
                     .cpu = cpu_dropout,
                     .cuda = PILLARS_CUDA_KERNEL(dropout),
                     .vjp = vjp_dropout,
                     .print = print_dropout};

// ---- masked_fill -------------------------------------------------------------------------------

std::vector<OutputSpec> infer_masked_fill(const Graph& g, const Node& n) {
  const Shape &xs = g.shape(n.inputs[0]), &ms = g.shape(n.inputs[1]);
  PILLARS_CHECK(g.dtype(n.inputs[0]) == DType::f32, "masked_fill: x must be f32");
  PILLARS_CHECK(g.dtype(n.inputs[1]) == DType::i32, "masked_fill: mask must be i32");
  bool ok = ms.size() <= xs.size();
  for (size_t k = 1; ok && k <= ms.size(); ++k) ok = ms[ms.size() - k] == 1 || ms[ms.size() - k] == xs[xs.size() - k];
  PILLARS_CHECK(ok, "masked_fill: mask ", shape_str(ms), " does not broadcast to x ", shape_str(xs));
  return {{xs, DType::f32}};
}

// inputs: x f32, mask i32 (broadcast to x); MaskedFillParams value
void cpu_masked_fill(const KernelContext& c) {
  const Tensor &x = c.in[0], &mask = c.in[1];
  cpu::masked_fill({.x_dims = x.shape(), .mask_dims = mask.shape(), .value = params_of<MaskedFillParams>(c.node).value},
                   x.data<float>(), mask.data<int32_t>(), c.out[0].data<float>());
}

std::vector<ValueId> vjp_masked_fill(Graph& g, const Node& n, const std::vector<ValueId>& dy,
                                     const std::vector<bool>& needs) {
  if (!needs[0] || dy[0] == kNoValue) return {kNoValue, kNoValue};
  return {masked_fill(g, dy[0], n.inputs[1], 0.0f), kNoValue};
}

std::string print_masked_fill(const Node& n) { return str_cat(" value=", params_of<MaskedFillParams>(n).value); }

const OpDef kMaskedFill{.name = "masked_fill",
                        .infer = infer_masked_fill,
                        .cpu = cpu_masked_fill,
                        .cuda = PILLARS_CUDA_KERNEL(masked_fill),
                        .vjp = vjp_masked_fill,
                        .print = print_masked_fill};

} // namespace

ValueId dropout(Graph& g, ValueId x, float p, uint64_t seed, uint64_t offset) {
  if (p == 0.0f) return x; // the identity: no node
  return g.add1(kDropout, {x}, DropoutParams{.p = p, .seed = seed, .rng_offset = offset});
}

ValueId masked_fill(Graph& g, ValueId x, ValueId mask, float value) {
  return g.add1(kMaskedFill, {x, mask}, MaskedFillParams{.value = value});
}

} // namespace pillars::ops
