// The CUDA slots of the elementwise ops (engine/ops/elementwise.cpp): each unpacks its node —
// input and output tensors, shapes, scale's factor / add_scalar's and fill's value (their params
// structs, engine/ops/elementwise.h) — and calls the pointer-and-size
// kernels of kernels/cuda/elementwise.h, which hold the algorithm.
#include "engine/ops/cuda/ops.h"
#include "engine/ops/elementwise.h"
#include "kernels/cuda/elementwise.h"

namespace pillars::cuda {
namespace {

template <Binary K>
void binary(const KernelContext& c) {
  const Tensor &A = c.in[0], &B = c.in[1];
  Tensor& out = c.out[0];
  binary_broadcast(
      {.kind = K, .a_dims = A.shape(), .b_dims = B.shape(), .out_dims = out.shape(), .name = c.node.op->name},
      A.data<float>(), B.data<float>(), out.data<float>());
}

// The kernel's (s, c): scale's factor, add_scalar's constant; the neutral 1, 0 for the other kinds.
template <Unary K>
void unary(const KernelContext& c) {
  float s = 1.0f, k = 0.0f;
  if constexpr (K == Unary::scale) s = params_of<ops::ScaleParams>(c.node).factor;
  if constexpr (K == Unary::add_scalar) k = params_of<ops::AddScalarParams>(c.node).value;
  unary_map({.kind = K, .n = c.out[0].numel(), .s = s, .c = k, .name = c.node.op->name}, c.in[0].data<float>(),
            c.out[0].data<float>());
}

// inputs: dy, then ReLU's output (relu) or the input x (gelu)
template <Unary K>
void backward(const KernelContext& c) {
  activation_backward({.kind = K, .n = c.out[0].numel(), .name = c.node.op->name}, c.in[0].data<float>(),
                      c.in[1].data<float>(), c.out[0].data<float>());
}

} // namespace

void op_add(const KernelContext& c) { binary<Binary::add>(c); }
void op_sub(const KernelContext& c) { binary<Binary::sub>(c); }
void op_mul(const KernelContext& c) { binary<Binary::mul>(c); }
void op_div(const KernelContext& c) { binary<Binary::div>(c); }
void op_scale(const KernelContext& c) { unary<Unary::scale>(c); }
void op_add_scalar(const KernelContext& c) { unary<Unary::add_scalar>(c); }
void op_exp(const KernelContext& c) { unary<Unary::exp>(c); }
void op_log(const KernelContext& c) { unary<Unary::log>(c); }
void op_sqrt(const KernelContext& c) { unary<Unary::sqrt>(c); }
void op_tanh(const KernelContext& c) { unary<Unary::tanh>(c); }
void op_relu(const KernelContext& c) { unary<Unary::relu>(c); }
void op_gelu(const KernelContext& c) { unary<Unary::gelu>(c); }
void op_relu_backward(const KernelContext& c) { backward<Unary::relu>(c); }
void op_gelu_backward(const KernelContext& c) { backward<Unary::gelu>(c); }

// inputs: x; LeakyReluParams slope
void op_leaky_relu(const KernelContext& c) {
  const ops::LeakyReluParams& p = params_of<ops::LeakyReluParams>(c.node);
  leaky_relu({.n = c.out[0].numel(), .slope = p.slope}, c.in[0].data<float>(), c.out[0].data<float>());
}

// inputs: dy, x (the forward's input); LeakyReluParams slope
void op_leaky_relu_backward(const KernelContext& c) {
  const ops::LeakyReluParams& p = params_of<ops::LeakyReluParams>(c.node);
  leaky_relu_backward({.n = c.out[0].numel(), .slope = p.slope}, c.in[0].data<float>(), c.in[1].data<float>(),
                      c.out[0].data<float>());
}

void op_fill(const KernelContext& c) {
  fill({.n = c.out[0].numel(), .value = params_of<ops::FillParams>(c.node).value}, c.out[0].data<float>());
}

void op_sum_to(const KernelContext& c) {
  sum_to({.x_dims = c.in[0].shape(), .y_dims = c.out[0].shape()}, c.in[0].data<float>(), c.out[0].data<float>());
}

void op_broadcast_to(const KernelContext& c) {
  broadcast_to({.x_dims = c.in[0].shape(), .y_dims = c.out[0].shape()}, c.in[0].data<float>(), c.out[0].data<float>());
}

} // namespace pillars::cuda
