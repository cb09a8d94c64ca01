// CUDA device discovery, memory, copies, precision and graphs; see device.h.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <vector>

#include "base/error.h"
#include "runtime/cuda_device.h"
#include "runtime/cuda_runtime.h"

namespace pillars {

namespace {

__global__ void saxpy_kernel(float a, const float* x, float* y, long n) {
  const long i = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

std::string gigabytes(size_t bytes) { return str_cat(static_cast<double>(bytes) / 1e9, " GB"); }

} // namespace

int cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError(); // clear the sticky error
    return 0;
  }
  return n;
}

void cuda_use_device(int ordinal) { PILLARS_CUDA_CHECK(cudaSetDevice(ordinal)); }

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

void* cuda_malloc_or_throw(size_t bytes) { return cuda::device_alloc(bytes); }
void cuda_free(void* p) { cuda::device_free(p); }

std::string cuda_memory_summary() {
  const cuda::AllocatorStats s = cuda::allocator_stats();
  return str_cat("in use ", gigabytes(s.in_use), ", cached ", gigabytes(s.cached), ", peak ", gigabytes(s.peak_in_use),
                 ", ", s.device_mallocs, " cudaMalloc calls, ", s.cache_hits, " cache hits");
}

size_t cuda_peak_memory_bytes() { return cuda::allocator_stats().peak_in_use; }
void cuda_reset_peak_memory() {
  cuda::release_cached_blocks();
  cuda::reset_peak_in_use();
}

void cuda_copy_to_device(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  // From pageable memory the copy is staged: it returns once `src` has been read.
  PILLARS_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, cuda::stream()));
}

void cuda_copy_to_host(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  PILLARS_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, cuda::stream()));
  PILLARS_CUDA_CHECK(cudaStreamSynchronize(cuda::stream()));
}

void cuda_copy_on_device(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  PILLARS_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, cuda::stream()));
}

void cuda_zero(void* dst, size_t bytes) {
  if (bytes == 0) return;
  PILLARS_CUDA_CHECK(cudaMemsetAsync(dst, 0, bytes, cuda::stream()));
}

void cuda_synchronize() { PILLARS_CUDA_CHECK(cudaStreamSynchronize(cuda::stream())); }

void* cuda_host_alloc(size_t bytes) {
  void* p = nullptr;
  PILLARS_CUDA_CHECK(cudaMallocHost(&p, bytes == 0 ? 1 : bytes));
  return p;
}

void cuda_host_free(void* p) {
  if (p) cudaFreeHost(p); // in a destructor: an error here has nowhere to go
}

void cuda_copy_to_pinned(void* pinned_dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  PILLARS_CUDA_CHECK(cudaMemcpyAsync(pinned_dst, src, bytes, cudaMemcpyDeviceToHost, cuda::stream()));
}

void cuda_copy_from_pinned(void* dst, const void* pinned_src, size_t bytes) {
  if (bytes == 0) return;
  PILLARS_CUDA_CHECK(cudaMemcpyAsync(dst, pinned_src, bytes, cudaMemcpyHostToDevice, cuda::stream()));
}

void cuda_launch_host_function(void (*fn)(void*), void* data) {
  PILLARS_CUDA_CHECK(cudaLaunchHostFunc(cuda::stream(), fn, data));
}

void cuda_set_precision(Precision p) { cuda::set_precision(p); }
Precision cuda_precision() { return cuda::precision(); }

void cuda_graph_begin_capture() {
  PILLARS_CUDA_CHECK(cudaStreamBeginCapture(cuda::stream(), cudaStreamCaptureModeThreadLocal));
}

void* cuda_graph_end_capture() {
  cudaGraph_t graph = nullptr;
  PILLARS_CUDA_CHECK(cudaStreamEndCapture(cuda::stream(), &graph));
  cudaGraphExec_t exec = nullptr;
  const cudaError_t status = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  PILLARS_CUDA_CHECK(status);
  return exec;
}

void cuda_graph_launch(void* graph) {
  PILLARS_CUDA_CHECK(cudaGraphLaunch(static_cast<cudaGraphExec_t>(graph), cuda::stream()));
}

void cuda_graph_destroy(void* graph) {
  if (graph) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(graph));
}

double cuda_median_ms(int repeats, const std::function<void()>& f, int warmup) {
  for (int i = 0; i < warmup; ++i) f();
  cudaEvent_t start = nullptr, stop = nullptr;
  PILLARS_CUDA_CHECK(cudaEventCreate(&start));
  PILLARS_CUDA_CHECK(cudaEventCreate(&stop));
  std::vector<float> times;
  for (int r = 0; r < repeats; ++r) {
    PILLARS_CUDA_CHECK(cudaEventRecord(start, cuda::stream()));
    f();
    PILLARS_CUDA_CHECK(cudaEventRecord(stop, cuda::stream()));
    PILLARS_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    PILLARS_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    times.push_back(ms);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(times.begin(), times.end());
  return times.empty() ? 0.0 : times[times.size() / 2];
}

void cuda_saxpy(float a, const float* x, float* y, long n) {
  const int threads = 256;
  const long blocks = (n + threads - 1) / threads;
  if (blocks == 0) return;
  saxpy_kernel<<<static_cast<unsigned>(blocks), threads, 0, cuda::stream()>>>(a, x, y, n);
  PILLARS_CUDA_LAUNCHED("saxpy");
  cuda_synchronize();
}

} // namespace pillars
