// dropout (counter-based, regenerated in the backward) and masked_fill.
//
// dropout: x (...) → y (same shape), with u_i = philox_uniform(seed, offset, i) (kernels/philox.h),
//   seed = the op's seed + the executor's run seed (KernelContext::run_seed: a fresh mask per step)
//   y_i = x_i / (1 − p)  if u_i >= p,   else 0                 (p = 1: y = 0)
//   dx  = dropout(dy) with the same (p, seed, offset): the same mask, the same scale; the mask is
//         never stored. (The vjp is the op itself.)
// masked_fill: x (...) f32, mask i32 broadcast to x's shape (numpy rules, aligned at the right)
//   y = where(mask != 0, value, x),    dx = where(mask != 0, 0, dy) = masked_fill(dy, mask, 0)
#include <algorithm>

#include "engine/ops/common.h"
#include "engine/ops/nn.h"
#include "kernels/philox.h"

namespace pillars::ops {
namespace {

using detail::kParallelGrain;
constexpr int64_t kChunk = 4096;        // elements per parallel work item

// ---- dropout -----------------------------------------------------------------------------------

// y[i] for i in [begin, end). One Philox call yields the random words of four consecutive stream
// positions (offset + i), so the loop walks the stream four positions at a time.
void dropout_range(const float* x, float* y, int64_t begin, int64_t end, float p, uint64_t seed, uint64_t offset) {
  const float scale = 1.0f / (1.0f - p);
  int64_t i = begin;
  while (i < end) {
    const uint64_t n = offset + static_cast<uint64_t>(i);
    const Philox4 r = philox4x32_10(n >> 2, seed);
    for (uint64_t lane = n & 3; lane < 4 && i < end; ++lane, ++i) {
      const float u = static_cast<float>(r.v[lane] >> 8) * (1.0f / 16777216.0f); // = philox_uniform
      y[i] = u >= p ? x[i] * scale : 0.0f;
    }
  }
}

void cpu_dropout(const KernelContext& c) {
  const DropoutParams& a = params_of<DropoutParams>(c.node);
  const float* x = c.in[0].data<float>();
  float* y = c.out[0].data<float>();
  const int64_t n = c.in[0].numel(), chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (n >= kParallelGrain)
  for (int64_t k = 0; k < chunks; ++k)
    dropout_range(x, y, k * kChunk, std::min(n, (k + 1) * kChunk), a.p, a.seed + c.run_seed, a.rng_offset);
}

std::vector<OutputSpec> infer_dropout(const Graph& g, const Node& n) {
  PILLARS_CHECK(g.dtype(n.inputs[0]) == DType::f32, "dropout: x must be f32");
  const float p = params_of<DropoutParams>(n).p;
  PILLARS_CHECK(p >= 0.0f && p <= 1.0f, "dropout: p = ", p, " is not in [0, 1]");
  return {{g.shape(n.inputs[0]), DType::f32}};
}

std::vector<ValueId> vjp_dropout(Graph& g, const Node& n, const std::vector<ValueId>& dy, const std::vector<bool>& needs) {
  if (!needs[0] || dy[0] == kNoValue) return {kNoValue};
  const DropoutParams& p = params_of<DropoutParams>(n);
  return {dropout(g, dy[0], p.p, p.seed, p.rng_offset)};
}

std::string print_dropout(const Node& n) {
  const DropoutParams& p = params_of<DropoutParams>(n);
  return str_cat(" p=", p.p, " seed=", p.seed, " offset=", p.rng_offset);
}

const OpDef kDropout{.name = "dropout", .infer = infer_dropout, .cpu = cpu_dropout, .cuda = PILLARS_CUDA_KERNEL(dropout), .vjp = vjp_dropout, .print = print_dropout};

// ---- masked_fill -------------------------------------------------------------------------------

// The offset in `mask` (broadcast to x's shape, aligned at the right) of element (row, 0) of x
// viewed as (rows, x.back()): decompose `row` over x's leading axes, last first, and add the mask
// strides of the axes the mask does not broadcast. No allocation (kernels run allocation-free).
int64_t mask_row_offset(const Shape& x, const Shape& mask, int64_t row) {
  const int64_t rank = static_cast<int64_t>(x.size()), shift = rank - static_cast<int64_t>(mask.size());
  int64_t offset = 0, stride = mask.empty() ? 1 : mask.back(); // the mask stride of axis rank − 2
  for (int64_t axis = rank - 2; axis >= 0 && axis >= shift; --axis) {
    const int64_t extent = mask[static_cast<size_t>(axis - shift)];
    if (extent != 1) offset += (row % x[static_cast<size_t>(axis)]) * stride;
    row /= x[static_cast<size_t>(axis)];
    stride *= extent;
  }
  return offset;
}

std::vector<OutputSpec> infer_masked_fill(const Graph& g, const Node& n) {
  const Shape &xs = g.shape(n.inputs[0]), &ms = g.shape(n.inputs[1]);
  PILLARS_CHECK(g.dtype(n.inputs[0]) == DType::f32, "masked_fill: x must be f32");
  PILLARS_CHECK(g.dtype(n.inputs[1]) == DType::i32, "masked_fill: mask must be i32");
  bool ok = ms.size() <= xs.size();
  for (size_t k = 1; ok && k <= ms.size(); ++k)
    ok = ms[ms.size() - k] == 1 || ms[ms.size() - k] == xs[xs.size() - k];
  PILLARS_CHECK(ok, "masked_fill: mask ", shape_str(ms), " does not broadcast to x ", shape_str(xs));
  return {{xs, DType::f32}};
}

void cpu_masked_fill(const KernelContext& c) {
  const Shape &xs = c.in[0].shape(), &ms = c.in[1].shape();
  const float* x = c.in[0].data<float>();
  const int32_t* mask = c.in[1].data<int32_t>();
  float* y = c.out[0].data<float>();
  const float value = params_of<MaskedFillParams>(c.node).value;
  const int64_t inner = xs.empty() ? 1 : xs.back(), rows = inner == 0 ? 0 : c.in[0].numel() / inner;
  const int64_t inner_stride = ms.empty() || ms.back() == 1 ? 0 : 1; // along x's last axis
#pragma omp parallel for schedule(static) if (rows * inner >= kParallelGrain)
  for (int64_t r = 0; r < rows; ++r) {
    const int32_t* m = mask + mask_row_offset(xs, ms, r);
#pragma omp simd
    for (int64_t j = 0; j < inner; ++j) y[r * inner + j] = m[j * inner_stride] != 0 ? value : x[r * inner + j];
  }
}

std::vector<ValueId> vjp_masked_fill(Graph& g, const Node& n, const std::vector<ValueId>& dy, const std::vector<bool>& needs) {
  if (!needs[0] || dy[0] == kNoValue) return {kNoValue, kNoValue};
  return {masked_fill(g, dy[0], n.inputs[1], 0.0f), kNoValue};
}

std::string print_masked_fill(const Node& n) { return str_cat(" value=", params_of<MaskedFillParams>(n).value); }

const OpDef kMaskedFill{.name = "masked_fill", .infer = infer_masked_fill, .cpu = cpu_masked_fill, .cuda = PILLARS_CUDA_KERNEL(masked_fill), .vjp = vjp_masked_fill, .print = print_masked_fill};

} // namespace

ValueId dropout(Graph& g, ValueId x, float p, uint64_t seed, uint64_t offset) {
  if (p == 0.0f) return x; // the identity: no node
  return g.add1(kDropout, {x}, DropoutParams{.p = p, .seed = seed, .rng_offset = offset});
}

ValueId masked_fill(Graph& g, ValueId x, ValueId mask, float value) {
  return g.add1(kMaskedFill, {x, mask}, MaskedFillParams{.value = value});
}

} // namespace pillars::ops
