// Elementwise CPU kernels: broadcast binary ops, unary maps, activation gradients, sum_to.
// Loops are written to vectorise (the hot ones are compiled for AVX-512 / AVX2 / baseline and
// picked at load time by GCC's target_clones) and spread over OpenMP threads when large.
#pragma once
#include <cstdint>

#include "engine/tensor.h"

namespace pillars::cpu {

enum class BinaryKind { add, sub, mul, div };
enum class UnaryKind { scale, add_scalar, exp, log, sqrt, tanh, relu, gelu };

// out = a ∘ b with numpy broadcasting; shapes as given, out_shape = broadcast(a_shape, b_shape).
void binary_broadcast(BinaryKind kind, const float* a, const Shape& a_shape, const float* b, const Shape& b_shape,
                      float* out, const Shape& out_shape);
// out = f(x); `s` is the scale of UnaryKind::scale, `c` the constant of add_scalar.
void unary(UnaryKind kind, const float* x, float* out, int64_t n, float s, float c);
// dx = dy · f'(x) for relu and gelu.
void activation_backward(UnaryKind kind, const float* dy, const float* x, float* dx, int64_t n);
// The epilogue of a linear layer, over a row-major (rows, n) matrix z and a bias (n):
//   z[r, j] += bias[j];  y[r, j] = f(z[r, j])      f = relu or gelu (exact, as `unary`)
// y may be z itself (then only the activation's output remains). Each element is read and written
// once, with the arithmetic of binary_broadcast(add) followed by unary(f): results are identical.
void bias_activation(UnaryKind kind, float* z, const float* bias, float* y, int64_t rows, int64_t n);
// out = x summed over the axes where out_shape broadcasts to x_shape.
void sum_to(const float* x, const Shape& x_shape, float* out, const Shape& out_shape);

} // namespace pillars::cpu
