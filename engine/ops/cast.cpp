// The cast op; see cast.h.
#include "engine/ops/cast.h"

#include <cstring>

#include "engine/ops/common.h"
#include "kernels/cpu/cast.h"

namespace pillars::ops {

namespace {

bool is_float(DType t) { return t == DType::f32 || t == DType::bf16; }

std::vector<OutputSpec> infer_cast(const Graph& g, const Node& n) {
  const CastParams& p = params_of<CastParams>(n);
  const DType from = g.dtype(n.inputs.at(0));
  PILLARS_CHECK(is_float(from) && is_float(p.to), "cast: converts between f32 and bf16, not ", dtype_name(from), " to ",
                dtype_name(p.to));
  return {{g.shape(n.inputs[0]), p.to}};
}

void cast_cpu(const KernelContext& c) {
  const Tensor& x = c.in[0];
  Tensor& y = c.out[0];
  const int64_t n = x.numel();
  if (x.dtype() == y.dtype())
    std::memcpy(y.raw(), x.raw(), static_cast<size_t>(n) * dtype_size(x.dtype()));
  else if (y.dtype() == DType::bf16)
    cpu::f32_to_bf16({.n = n}, x.data<float>(), y.data<uint16_t>());
  else
    cpu::bf16_to_f32({.n = n}, x.data<uint16_t>(), y.data<float>());
}

std::string print_cast(const Node& n) { return str_cat(" to=", dtype_name(params_of<CastParams>(n).to)); }

NodeFlops cast_flops(const Graph&, const Node&) { return {}; } // moves bytes, computes nothing

} // namespace

const OpDef kCast{.name = "cast",
                  .infer = infer_cast,
                  .cpu = cast_cpu,
                  .cuda = PILLARS_CUDA_KERNEL(cast),
                  .print = print_cast,
                  .flops = cast_flops};

ValueId cast(Graph& g, ValueId x, DType to) { return g.add1(kCast, {x}, CastParams{.to = to}); }

} // namespace pillars::ops
