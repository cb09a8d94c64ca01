// The backend's runtime: the stream, library handles, precision mode and the caching allocator.
// See runtime.h for the design; this file is plumbing with no kernels.
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "runtime/cuda_runtime.h"

namespace pillars::cuda {

void check(cudaError_t status, const char* what, const char* file, int line) {
  if (status != cudaSuccess)
    throw Error(str_cat("CUDA error in ", what, " (", file, ":", line, "): ", cudaGetErrorString(status)));
}

void check(cublasStatus_t status, const char* what, const char* file, int line) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw Error(str_cat("cuBLAS error in ", what, " (", file, ":", line, "): ", cublasGetStatusString(status)));
}

namespace {
constexpr size_t kCublasWorkspaceBytes = 32u << 20; // what cuBLAS recommends for Hopper
} // namespace

cudaStream_t stream() {
  static cudaStream_t s = [] {
    cudaStream_t created = nullptr;
    PILLARS_CUDA_CHECK(cudaStreamCreateWithFlags(&created, cudaStreamNonBlocking));
    return created;
  }();
  return s;
}

cublasHandle_t cublas() {
  static cublasHandle_t h = [] {
    cublasHandle_t created = nullptr;
    PILLARS_CUDA_CHECK(cublasCreate(&created));
    PILLARS_CUDA_CHECK(cublasSetStream(created, stream()));
    // A workspace of our own: without one cuBLAS may allocate inside a call, which a CUDA graph
    // capture does not allow (and which would synchronize the device).
    static void* workspace = device_alloc(kCublasWorkspaceBytes);
    PILLARS_CUDA_CHECK(cublasSetWorkspace(created, workspace, kCublasWorkspaceBytes));
    return created;
  }();
  return h;
}

cublasLtHandle_t cublas_lt() {
  static cublasLtHandle_t h = [] {
    cublasLtHandle_t created = nullptr;
    PILLARS_CUDA_CHECK(cublasLtCreate(&created));
    return created;
  }();
  return h;
}

const cudaDeviceProp& device_properties() {
  static cudaDeviceProp prop = [] {
    cudaDeviceProp p{};
    int device = 0;
    PILLARS_CUDA_CHECK(cudaGetDevice(&device));
    PILLARS_CUDA_CHECK(cudaGetDeviceProperties(&p, device));
    return p;
  }();
  return prop;
}

namespace {
Precision g_precision = Precision::fp32;
} // namespace
Precision precision() { return g_precision; }
void set_precision(Precision p) { g_precision = p; }

// ---- the caching allocator ------------------------------------------------------------------------

namespace {

// Sizes are rounded up so that nearby requests share blocks: to 512 bytes below 1 MiB, to 1/8 of
// the next power of two above (at most 12.5 % waste).
size_t round_size(size_t bytes) {
  if (bytes == 0) bytes = 1;
  if (bytes < (1u << 20)) return (bytes + 511) & ~size_t{511};
  size_t p = 1;
  while (p < bytes) p <<= 1;
  const size_t step = p / 8;
  return (bytes + step - 1) / step * step;
}

struct Allocator {
  std::mutex mutex;
  std::multimap<size_t, void*> free_blocks; // size → block, smallest fitting first
  std::unordered_map<void*, size_t> live;   // block → size
  AllocatorStats stats;

  void* allocate(size_t bytes) {
    const size_t size = round_size(bytes);
    std::lock_guard<std::mutex> lock(mutex);
    // Best fit, but never a block more than twice the request (it would pin a large block).
    auto it = free_blocks.lower_bound(size);
    if (it != free_blocks.end() && it->first <= 2 * size) {
      void* p = it->second;
      const size_t got = it->first;
      free_blocks.erase(it);
      stats.cached -= got;
      ++stats.cache_hits;
      return mark_live(p, got);
    }
    void* p = nullptr;
    cudaError_t status = cudaMalloc(&p, size);
    if (status == cudaErrorMemoryAllocation) { // give the cache back to the driver and retry once
      cudaGetLastError();
      release_locked();
      status = cudaMalloc(&p, size);
    }
    if (status != cudaSuccess) {
      cudaGetLastError();
      throw Error(str_cat("CUDA out of memory: could not allocate ", size, " bytes (", stats.in_use,
                          " bytes in use by pillars): ", cudaGetErrorString(status)));
    }
    ++stats.device_mallocs;
    return mark_live(p, size);
  }

  void* mark_live(void* p, size_t size) {
    live[p] = size;
    stats.in_use += size;
    stats.peak_in_use = std::max(stats.peak_in_use, stats.in_use);
    return p;
  }

  void release(void* p) {
    if (!p) return;
    std::lock_guard<std::mutex> lock(mutex);
    auto it = live.find(p);
    if (it == live.end()) return; // not ours (cannot happen through Storage)
    free_blocks.emplace(it->second, p);
    stats.in_use -= it->second;
    stats.cached += it->second;
    live.erase(it);
  }

  void release_locked() {
    // Blocks may still be read by queued kernels: wait for the stream before freeing for real.
    cudaStreamSynchronize(stream());
    for (auto& [size, p] : free_blocks) cudaFree(p);
    free_blocks.clear();
    stats.cached = 0;
  }
};

Allocator& allocator() {
  static Allocator* a = new Allocator; // never destroyed: storage may be freed during static teardown
  return *a;
}

} // namespace

void* device_alloc(size_t bytes) { return allocator().allocate(bytes); }
void device_free(void* p) { allocator().release(p); }
AllocatorStats allocator_stats() {
  std::lock_guard<std::mutex> lock(allocator().mutex);
  return allocator().stats;
}
void reset_peak_in_use() {
  std::lock_guard<std::mutex> lock(allocator().mutex);
  allocator().stats.peak_in_use = allocator().stats.in_use;
}
void release_cached_blocks() {
  std::lock_guard<std::mutex> lock(allocator().mutex);
  allocator().release_locked();
}

} // namespace pillars::cuda
