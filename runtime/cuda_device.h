// The CUDA backend as seen from plain C++: device discovery, memory, copies, synchronization,
// precision and CUDA graphs. No CUDA types appear here, so any file may include it.
//
// Everything here also exists in a CPU-only build (runtime/cuda_device_none.cpp gives the no-CUDA
// answers), so callers never need #ifdefs: they ask cuda_device_count() and skip GPU work when it
// is 0, printing cuda_unavailable_reason().
//
// Ordering: every copy and kernel goes to the backend's one stream (runtime/cuda_runtime.h), in
// issue order. Copies to the host wait for the stream, so a value read back is always final.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "base/precision.h"

namespace pillars {

int cuda_device_count(); // 0 when built without CUDA or no GPU/driver is present
// Makes this process use GPU `ordinal` instead of the first (the ranks of a data-parallel job on one
// machine take one GPU each). Before anything else touches the GPU.
void cuda_use_device(int ordinal);
std::string cuda_unavailable_reason();    // why cuda_device_count() is 0 ("" when it is not)
std::string cuda_device_name(int device); // e.g. "NVIDIA H100 80GB HBM3"

// Device memory from the caching allocator (runtime/cuda_runtime.h): freed blocks are reused.
void* cuda_malloc_or_throw(size_t bytes);
void cuda_free(void* p);
std::string cuda_memory_summary(); // "in use 1.2 GB, cached 0.3 GB, peak 2.0 GB, 14 cudaMalloc calls"
// The most bytes of device tensors alive at once since the last reset (cuBLAS's and cuDNN's own
// workspaces are not counted); a reset starts the peak from what is alive now. A reset also
// returns the allocator's cached blocks to the driver: a cached block may serve a request up to
// half its size and counts whole, so a measurement after a larger one would see the larger one's
// blocks (the H200's first `bench step` run showed every row at the fp32 row's peak).
size_t cuda_peak_memory_bytes();
void cuda_reset_peak_memory();

void cuda_copy_to_device(void* dst, const void* src, size_t bytes); // returns once src may be reused
void cuda_copy_to_host(void* dst, const void* src, size_t bytes);   // waits for the stream
void cuda_copy_on_device(void* dst, const void* src, size_t bytes); // queued
void cuda_zero(void* dst, size_t bytes);                            // queued
void cuda_synchronize();                                            // waits for the stream; throws if a kernel failed

// Stream-ordered host work, capturable into a CUDA graph (the executor's host fallback uses it):
// page-locked ("pinned") host memory, copies queued on the stream to and from it, and a host
// function the stream calls when it reaches it. `fn` must not call CUDA itself.
void* cuda_host_alloc(size_t bytes); // pinned host memory
void cuda_host_free(void* p);
void cuda_copy_to_pinned(void* pinned_dst, const void* src, size_t bytes);   // queued device → host
void cuda_copy_from_pinned(void* dst, const void* pinned_src, size_t bytes); // queued host → device
void cuda_launch_host_function(void (*fn)(void*), void* data);               // queued

// The GPU's precision (base/precision.h). fp32: every product in IEEE fp32 on CUDA cores (the
// exactness mode the tests compare with the CPU); bf16: operands rounded to bf16 for the tensor
// cores, accumulation and statistics in fp32.
void cuda_set_precision(Precision p);
Precision cuda_precision(); // fp32 until set (also without CUDA)

// CUDA graphs: record everything queued between begin and end once, then replay it with one launch.
void cuda_graph_begin_capture();
void* cuda_graph_end_capture(); // an executable graph
void cuda_graph_launch(void* graph);
void cuda_graph_destroy(void* graph);

// Median milliseconds of `repeats` runs of f, timed with CUDA events on the backend's stream,
// after `warmup` untimed runs (library handles, caches and clocks settle first).
double cuda_median_ms(int repeats, const std::function<void()>& f, int warmup = 3);

// y = a·x + y on the device (n floats): the smallest kernel, proving the toolchain end to end.
void cuda_saxpy(float a, const float* x, float* y, long n);

} // namespace pillars
