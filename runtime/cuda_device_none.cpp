// The CUDA backend's entry points in a build without CUDA: every query answers "no device", and
// anything that would touch a GPU throws a clear error. (With CUDA, runtime/cuda_device.cu
// defines these instead and this file compiles to nothing.)
#ifndef PILLARS_HAVE_CUDA
#include "base/error.h"
#include "runtime/cuda_device.h"

namespace pillars {

namespace {
[[noreturn]] void no_cuda() { throw Error("this build of pillars has no CUDA support (configure with nvcc present)"); }
} // namespace

int cuda_device_count() { return 0; }
std::string cuda_unavailable_reason() { return "this build of pillars has no CUDA support"; }
std::string cuda_device_name(int) { no_cuda(); }
void cuda_use_device(int) { no_cuda(); }
void* cuda_malloc_or_throw(size_t) { no_cuda(); }
void cuda_free(void*) {}
std::string cuda_memory_summary() { return "no CUDA"; }
size_t cuda_peak_memory_bytes() { return 0; }
void cuda_reset_peak_memory() {}
void cuda_copy_to_device(void*, const void*, size_t) { no_cuda(); }
void cuda_copy_to_host(void*, const void*, size_t) { no_cuda(); }
void cuda_copy_on_device(void*, const void*, size_t) { no_cuda(); }
void cuda_zero(void*, size_t) { no_cuda(); }
void cuda_synchronize() { no_cuda(); }
void* cuda_host_alloc(size_t) { no_cuda(); }
void cuda_host_free(void*) {}
void cuda_copy_to_pinned(void*, const void*, size_t) { no_cuda(); }
void cuda_copy_from_pinned(void*, const void*, size_t) { no_cuda(); }
void cuda_launch_host_function(void (*)(void*), void*) { no_cuda(); }
void cuda_set_precision(Precision) { no_cuda(); }
Precision cuda_precision() { return Precision::fp32; }
void cuda_graph_begin_capture() { no_cuda(); }
void* cuda_graph_end_capture() { no_cuda(); }
void cuda_graph_launch(void*) { no_cuda(); }
void cuda_graph_destroy(void*) {}
double cuda_median_ms(int, const std::function<void()>&, int) { no_cuda(); }
void cuda_saxpy(float, const float*, float*, long) { no_cuda(); }

} // namespace pillars
#endif
