// The CUDA backend's foundation: device discovery, checked calls, device memory.
//
// Everything here also exists in a CPU-only build (engine/device.cpp gives the no-CUDA answers),
// so callers never need #ifdefs: they ask cuda_device_count() and skip GPU work when it is 0,
// printing cuda_unavailable_reason().
#pragma once
#include <cstddef>
#include <string>

namespace pillars {

int cuda_device_count();                 // 0 when built without CUDA or no GPU/driver is present
std::string cuda_unavailable_reason();   // why cuda_device_count() is 0 ("" when it is not)
std::string cuda_device_name(int device); // e.g. "NVIDIA H100 80GB HBM3"

void* cuda_malloc_or_throw(size_t bytes);
void cuda_free(void* p);
void cuda_copy_to_device(void* dst, const void* src, size_t bytes);
void cuda_copy_to_host(void* dst, const void* src, size_t bytes);

// y = a·x + y on the device (n floats): the smallest real kernel, used to prove the toolchain and
// the backend's plumbing end to end until the CUDA issue brings the real kernels.
void cuda_saxpy(float a, const float* x, float* y, long n);

} // namespace pillars
