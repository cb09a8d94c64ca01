// Elementwise ops and their gradients.
//
// Binary ops broadcast: output shape = broadcast(a, b) (align at the right; extents must be equal
// or 1). For y = a ∘ b with broadcasting, dL/da = sum_to(dL/dy · ∂y/∂a, shape(a)).
//
//   add  y = a + b      da = g           db = g
//   sub  y = a − b      da = g           db = −g
//   mul  y = a · b      da = g · b       db = g · a
//   div  y = a / b      da = g / b       db = −g · y / b
//   exp  y = eˣ         dx = g · y
//   log  y = ln x       dx = g / x
//   sqrt y = √x         dx = g / (2y)
//   tanh                dx = g · (1 − y²)
//   relu y = max(x, 0)  dx = g · [y > 0]   (= [x > 0]; the output is what the backward keeps)
//   gelu y = x Φ(x)     dx = g · (Φ(x) + x φ(x))
//   leaky_relu  y = x (x > 0), slope·x (else)   dx = g (x > 0), slope·g (else)   (the smallest op
//               made by docs/ARCHITECTURE.md's "Adding an op" recipe: every slot written out)
#include "engine/ops/elementwise.h"

#include <cmath>

#include "engine/ops/common.h"
#include "kernels/cpu/elementwise.h"

namespace pillars::ops {

using detail::kParallelGrain;

namespace {

Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b) {
  const size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t ea = i < r - a.size() ? 1 : a[i - (r - a.size())];
    const int64_t eb = i < r - b.size() ? 1 : b[i - (r - b.size())];
    PILLARS_CHECK(ea == eb || ea == 1 || eb == 1, op, ": shapes ", shape_str(a), " and ", shape_str(b),
                  " do not broadcast");
    out[i] = ea == 1 ? eb : ea;
  }
  return out;
}

// ---- binary -----------------------------------------------------------------------------------

std::vector<OutputSpec> infer_binary(const Graph& g, const Node& n) {
  detail::expect_f32(n.op->name, g, n.inputs[0]);
  detail::expect_f32(n.op->name, g, n.inputs[1]);
  return {{broadcast_shapes(n.op->name, g.shape(n.inputs[0]), g.shape(n.inputs[1])), DType::f32}};
}

template <cpu::BinaryKind K>
void binary_cpu(const KernelContext& c) {
  cpu::binary_broadcast({.kind = K, .a_dims = c.in[0].shape(), .b_dims = c.in[1].shape(), .out_dims = c.out[0].shape()},
                        c.in[0].data<float>(), c.in[1].data<float>(), c.out[0].data<float>());
}

std::vector<ValueId> add_vjp(Graph& g, const Node& n, const std::vector<ValueId>& go, const std::vector<bool>& needs) {
  const ValueId gy = go[0];
  return {needs[0] ? sum_to(g, gy, g.shape(n.inputs[0])) : kNoValue,
          needs[1] ? sum_to(g, gy, g.shape(n.inputs[1])) : kNoValue};
}
std::vector<ValueId> sub_vjp(Graph& g, const Node& n, const std::vector<ValueId>& go, const std::vector<bool>& needs) {
  const ValueId gy = go[0];
  return {needs[0] ? sum_to(g, gy, g.shape(n.inputs[0])) : kNoValue,
          needs[1] ? sum_to(g, neg(g, gy), g.shape(n.inputs[1])) : kNoValue};
}
std::vector<ValueId> mul_vjp(Graph& g, const Node& n, const std::vector<ValueId>& go, const std::vector<bool>& needs) {
  const ValueId gy = go[0], a = n.inputs[0], b = n.inputs[1];
  return {needs[0] ? sum_to(g, mul(g, gy, b), g.shape(a)) : kNoValue,
          needs[1] ? sum_to(g, mul(g, gy, a), g.shape(b)) : kNoValue};
}
std::vector<ValueId> div_vjp(Graph& g, const Node& n, const std::vector<ValueId>& go, const std::vector<bool>& needs) {
  const ValueId gy = go[0], a = n.inputs[0], b = n.inputs[1], y = n.outputs[0];
  return {needs[0] ? sum_to(g, div(g, gy, b), g.shape(a)) : kNoValue,
          needs[1] ? sum_to(g, neg(g, div(g, mul(g, gy, y), b)), g.shape(b)) : kNoValue};
}

