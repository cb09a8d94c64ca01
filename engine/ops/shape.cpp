// Data-movement ops.
//
//   reshape   a free view (same bytes)            dx = reshape(g, shape(x))
//   permute   y[i_order] = x[i]  (copies)          dx = permute(g, inverse(order))
//   slice     y = x[..., begin:end, ...]           dx = pad_slice(g) (zeros elsewhere)
//   pad_slice y = zeros with x at [begin, end)     dx = slice(g)
//   concat    y = [x_0 | x_1 | …] along axis      dx_k = slice(g) of x_k's range
// Kernels: kernels/cpu/shape.h, kernels/cuda/shape.h (the same functions).
#include "engine/ops/shape.h"

#include <numeric>

#include "engine/ops/common.h"
#include "kernels/cpu/shape.h"

namespace pillars::ops {

namespace {

// ---- reshape ------------------------------------------------------------------------------------

std::vector<OutputSpec> infer_reshape(const Graph& g, const Node& n) {
  return {{params_of<ReshapeParams>(n).shape, g.dtype(n.inputs[0])}};
}
std::string print_reshape(const Node& n) { return str_cat(" shape=", shape_str(params_of<ReshapeParams>(n).shape)); }
std::vector<ValueId> reshape_vjp(Graph& g, const Node& n, const std::vector<ValueId>& go, const std::vector<bool>&) {
  return {reshape(g, go[0], g.shape(n.inputs[0]))};
}
const OpDef kReshape{
    .name = "reshape", .infer = infer_reshape, .vjp = reshape_vjp, .print = print_reshape, .is_view = true};

// ---- permute ------------------------------------------------------------------------------------

std::vector<OutputSpec> infer_permute(const Graph& g, const Node& n) {
  const Shape& s = g.shape(n.inputs[0]);
  const auto& order = params_of<PermuteParams>(n).order;
  PILLARS_CHECK(order.size() == s.size(), "permute: order has ", order.size(), " axes, input ", shape_str(s));
  std::vector<bool> seen(s.size(), false);
  Shape out;
  for (int64_t a : order) {
    PILLARS_CHECK(a >= 0 && a < static_cast<int64_t>(s.size()) && !seen[static_cast<size_t>(a)], "permute: bad order");
    seen[static_cast<size_t>(a)] = true;
    out.push_back(s[static_cast<size_t>(a)]);
  }
  return {{out, g.dtype(n.inputs[0])}};
}

void permute_cpu(const KernelContext& c) {
  cpu::permute({.x_dims = c.in[0].shape(),
                .y_dims = c.out[0].shape(),
                .order = params_of<PermuteParams>(c.node).order,
                .elem_size = dtype_size(c.in[0].dtype())},
               c.in[0].raw(), c.out[0].raw());
}
std::vector<ValueId> permute_vjp(Graph& g, const Node& n, const std::vector<ValueId>& go, const std::vector<bool>&) {
  const std::vector<int64_t>& order = params_of<PermuteParams>(n).order;
  std::vector<int64_t> inverse(order.size());
  for (size_t i = 0; i < inverse.size(); ++i) inverse[static_cast<size_t>(order[i])] = static_cast<int64_t>(i);
  return {permute(g, go[0], inverse)};
}
std::string print_permute(const Node& n) {
  std::string out = " order=[";
  const std::vector<int64_t>& order = params_of<PermuteParams>(n).order;
  for (size_t i = 0; i < order.size(); ++i) out += str_cat(i ? "," : "", order[i]);
  return out + "]";
}
const OpDef kPermute{.name = "permute",
                     .infer = infer_permute,
                     .cpu = permute_cpu,
                     .cuda = PILLARS_CUDA_KERNEL(permute),
                     .vjp = permute_vjp,
                     .print = print_permute};

// ---- slice / pad_slice / concat: all copy blocks of (outer, extent·inner) ----------------------

std::vector<OutputSpec> infer_slice(const Graph& g, const Node& n) {
  Shape s = g.shape(n.inputs[0]);
  const SliceParams& p = params_of<SliceParams>(n);
  const int64_t axis = p.axis, begin = p.begin, end = p.end;
  PILLARS_CHECK(0 <= begin && begin <= end && end <= s[static_cast<size_t>(axis)], "slice: [", begin, ", ", end,
                ") out of range for axis ", axis, " of ", shape_str(s));
  s[static_cast<size_t>(axis)] = end - begin;
  return {{s, g.dtype(n.inputs[0])}};
}
std::vector<OutputSpec> infer_pad_slice(const Graph& g, const Node& n) {
  Shape s = g.shape(n.inputs[0]);
  const PadSliceParams& p = params_of<PadSliceParams>(n);
  const int64_t axis = p.axis, begin = p.begin, full = p.full;
  PILLARS_CHECK(begin >= 0 && begin + s[static_cast<size_t>(axis)] <= full, "pad_slice: does not fit");
  s[static_cast<size_t>(axis)] = full;
  return {{s, g.dtype(n.inputs[0])}};
}

void slice_cpu(const KernelContext& c) {
  const SliceParams& p = params_of<SliceParams>(c.node);
  const auto sp = detail::split_at(c.in[0].shape(), p.axis);
  cpu::slice({.outer = sp.outer,
              .n = sp.n,
              .inner = sp.inner,
              .begin = p.begin,
              .len = p.end - p.begin,
              .elem_size = dtype_size(c.in[0].dtype())},
             c.in[0].raw(), c.out[0].raw());
}
void pad_slice_cpu(const KernelContext& c) {
  const PadSliceParams& p = params_of<PadSliceParams>(c.node);
  const auto sp = detail::split_at(c.in[0].shape(), p.axis);
  cpu::pad_slice({.outer = sp.outer,
                  .n = sp.n,
                  .inner = sp.inner,
                  .begin = p.begin,
                  .full = p.full,
                  .elem_size = dtype_size(c.in[0].dtype())},
                 c.in[0].raw(), c.out[0].raw());
}
std::vector<ValueId> slice_vjp(Graph& g, const Node& n, const std::vector<ValueId>& go, const std::vector<bool>&) {
  const SliceParams& p = params_of<SliceParams>(n);
  return {pad_slice(g, go[0], p.axis, p.begin, g.shape(n.inputs[0])[static_cast<size_t>(p.axis)])};
}
std::vector<ValueId> pad_slice_vjp(Graph& g, const Node& n, const std::vector<ValueId>& go, const std::vector<bool>&) {
  const PadSliceParams& p = params_of<PadSliceParams>(n);
  return {slice(g, go[0], p.axis, p.begin, p.begin + g.shape(n.inputs[0])[static_cast<size_t>(p.axis)])};
}
std::string print_slice(const Node& n) {
  const SliceParams& p = params_of<SliceParams>(n);
  return str_cat(" axis=", p.axis, " begin=", p.begin, " end=", p.end);
}
std::string print_pad_slice(const Node& n) {
  const PadSliceParams& p = params_of<PadSliceParams>(n);
  return str_cat(" axis=", p.axis, " begin=", p.begin, " full=", p.full);
}
const OpDef kSlice{.name = "slice",
                   .infer = infer_slice,
                   .cpu = slice_cpu,
                   .cuda = PILLARS_CUDA_KERNEL(slice),
                   .vjp = slice_vjp,
                   .print = print_slice};
const OpDef kPadSlice{.name = "pad_slice",
                      .infer = infer_pad_slice,
                      .cpu = pad_slice_cpu,
                      .cuda = PILLARS_CUDA_KERNEL(pad_slice),
                      .vjp = pad_slice_vjp,
                      .print = print_pad_slice};

std::vector<OutputSpec> infer_concat(const Graph& g, const Node& n) {
  PILLARS_CHECK(!n.inputs.empty(), "concat: no inputs");
  Shape s = g.shape(n.inputs[0]);
  const size_t axis = static_cast<size_t>(params_of<ConcatParams>(n).axis);
  int64_t total = 0;
  for (ValueId v : n.inputs) {
    Shape t = g.shape(v);
    PILLARS_CHECK(t.size() == s.size() && g.dtype(v) == g.dtype(n.inputs[0]), "concat: rank/dtype mismatch");
    total += t[axis];
    t[axis] = s[axis];
    PILLARS_CHECK(t == s, "concat: shapes ", shape_str(g.shape(n.inputs[0])), " and ", shape_str(g.shape(v)),
                  " differ outside axis ", axis);
  }
  s[axis] = total;
  return {{s, g.dtype(n.inputs[0])}};
}
void concat_cpu(const KernelContext& c) {
  const int64_t axis = params_of<ConcatParams>(c.node).axis;
  const auto sp = detail::split_at(c.out[0].shape(), axis);
  int64_t at = 0;
  for (const Tensor& x : c.in) {
    const int64_t xn = x.dim(static_cast<int>(axis));
    cpu::concat_part(
        {.outer = sp.outer, .x_n = xn, .y_n = sp.n, .at = at, .inner = sp.inner, .elem_size = dtype_size(x.dtype())},
        x.raw(), c.out[0].raw());
    at += xn;
  }
}
std::vector<ValueId> concat_vjp(Graph& g, const Node& n, const std::vector<ValueId>& go,
                                const std::vector<bool>& needs) {
  const int64_t axis = params_of<ConcatParams>(n).axis;
  std::vector<ValueId> out;
  int64_t at = 0;
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    const int64_t len = g.shape(n.inputs[k])[static_cast<size_t>(axis)];
    out.push_back(needs[k] ? slice(g, go[0], axis, at, at + len) : kNoValue);
    at += len;
  }
  return out;
}
std::string print_concat(const Node& n) { return str_cat(" axis=", params_of<ConcatParams>(n).axis); }
const OpDef kConcat{.name = "concat",
                    .infer = infer_concat,
                    .cpu = concat_cpu,
                    .cuda = PILLARS_CUDA_KERNEL(concat),
                    .vjp = concat_vjp,
                    .print = print_concat};

} // namespace

