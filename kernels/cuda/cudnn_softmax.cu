// Row softmax through cuDNN (cudnn_softmax.h): one NCHW descriptor (rows, cols, 1, 1) per call,
// CUDNN_SOFTMAX_MODE_INSTANCE normalizing over C·H·W = cols for each of the `rows` images.
#include "kernels/cuda/cudnn_softmax.h"

#include <cudnn.h>

#include <limits>

#include "kernels/cuda/cudnn_internal.h"

namespace pillars::cuda {
namespace {

// A (rows, cols, 1, 1) fp32 NCHW tensor descriptor, destroyed on scope exit.
class RowsDescriptor {
 public:
  RowsDescriptor(int64_t rows, int64_t cols) {
    PILLARS_CHECK(
        rows >= 1 && cols >= 1 && rows <= std::numeric_limits<int>::max() && cols <= std::numeric_limits<int>::max(),
        "softmax (cuDNN): ", rows, " x ", cols, " does not fit cuDNN's int dimensions");
    PILLARS_CUDNN_CHECK(cudnnCreateTensorDescriptor(&d_));
    try {
      PILLARS_CUDNN_CHECK(cudnnSetTensor4dDescriptor(d_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, static_cast<int>(rows),
                                                     static_cast<int>(cols), 1, 1));
    } catch (...) {
      cudnnDestroyTensorDescriptor(d_);
      throw;
    }
  }
  ~RowsDescriptor() { cudnnDestroyTensorDescriptor(d_); }
  RowsDescriptor(const RowsDescriptor&) = delete;
  RowsDescriptor& operator=(const RowsDescriptor&) = delete;
  cudnnTensorDescriptor_t get() const { return d_; }

 private:
  cudnnTensorDescriptor_t d_ = nullptr;
};

} // namespace

void cudnn_softmax_forward(const CudnnSoftmaxArgs& a, const float* x, float* y) {
  const int64_t rows = a.rows, cols = a.cols;
  require_cudnn("softmax (cuDNN)");
  if (rows == 0 || cols == 0) return;
  const RowsDescriptor desc(rows, cols);
  const float alpha = 1.0f, beta = 0.0f;
  PILLARS_CUDNN_CHECK(cudnnSoftmaxForward(cudnn_handle(), CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_INSTANCE, &alpha,
                                          desc.get(), x, &beta, desc.get(), y));
}

void cudnn_softmax_backward(const CudnnSoftmaxArgs& a, const float* y, const float* dy, float* dx) {
  const int64_t rows = a.rows, cols = a.cols;
  require_cudnn("softmax_backward (cuDNN)");
  if (rows == 0 || cols == 0) return;
  const RowsDescriptor desc(rows, cols);
  const float alpha = 1.0f, beta = 0.0f;
  PILLARS_CUDNN_CHECK(cudnnSoftmaxBackward(cudnn_handle(), CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_INSTANCE, &alpha,
                                           desc.get(), y, desc.get(), dy, &beta, desc.get(), dx));
}

} // namespace pillars::cuda
