// The CUDA backend's runtime, as seen from .cu files: one stream, checked calls, launch helpers,
// the cuBLAS handle, and the caching allocator behind every device tensor.
//
// Every kernel of the backend is launched on cuda::stream() (one in-order stream per process), so
// ops run in graph order without any synchronization between them; the host waits only where it
// reads a result back (Tensor::to, Executor::fetch). Kernel launches are checked with
// PILLARS_CUDA_LAUNCHED() right after the <<< >>>: a bad configuration throws at once, naming the
// kernel; an asynchronous fault surfaces at the next synchronizing call.
//
// This header is for nvcc only (.cu files); C++ code talks to the backend through runtime/cuda_device.h.
#pragma once
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "base/error.h"
#include "runtime/cuda_device.h"

namespace pillars::cuda {

// Throws pillars::Error naming the call and CUDA's message.
void check(cudaError_t status, const char* what, const char* file, int line);
void check(cublasStatus_t status, const char* what, const char* file, int line);

#define PILLARS_CUDA_CHECK(call) ::pillars::cuda::check((call), #call, __FILE__, __LINE__)
// After a launch: a bad grid/block/shared-memory request is reported here, with the kernel's name.
#define PILLARS_CUDA_LAUNCHED(kernel_name) ::pillars::cuda::check(cudaGetLastError(), kernel_name, __FILE__, __LINE__)

cudaStream_t stream();   // the backend's stream (created on first use)
cublasHandle_t cublas(); // bound to stream()
cublasLtHandle_t cublas_lt();
const cudaDeviceProp& device_properties(); // of the current device, read once

// Blocks of `per_block` items (threads, rows, teams) covering n items, at most INT32_MAX (the
// largest grid.x). A kernel with a grid-stride loop covers what a capped grid leaves; one that
// indexes by blockIdx alone needs n below INT32_MAX * per_block (5e11 items at 256 a block).
inline unsigned blocks_for(int64_t n, int64_t per_block) {
  const int64_t blocks = (n + per_block - 1) / per_block;
  return static_cast<unsigned>(blocks < INT32_MAX ? blocks : INT32_MAX);
}

// ---- the caching allocator ------------------------------------------------------------------------
// cudaMalloc/cudaFree synchronize the device and cost tens of microseconds; a training step that
// allocated per op would be launch-bound. Freed blocks go back to a free list keyed by their
// rounded size and are handed out again; cudaMalloc runs only when no cached block fits, and when
// it fails the cache is released and the call retried once. Blocks are freed in stream order:
// everything runs on one stream, so a block released on the host may be reused by a later launch
// without waiting (the earlier kernels that used it are ahead of it in the stream).
void* device_alloc(size_t bytes);
void device_free(void* p);
struct AllocatorStats {
  size_t in_use = 0, cached = 0, peak_in_use = 0; // bytes
  uint64_t device_mallocs = 0, cache_hits = 0;
};
AllocatorStats allocator_stats();
void reset_peak_in_use();     // peak_in_use ← in_use: a measurement's peak starts from here
void release_cached_blocks(); // return every cached block to the driver

// ---- precision (runtime/cuda_device.h says what fp32 and bf16 mean) ------------------------------
using pillars::Precision;
Precision precision();
void set_precision(Precision p);

} // namespace pillars::cuda
