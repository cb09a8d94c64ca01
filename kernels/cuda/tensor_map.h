// TMA descriptors (CUtensorMap) made on the host for the kernels that copy with the tensor memory
// accelerator (kernels/cuda/tma.cuh). A descriptor holds a global address, so it is made for each
// launch and passed by value as a __grid_constant__ kernel parameter (CUDA graphs capture it with
// the launch). The driver's encoder is reached through the runtime (cudaGetDriverEntryPointByVersion),
// so nothing links libcuda directly. For nvcc-compiled files (cuda.h's types).
#pragma once
#include <cuda.h>

namespace pillars::cuda {

// The descriptor of a (B, T, H, D) bf16 tensor of attention heads, row-major and contiguous, seen
// as 4 dimensions (D, H, T, B), innermost first. One copy brings a box of 64 columns (128 bytes) of
// one head × `rows` consecutive rows of one batch element into shared memory in the 128-byte
// swizzle (kernels/cuda/wgmma_layout.h: sw128_offset); rows past T arrive as zeros. D must be a
// multiple of 64 (a head of D = 128 is two boxes, at columns 0 and 64).
CUtensorMap head_tensor_map(const void* X, int B, int T, int H, int D, int rows);

} // namespace pillars::cuda
