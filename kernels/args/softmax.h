// The argument struct of the softmax kernels, declared once for both devices: kernels/cpu/softmax.h
// and kernels/cuda/softmax.h bring it into cpu:: and cuda:: (the functions and their arrays are
// documented there). Device-neutral: standard headers only.
#pragma once
#include <cstdint>

namespace pillars::kernels {

struct SoftmaxArgs {
  int64_t outer = 1, len = 1, inner = 1; // the (outer, len, inner) view around the axis
  bool log = false;                      // log-softmax
};

} // namespace pillars::kernels