const OpDef kSub{.name = "sub",
                 .infer = infer_binary,
                 .cpu = binary_cpu<cpu::BinaryKind::sub>,
                 .cuda = PILLARS_CUDA_KERNEL(sub),
                 .vjp = sub_vjp,
                 .inplace = true};
const OpDef kMul{.name = "mul",
                 .infer = infer_binary,
                 .cpu = binary_cpu<cpu::BinaryKind::mul>,
                 .cuda = PILLARS_CUDA_KERNEL(mul),
                 .vjp = mul_vjp,
                 .inplace = true};
const OpDef kDiv{.name = "div",
                 .infer = infer_binary,
                 .cpu = binary_cpu<cpu::BinaryKind::div>,
                 .cuda = PILLARS_CUDA_KERNEL(div),
                 .vjp = div_vjp,
                 .inplace = true};

// ---- unary --------------------------------------------------------------------------------------

std::vector<OutputSpec> infer_unary(const Graph& g, const Node& n) {
  detail::expect_f32(n.op->name, g, n.inputs[0]);
  return {{g.shape(n.inputs[0]), DType::f32}};
}

// The unary kernel's arguments for n elements: s is scale's factor, c add_scalar's constant; the
// other kinds ignore them (and get the neutral 1, 0).
template <cpu::UnaryKind K>
cpu::UnaryArgs unary_args(const Node& node, int64_t n) {
  if constexpr (K == cpu::UnaryKind::scale)
    return {.kind = K, .n = n, .s = params_of<ScaleParams>(node).factor};
  else if constexpr (K == cpu::UnaryKind::add_scalar)
    return {.kind = K, .n = n, .c = params_of<AddScalarParams>(node).value};
  else
    return {.kind = K, .n = n};
}

template <cpu::UnaryKind K>
void unary_cpu(const KernelContext& c) {
  cpu::unary(unary_args<K>(c.node, c.out[0].numel()), c.in[0].data<float>(), c.out[0].data<float>());
}

std::string print_scale(const Node& n) { return str_cat(" factor=", params_of<ScaleParams>(n).factor); }
std::string print_add_scalar(const Node& n) { return str_cat(" value=", params_of<AddScalarParams>(n).value); }

std::vector<ValueId> scale_vjp(Graph& g, const Node& n, const std::vector<ValueId>& go, const std::vector<bool>&) {
  return {scale(g, go[0], params_of<ScaleParams>(n).factor)};
}
std::vector<ValueId> add_scalar_vjp(Graph&, const Node&, const std::vector<ValueId>& go, const std::vector<bool>&) {
  return {go[0]};
}
std::vector<ValueId> exp_vjp(Graph& g, const Node& n, const std::vector<ValueId>& go, const std::vector<bool>&) {
  return {mul(g, go[0], n.outputs[0])};
}
std::vector<ValueId> log_vjp(Graph& g, const Node& n, const std::vector<ValueId>& go, const std::vector<bool>&) {
  return {div(g, go[0], n.inputs[0])};
}
std::vector<ValueId> sqrt_vjp(Graph& g, const Node& n, const std::vector<ValueId>& go, const std::vector<bool>&) {
  return {div(g, scale(g, go[0], 0.5f), n.outputs[0])};
}
std::vector<ValueId> tanh_vjp(Graph& g, const Node& n, const std::vector<ValueId>& go, const std::vector<bool>&) {
  const ValueId y = n.outputs[0];
  return {mul(g, go[0], add_scalar(g, neg(g, mul(g, y, y)), 1.0f))};
}
// relu'(x) = [x > 0] = [y > 0]: reading the output lets the input die at the relu (it is usually
// the bias-add before it), which saves one activation per FFN layer for the backward.
std::vector<ValueId> relu_vjp(Graph& g, const Node& n, const std::vector<ValueId>& go, const std::vector<bool>&) {
  return {relu_backward(g, go[0], n.outputs[0])};
}
std::vector<ValueId> gelu_vjp(Graph& g, const Node& n, const std::vector<ValueId>& go, const std::vector<bool>&) {
  return {gelu_backward(g, go[0], n.inputs[0])};
}

