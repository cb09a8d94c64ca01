// Private to the cuDNN files (cudnn_attention.cu, cudnn_softmax.cu): the one cuDNN handle, bound
// to cuda::stream(), and checked calls. Compiled only when the build has cuDNN.
#pragma once
#include <cudnn.h>

#include "base/error.h"

namespace pillars::cuda {

// Throws pillars::Error naming the call, cuDNN's status string and its last detailed message.
void cudnn_check(cudnnStatus_t status, const char* what, const char* file, int line);
#define PILLARS_CUDNN_CHECK(call) ::pillars::cuda::cudnn_check((call), #call, __FILE__, __LINE__)

// Throws the reason when cudnn_available() is false (cudnn_attention.h).
void require_cudnn(const char* who);

// Created on first use (never inside a CUDA graph capture: the executor's first run is outside
// one) and bound to cuda::stream().
cudnnHandle_t cudnn_handle();

} // namespace pillars::cuda
