// CUDA device discovery, checked calls and memory; see device.h.
#include <cuda_runtime.h>

#include <string>

#include "engine/error.h"
#include "kernels/cuda/device.h"

namespace pillars {

namespace {

// Every CUDA runtime call is checked: a failure throws with the call and CUDA's message.
void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw Error(str_cat("CUDA error in ", what, ": ", cudaGetErrorString(status)));
}
#define PILLARS_CUDA_CHECK(call) check((call), #call)

__global__ void saxpy_kernel(float a, const float* x, float* y, long n) {
  const long i = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

} // namespace

int cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError(); // clear the sticky error
    return 0;
  }
  return n;
}

std::string cuda_unavailable_reason() {
  int n = 0;
  const cudaError_t status = cudaGetDeviceCount(&n);
  if (status != cudaSuccess) {
    cudaGetLastError();
    return std::string("no usable CUDA device: ") + cudaGetErrorString(status);
  }
  return n == 0 ? "no CUDA device present" : "";
}

std::string cuda_device_name(int device) {
  cudaDeviceProp prop{};
  PILLARS_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  return prop.name;
}

void* cuda_malloc_or_throw(size_t bytes) {
  void* p = nullptr;
  PILLARS_CUDA_CHECK(cudaMalloc(&p, bytes == 0 ? 1 : bytes));
  return p;
}

void cuda_free(void* p) { cudaFree(p); }

void cuda_copy_to_device(void* dst, const void* src, size_t bytes) {
  PILLARS_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
}

void cuda_copy_to_host(void* dst, const void* src, size_t bytes) {
  PILLARS_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
}

void cuda_saxpy(float a, const float* x, float* y, long n) {
  const int threads = 256;
  const long blocks = (n + threads - 1) / threads;
  if (blocks == 0) return;
  saxpy_kernel<<<static_cast<unsigned>(blocks), threads>>>(a, x, y, n);
  PILLARS_CUDA_CHECK(cudaGetLastError());
  PILLARS_CUDA_CHECK(cudaDeviceSynchronize());
}

} // namespace pillars