const OpDef kScale{.name = "scale",
                   .infer = infer_unary,
                   .cpu = unary_cpu<cpu::UnaryKind::scale>,
                   .cuda = PILLARS_CUDA_KERNEL(scale),
                   .vjp = scale_vjp,
                   .print = print_scale,
                   .inplace = true};
const OpDef kAddScalar{.name = "add_scalar",
                       .infer = infer_unary,
                       .cpu = unary_cpu<cpu::UnaryKind::add_scalar>,
                       .cuda = PILLARS_CUDA_KERNEL(add_scalar),
                       .vjp = add_scalar_vjp,
                       .print = print_add_scalar,
                       .inplace = true};
const OpDef kExp{.name = "exp",
                 .infer = infer_unary,
                 .cpu = unary_cpu<cpu::UnaryKind::exp>,
                 .cuda = PILLARS_CUDA_KERNEL(exp),
                 .vjp = exp_vjp,
                 .inplace = true};
const OpDef kLog{.name = "log",
                 .infer = infer_unary,
                 .cpu = unary_cpu<cpu::UnaryKind::log>,
                 .cuda = PILLARS_CUDA_KERNEL(log),
                 .vjp = log_vjp,
                 .inplace = true};
const OpDef kSqrt{.name = "sqrt",
                  .infer = infer_unary,
                  .cpu = unary_cpu<cpu::UnaryKind::sqrt>,
                  .cuda = PILLARS_CUDA_KERNEL(sqrt),
                  .vjp = sqrt_vjp,
                  .inplace = true};
const OpDef kTanh{.name = "tanh",
                  .infer = infer_unary,
                  .cpu = unary_cpu<cpu::UnaryKind::tanh>,
                  .cuda = PILLARS_CUDA_KERNEL(tanh),
                  .vjp = tanh_vjp,
                  .inplace = true};

// ---- activation backward: (dy, x) → dx ------------------------------------------------------------

std::vector<OutputSpec> infer_same_as_first(const Graph& g, const Node& n) {
  PILLARS_CHECK(g.shape(n.inputs[0]) == g.shape(n.inputs[1]), n.op->name, ": shapes differ");
  return {{g.shape(n.inputs[0]), DType::f32}};
}
template <cpu::UnaryKind K>
void activation_backward_cpu(const KernelContext& c) {
  cpu::activation_backward({.kind = K, .n = c.out[0].numel()}, c.in[0].data<float>(), c.in[1].data<float>(),
                           c.out[0].data<float>());
}
// Second derivatives are not needed by anything in Pillars; these ops have no vjp.
const OpDef kReluBackward{.name = "relu_backward",
                          .infer = infer_same_as_first,
                          .cpu = activation_backward_cpu<cpu::UnaryKind::relu>,
                          .cuda = PILLARS_CUDA_KERNEL(relu_backward),
                          .inplace = true};
const OpDef kGeluBackward{.name = "gelu_backward",
                          .infer = infer_same_as_first,
                          .cpu = activation_backward_cpu<cpu::UnaryKind::gelu>,
                          .cuda = PILLARS_CUDA_KERNEL(gelu_backward),
                          .inplace = true};

// ---- fill, sum_to, broadcast_to -----------------------------------------------------------------

std::vector<OutputSpec> infer_fill(const Graph&, const Node& n) {
  return {{params_of<FillParams>(n).shape, DType::f32}};
}
void fill_cpu(const KernelContext& c) { c.out[0].fill(params_of<FillParams>(c.node).value); }
std::string print_fill(const Node& n) {
  const FillParams& p = params_of<FillParams>(n);
  return str_cat(" shape=", shape_str(p.shape), " value=", p.value);
}
const OpDef kFill{
    .name = "fill", .infer = infer_fill, .cpu = fill_cpu, .cuda = PILLARS_CUDA_KERNEL(fill), .print = print_fill};

std::string print_target_shape(const Node& n) {
  return str_cat(" shape=", shape_str(params_of<TargetShapeParams>(n).shape));
}

bool broadcastable_to(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  for (size_t i = 0; i < from.size(); ++i) {
    const int64_t f = from[from.size() - 1 - i], t = to[to.size() - 1 - i];
    if (f != t && f != 1) return false;
  }
  return true;
}

