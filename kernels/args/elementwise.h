// The kinds and the argument structs of the elementwise kernels that both devices take alike,
// declared once: kernels/cpu/elementwise.h and kernels/cuda/elementwise.h bring them into cpu:: and
// cuda:: (the functions and their arrays are documented there; the GPU names the kinds cuda::Binary
// and cuda::Unary). BinaryArgs, UnaryArgs and ActivationBackwardArgs stay per device: the GPU's add
// the op's `name`, for the errors the GPU reports (a failed launch, a broadcast rank above 8), which
// the CPU kernels never raise. Device-neutral: standard headers only.
#pragma once
#include <cstdint>
#include <span>

namespace pillars::kernels {

enum class BinaryKind { add, sub, mul, div };
enum class UnaryKind { scale, add_scalar, exp, log, sqrt, tanh, relu, gelu };

// leaky ReLU and its gradient over n elements.
struct LeakyReluArgs {
  int64_t n = 0;
  float slope = 0.0f; // y = slope·x for x ≤ 0
};

// y (y_dims) = x (x_dims) summed over the axes where y_dims broadcasts to x_dims.
struct SumToArgs {
  std::span<const int64_t> x_dims, y_dims;
};

} // namespace pillars::kernels