ValueId reshape(Graph& g, ValueId x, const Shape& shape) {
  const Shape s = resolve_reshape(g.shape(x), shape);
  if (s == g.shape(x)) return x;
  return g.add1(kReshape, {x}, ReshapeParams{.shape = s});
}

ValueId permute(Graph& g, ValueId x, const std::vector<int64_t>& order) {
  bool identity = true;
  for (size_t i = 0; i < order.size(); ++i) identity = identity && order[i] == static_cast<int64_t>(i);
  if (identity && order.size() == g.shape(x).size()) return x;
  return g.add1(kPermute, {x}, PermuteParams{.order = order});
}

ValueId transpose(Graph& g, ValueId x, int64_t axis0, int64_t axis1) {
  const size_t r = g.shape(x).size();
  std::vector<int64_t> order(r);
  std::iota(order.begin(), order.end(), 0);
  std::swap(order[static_cast<size_t>(detail::normalize_axis("transpose", axis0, r))],
            order[static_cast<size_t>(detail::normalize_axis("transpose", axis1, r))]);
  return permute(g, x, order);
}

ValueId slice(Graph& g, ValueId x, int64_t axis, int64_t begin, int64_t end) {
  return g.add1(
      kSlice, {x},
      SliceParams{.axis = detail::normalize_axis("slice", axis, g.shape(x).size()), .begin = begin, .end = end});
}

ValueId pad_slice(Graph& g, ValueId x, int64_t axis, int64_t begin, int64_t full) {
  return g.add1(
      kPadSlice, {x},
      PadSliceParams{
          .axis = detail::normalize_axis("pad_slice", axis, g.shape(x).size()), .begin = begin, .full = full});
}

ValueId concat(Graph& g, const std::vector<ValueId>& xs, int64_t axis) {
  PILLARS_CHECK(!xs.empty(), "concat: no inputs");
  return g.add1(kConcat, xs, ConcatParams{.axis = detail::normalize_axis("concat", axis, g.shape(xs[0]).size())});
}

} // namespace pillars::ops
