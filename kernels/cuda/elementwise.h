// Elementwise kernels on the GPU: the plain-pointer API under the elementwise ops (their adapters
// are engine/ops/cuda/elementwise.cu; the algorithm is in elementwise.cu). Every pointer is a
// contiguous, row-major f32 device array; shapes are spans of extents, outermost axis first
// (numpy broadcasting, aligned at the right):
//
//   binary_broadcast     a (a_dims), b (b_dims) → out (out_dims), out_dims = broadcast(a_dims, b_dims)
//   unary_map            x (n) → y (n)
//   activation_backward  dy (n), x (n) → dx (n)   kind relu (x is ReLU's output), else gelu (x its input)
//   fill                 y (n)
//   sum_to               x (x_dims) → y (y_dims), y_dims broadcasts to x_dims
//   broadcast_to         x (x_dims) → y (y_dims), x_dims broadcasts to y_dims
//   f32_to_bf16          x (n) f32 → y (n) bf16 (the bits, as uint16_t), nearest, ties to even
//   bf16_to_f32          x (n) bf16 → y (n) f32, exact
//
// The general broadcast paths take ranks ≤ 8 (more throws). All but broadcast_to and sum_to may
// run in place (out may be a, y may be x): element i is read before element i is written.
// `name` names the op in errors. Launched on cuda::stream(). Plain C++: callable from host code
// compiled without nvcc.
#pragma once
#include <cstdint>
#include <span>

#include "kernels/args/cast.h"
#include "kernels/args/elementwise.h"

namespace pillars::cuda {

// The kinds (the CPU's BinaryKind and UnaryKind), LeakyReluArgs, SumToArgs and CastArgs are
// kernels/args/elementwise.h's and kernels/args/cast.h's, shared with the CPU. BinaryArgs,
// UnaryArgs and ActivationBackwardArgs are the GPU's own: they add the op's `name`, for errors.
using Binary = kernels::BinaryKind;
using Unary = kernels::UnaryKind;
using kernels::CastArgs;
using kernels::LeakyReluArgs;
using kernels::SumToArgs;

// out (out_dims) = a (a_dims) ∘ b (b_dims).
struct BinaryArgs {
  Binary kind = Binary::add;
  std::span<const int64_t> a_dims, b_dims, out_dims;
  const char* name = "binary"; // the op, in errors
};
void binary_broadcast(const BinaryArgs& args, const float* a, const float* b, float* out);
// y (n) = s·x | x + c | eˣ | ln x | √x | tanh x | max(x, 0) | x Φ(x)   (s: scale, c: add_scalar;
// the other kinds ignore them)
struct UnaryArgs {
  Unary kind = Unary::scale;
  int64_t n = 0;
  float s = 1.0f, c = 0.0f;
  const char* name = "unary"; // the op, in errors
};
void unary_map(const UnaryArgs& a, const float* x, float* y);
// dx (n) = dy·[x > 0] (relu) | dy·(Φ(x) + x φ(x)) (gelu)
struct ActivationBackwardArgs {
  Unary kind = Unary::relu;
  int64_t n = 0;
  const char* name = "activation_backward"; // the op, in errors
};
void activation_backward(const ActivationBackwardArgs& a, const float* dy, const float* x, float* dx);
// leaky ReLU: y = x for x > 0, slope·x otherwise; dx = dy for x > 0, slope·dy otherwise (x the
// op's input). x, y, dy, dx: (n). The same functions as kernels/cpu/elementwise.h.
void leaky_relu(const LeakyReluArgs& a, const float* x, float* y);
void leaky_relu_backward(const LeakyReluArgs& a, const float* dy, const float* x, float* dx);
// y (n) = value
struct FillArgs {
  int64_t n = 0;
  float value = 0.0f;
};
void fill(const FillArgs& a, float* y);
// y (y_dims) = x (x_dims) summed over the axes where y_dims broadcasts (deterministic).
void sum_to(const SumToArgs& a, const float* x, float* y);
// y (y_dims) = x (x_dims) broadcast to y_dims.
struct BroadcastToArgs {
  std::span<const int64_t> x_dims, y_dims; // x_dims broadcasts to y_dims
};
void broadcast_to(const BroadcastToArgs& a, const float* x, float* y);
// The casts (engine/ops/cast.h), bit for bit as the CPU's (kernels/cpu/cast.h) except a NaN's
// payload (both stay NaN): x (n) → y (n).
void f32_to_bf16(const CastArgs& a, const float* x, uint16_t* y);
void bf16_to_f32(const CastArgs& a, const uint16_t* x, float* y);

} // namespace pillars::cuda