std::vector<OutputSpec> infer_sum_to(const Graph& g, const Node& n) {
  const Shape& target = params_of<TargetShapeParams>(n).shape;
  PILLARS_CHECK(broadcastable_to(target, g.shape(n.inputs[0])), "sum_to: ", shape_str(target),
                " does not broadcast to ", shape_str(g.shape(n.inputs[0])));
  return {{target, DType::f32}};
}
void sum_to_cpu(const KernelContext& c) {
  cpu::sum_to({.x_dims = c.in[0].shape(), .y_dims = c.out[0].shape()}, c.in[0].data<float>(), c.out[0].data<float>());
}
std::vector<ValueId> sum_to_vjp(Graph& g, const Node& n, const std::vector<ValueId>& go, const std::vector<bool>&) {
  return {broadcast_to(g, go[0], g.shape(n.inputs[0]))};
}
const OpDef kSumTo{.name = "sum_to",
                   .infer = infer_sum_to,
                   .cpu = sum_to_cpu,
                   .cuda = PILLARS_CUDA_KERNEL(sum_to),
                   .vjp = sum_to_vjp,
                   .print = print_target_shape};

std::vector<OutputSpec> infer_broadcast_to(const Graph& g, const Node& n) {
  const Shape& target = params_of<TargetShapeParams>(n).shape;
  PILLARS_CHECK(broadcastable_to(g.shape(n.inputs[0]), target), "broadcast_to: ", shape_str(g.shape(n.inputs[0])),
                " does not broadcast to ", shape_str(target));
  return {{target, DType::f32}};
}
void broadcast_to_cpu(const KernelContext& c) {
  // y = 0 + x, broadcast: reuse the binary kernel with a scalar zero.
  static const float zero = 0.0f;
  cpu::binary_broadcast(
      {.kind = cpu::BinaryKind::add, .a_dims = c.in[0].shape(), .b_dims = {}, .out_dims = c.out[0].shape()},
      c.in[0].data<float>(), &zero, c.out[0].data<float>());
}
std::vector<ValueId> broadcast_to_vjp(Graph& g, const Node& n, const std::vector<ValueId>& go,
                                      const std::vector<bool>&) {
  return {sum_to(g, go[0], g.shape(n.inputs[0]))};
}
const OpDef kBroadcastTo{.name = "broadcast_to",
                         .infer = infer_broadcast_to,
                         .cpu = broadcast_to_cpu,
                         .cuda = PILLARS_CUDA_KERNEL(broadcast_to),
                         .vjp = broadcast_to_vjp,
                         .print = print_target_shape};

// ---- leaky_relu: the "Adding an op" recipe of docs/ARCHITECTURE.md, step by step -------------

// Step 4, the CPU adapters: unpack the node, call the kernel (kernels/cpu/elementwise.h).
void cpu_leaky_relu(const KernelContext& c) {
  const LeakyReluParams& p = params_of<LeakyReluParams>(c.node);
  cpu::leaky_relu({.n = c.out[0].numel(), .slope = p.slope}, c.in[0].data<float>(), c.out[0].data<float>());
}
// inputs: dy, x (the forward's input)
void cpu_leaky_relu_backward(const KernelContext& c) {
  const LeakyReluParams& p = params_of<LeakyReluParams>(c.node);
  cpu::leaky_relu_backward({.n = c.out[0].numel(), .slope = p.slope}, c.in[0].data<float>(), c.in[1].data<float>(),
                           c.out[0].data<float>());
}

// Step 6, the VJP: a backward op (it reads the input x, so the slope may have any sign).
std::vector<ValueId> leaky_relu_vjp(Graph& g, const Node& n, const std::vector<ValueId>& go,
                                    const std::vector<bool>& needs) {
  if (!needs[0] || go[0] == kNoValue) return {kNoValue};
  return {leaky_relu_backward(g, go[0], n.inputs[0], params_of<LeakyReluParams>(n).slope)};
}

// Step 7, the printer (one FLOP per element is the default, so no `flops` slot).
std::string print_leaky_relu(const Node& n) { return str_cat(" slope=", params_of<LeakyReluParams>(n).slope); }

