// Elementwise CPU kernels: broadcast binary ops, unary maps, activation gradients, sum_to.
// Loops are written to vectorize (the hot ones are compiled for AVX-512 / AVX2 / baseline and
// picked at load time by GCC's target_clones) and spread over OpenMP threads when large.
// Shapes are spans of extents, outermost axis first (kernels/dims.h; an engine Shape converts).
#pragma once
#include <cstdint>
#include <span>

#include "kernels/args/elementwise.h"

namespace pillars::cpu {

// The kinds, LeakyReluArgs and SumToArgs are kernels/args/elementwise.h's, shared with the GPU.
// BinaryArgs, UnaryArgs and ActivationBackwardArgs are the CPU's own: the GPU's add the op's
// `name`, for its errors.
using kernels::BinaryKind;
using kernels::LeakyReluArgs;
using kernels::SumToArgs;
using kernels::UnaryKind;

// out (out_dims) = a (a_dims) ∘ b (b_dims) with numpy broadcasting, out_dims = broadcast(a_dims, b_dims).
struct BinaryArgs {
  BinaryKind kind = BinaryKind::add;
  std::span<const int64_t> a_dims, b_dims, out_dims;
};
void binary_broadcast(const BinaryArgs& args, const float* a, const float* b, float* out);

// y (n) = f(x (n)); `s` is the scale of UnaryKind::scale, `c` the constant of add_scalar (the
// other kinds ignore them).
struct UnaryArgs {
  UnaryKind kind = UnaryKind::scale;
  int64_t n = 0;
  float s = 1.0f, c = 0.0f;
};
void unary(const UnaryArgs& a, const float* x, float* y);

// dx (n) = dy (n) · f'(x (n)) for relu and gelu.
struct ActivationBackwardArgs {
  UnaryKind kind = UnaryKind::relu;
  int64_t n = 0;
};
void activation_backward(const ActivationBackwardArgs& a, const float* dy, const float* x, float* dx);

// The epilogue of a linear layer, over a row-major (rows, n) matrix z and a bias (n):
//   z[r, j] += bias[j];  y[r, j] = f(z[r, j])      f = relu or gelu (exact, as `unary`)
// y (rows, n) may be z itself (then only the activation's output remains). Each element is read
// and written once, with the arithmetic of binary_broadcast(add) followed by unary(f): results are
// identical.
struct BiasActivationArgs {
  UnaryKind kind = UnaryKind::relu;
  int64_t rows = 0, n = 0;
};
void bias_activation(const BiasActivationArgs& a, float* z, const float* bias, float* y);

// leaky ReLU: y = x for x > 0, slope·x otherwise; its gradient dx = dy for x > 0, slope·dy
// otherwise (x is the op's input). x, y, dy, dx: (n); y may be x, dx may be dy.
void leaky_relu(const LeakyReluArgs& a, const float* x, float* y);
void leaky_relu_backward(const LeakyReluArgs& a, const float* dy, const float* x, float* dx);

// y (y_dims) = x (x_dims) summed over the axes where y_dims broadcasts to x_dims.
void sum_to(const SumToArgs& a, const float* x, float* y);

} // namespace pillars::cpu
