// Row softmax through cuDNN's legacy API (cudnnSoftmaxForward / cudnnSoftmaxBackward,
// CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_INSTANCE): the reference our softmax kernels
// (softmax.h) are tested and benchmarked against.
//
//   x, y, dy, dx: device pointers to (rows, cols) row-major floats, seen by cuDNN as an NCHW
//   tensor (rows, cols, 1, 1), each row normalized on its own:
//     forward   y = exp(x − max x) / Σ exp(x − max x)
//     backward  dx = y ∘ (dy − Σ dy ∘ y)      (from the forward's output y)
//
// Queued on cuda::stream(). Plain C++. Without cuDNN in the build (kernels/cuda/cudnn_none.cpp)
// these throw "this build of pillars has no cuDNN"; check cudnn_available() (cudnn_attention.h).
#pragma once
#include <cstdint>

namespace pillars::cuda {

// The rows of softmax.h's SoftmaxArgs with inner = 1 and log = false, the only view these take.
struct CudnnSoftmaxArgs {
  int64_t rows = 0, cols = 0; // x, y, dy, dx: (rows, cols), each row normalized on its own
};
// x (rows, cols) → y (rows, cols).
void cudnn_softmax_forward(const CudnnSoftmaxArgs& a, const float* x, float* y);
// y, dy (rows, cols) → dx (rows, cols); y is the forward's output.
void cudnn_softmax_backward(const CudnnSoftmaxArgs& a, const float* y, const float* dy, float* dx);

} // namespace pillars::cuda
