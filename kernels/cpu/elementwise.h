// Elementwise CPU kernels: broadcast binary ops, unary maps, activation gradients, sum_to.
// Loops are written to vectorise (the hot ones are compiled for AVX-512 / AVX2 / baseline and
// picked at load time by GCC's target_clones) and spread over OpenMP threads when large.
// Shapes are spans of extents, outermost axis first (kernels/dims.h; an engine Shape converts).
#pragma once
#include <cstdint>
#include <span>

namespace pillars::cpu {

enum class BinaryKind { add, sub, mul, div };
enum class UnaryKind { scale, add_scalar, exp, log, sqrt, tanh, relu, gelu };

// out = a ∘ b with numpy broadcasting; shapes as given, out_shape = broadcast(a_shape, b_shape).
void binary_broadcast(BinaryKind kind, const float* a, std::span<const int64_t> a_shape, const float* b,
                      std::span<const int64_t> b_shape, float* out, std::span<const int64_t> out_shape);
// out = f(x); `s` is the scale of UnaryKind::scale, `c` the constant of add_scalar.
void unary(UnaryKind kind, const float* x, float* out, int64_t n, float s, float c);
// dx = dy · f'(x) for relu and gelu.
void activation_backward(UnaryKind kind, const float* dy, const float* x, float* dx, int64_t n);
// The epilogue of a linear layer, over a row-major (rows, n) matrix z and a bias (n):
//   z[r, j] += bias[j];  y[r, j] = f(z[r, j])      f = relu or gelu (exact, as `unary`)
// y may be z itself (then only the activation's output remains). Each element is read and written
// once, with the arithmetic of binary_broadcast(add) followed by unary(f): results are identical.
void bias_activation(UnaryKind kind, float* z, const float* bias, float* y, int64_t rows, int64_t n);
// leaky ReLU: y = x for x > 0, slope·x otherwise; its gradient dx = dy for x > 0, slope·dy
// otherwise (x is the op's input). y may be x, dx may be dy.
void leaky_relu(const float* x, float* y, int64_t n, float slope);
void leaky_relu_backward(const float* dy, const float* x, float* dx, int64_t n, float slope);
// out = x summed over the axes where out_shape broadcasts to x_shape.
void sum_to(const float* x, std::span<const int64_t> x_shape, float* out, std::span<const int64_t> out_shape);

} // namespace pillars::cpu
