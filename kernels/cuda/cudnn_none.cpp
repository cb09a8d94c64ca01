// The cuDNN reference backend's entry points in a build without cuDNN (configured with
// PILLARS_NO_CUDNN, or cudnn.h / libcudnn not found, or no CUDA at all): cudnn_available() is
// false, and asking for the backend throws a clear error. (With cuDNN, kernels/cuda/cudnn_*.cu
// define these instead and this file compiles to nothing.)
#ifndef PILLARS_HAVE_CUDNN
#include "base/error.h"
#include "kernels/cuda/cudnn_attention.h"
#include "kernels/cuda/cudnn_softmax.h"

namespace pillars::cuda {

namespace {
#ifdef PILLARS_HAVE_CUDA
constexpr const char* kReason =
    "this build of pillars has no cuDNN (configured with -DPILLARS_NO_CUDNN=ON, or cudnn.h / libcudnn were not found)";
#else
constexpr const char* kReason = "this build of pillars has no CUDA support, so no cuDNN";
#endif
[[noreturn]] void no_cudnn(const char* who) {
  throw Error(
      str_cat(who, ": ", kReason, "; train.attention_backend \"cudnn\" is unavailable, use \"pillars\" or \"naive\""));
}
} // namespace

bool cudnn_available() { return false; }
std::string cudnn_unavailable_reason() { return kReason; }
std::string cudnn_version_string() { return ""; }

void cudnn_attention_check(const CudnnAttentionArgs&) { no_cudnn("attention (cuDNN)"); }
size_t cudnn_attention_forward_workspace(const CudnnAttentionArgs&) { no_cudnn("attention (cuDNN)"); }
size_t cudnn_attention_backward_workspace(const CudnnAttentionArgs&) { no_cudnn("attention_backward (cuDNN)"); }
void cudnn_attention_forward(const CudnnAttentionArgs&, const void*, const void*, const void*, void*, float*, void*) {
  no_cudnn("attention (cuDNN)");
}
void cudnn_attention_backward(const CudnnAttentionArgs&, const void*, const void*, const void*, const void*,
                              const float*, const void*, void*, void*, void*, void*) {
  no_cudnn("attention_backward (cuDNN)");
}
void cudnn_softmax_forward(const CudnnSoftmaxArgs&, const float*, float*) { no_cudnn("softmax (cuDNN)"); }
void cudnn_softmax_backward(const CudnnSoftmaxArgs&, const float*, const float*, float*) {
  no_cudnn("softmax_backward (cuDNN)");
}

} // namespace pillars::cuda
#endif