// Step 8, the OpDefs: every slot in one place (step 2's shape rules are the shared infer_unary and
// infer_same_as_first; step 5's CUDA adapters are cuda::op_leaky_relu{,_backward}).
const OpDef kLeakyRelu{.name = "leaky_relu",
                       .infer = infer_unary,
                       .cpu = cpu_leaky_relu,
                       .cuda = PILLARS_CUDA_KERNEL(leaky_relu),
                       .vjp = leaky_relu_vjp,
                       .print = print_leaky_relu,
                       .inplace = true};
const OpDef kLeakyReluBackward{.name = "leaky_relu_backward",
                               .infer = infer_same_as_first,
                               .cpu = cpu_leaky_relu_backward,
                               .cuda = PILLARS_CUDA_KERNEL(leaky_relu_backward),
                               .print = print_leaky_relu,
                               .inplace = true};

} // namespace

// The ops that engine/passes/fuse_linear.cpp matches (declared in the header).
const OpDef kAdd{.name = "add",
                 .infer = infer_binary,
                 .cpu = binary_cpu<cpu::BinaryKind::add>,
                 .cuda = PILLARS_CUDA_KERNEL(add),
                 .vjp = add_vjp,
                 .inplace = true};
const OpDef kRelu{.name = "relu",
                  .infer = infer_unary,
                  .cpu = unary_cpu<cpu::UnaryKind::relu>,
                  .cuda = PILLARS_CUDA_KERNEL(relu),
                  .vjp = relu_vjp,
                  .inplace = true};
const OpDef kGelu{.name = "gelu",
                  .infer = infer_unary,
                  .cpu = unary_cpu<cpu::UnaryKind::gelu>,
                  .cuda = PILLARS_CUDA_KERNEL(gelu),
                  .vjp = gelu_vjp,
                  .inplace = true};

ValueId add(Graph& g, ValueId a, ValueId b) { return g.add1(kAdd, {a, b}); }
ValueId sub(Graph& g, ValueId a, ValueId b) { return g.add1(kSub, {a, b}); }
ValueId mul(Graph& g, ValueId a, ValueId b) { return g.add1(kMul, {a, b}); }
ValueId div(Graph& g, ValueId a, ValueId b) { return g.add1(kDiv, {a, b}); }
ValueId scale(Graph& g, ValueId x, float s) { return g.add1(kScale, {x}, ScaleParams{.factor = s}); }
ValueId add_scalar(Graph& g, ValueId x, float c) { return g.add1(kAddScalar, {x}, AddScalarParams{.value = c}); }
ValueId neg(Graph& g, ValueId x) { return scale(g, x, -1.0f); }
ValueId exp(Graph& g, ValueId x) { return g.add1(kExp, {x}); }
ValueId log(Graph& g, ValueId x) { return g.add1(kLog, {x}); }
ValueId sqrt(Graph& g, ValueId x) { return g.add1(kSqrt, {x}); }
ValueId tanh(Graph& g, ValueId x) { return g.add1(kTanh, {x}); }
ValueId relu(Graph& g, ValueId x) { return g.add1(kRelu, {x}); }
ValueId gelu(Graph& g, ValueId x) { return g.add1(kGelu, {x}); }
ValueId relu_backward(Graph& g, ValueId dy, ValueId x) { return g.add1(kReluBackward, {dy, x}); }
ValueId gelu_backward(Graph& g, ValueId dy, ValueId x) { return g.add1(kGeluBackward, {dy, x}); }
ValueId leaky_relu(Graph& g, ValueId x, float slope) {
  return g.add1(kLeakyRelu, {x}, LeakyReluParams{.slope = slope});
}
ValueId leaky_relu_backward(Graph& g, ValueId dy, ValueId x, float slope) {
  return g.add1(kLeakyReluBackward, {dy, x}, LeakyReluParams{.slope = slope});
}

ValueId fill(Graph& g, const Shape& shape, float value) {
  return g.add1(kFill, {}, FillParams{.shape = shape, .value = value});
}
ValueId sum_to(Graph& g, ValueId x, const Shape& shape) {
  if (g.shape(x) == shape) return x;
  return g.add1(kSumTo, {x}, TargetShapeParams{.shape = shape});
}
ValueId broadcast_to(Graph& g, ValueId x, const Shape& shape) {
  if (g.shape(x) == shape) return x;
  return g.add1(kBroadcastTo, {x}, TargetShapeParams{.shape = shape});
}

} // namespace pillars::ops
