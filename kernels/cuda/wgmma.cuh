// Hopper's warpgroup MMA (wgmma, sm_90a) as inline PTX: the fences, the commit/wait of the
// asynchronous groups, and the m64n64k16 bf16 product with both operands in shared memory. The
// layout and the descriptors are kernels/cuda/wgmma_layout.h; kernels/cuda/wgmma_check.cu runs one
// tile product through them on the GPU (tests/test_cuda_wgmma.cpp).
//
// The protocol for one product, by all 128 threads of a warpgroup:
//   1. write the operands into shared memory; fence_shared_to_async() (wgmma reads shared memory
//      through the "async proxy", which must see the threads' ordinary stores); a barrier;
//   2. fence() before the first wgmma that touches the accumulator registers;
//   3. mma_m64n64k16(...) per k-step (scale-d false on the first: D = A B, then D += A B);
//   4. commit(), then wait<0>() before reading the accumulators.
// Everything here compiles only for sm_90a (__CUDA_ARCH_FEAT_SM90_ALL); callers guard with
// PILLARS_WGMMA.
#pragma once
#include <cstdint>

#include "kernels/cuda/wgmma_layout.h"

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define PILLARS_WGMMA 1
#endif

namespace pillars::cuda::wgmma {

#ifdef PILLARS_WGMMA

__device__ __forceinline__ uint32_t shared_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Makes this thread's earlier stores to shared memory visible to wgmma's operand reads.
__device__ __forceinline__ void fence_shared_to_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

__device__ __forceinline__ void fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
// Waits until at most N committed groups are still running.
template <int N> __device__ __forceinline__ void wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// D (64 × 64, fp32, 32 registers a thread: wgmma_layout.h) = A (64 × 16) · B (16 × 64) [+ D when
// accumulate], A and Bᵀ K-major bf16 tiles in shared memory named by their descriptors.
__device__ __forceinline__ void mma_m64n64k16(float (&d)[32], uint64_t a, uint64_t b, bool accumulate) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, "
      " %8, %9, %10, %11, %12, %13, %14, %15, "
      " %16, %17, %18, %19, %20, %21, %22, %23, "
      " %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]),
        "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
        "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]),
        "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(a), "l"(b), "r"(static_cast<int>(accumulate)));
}

#endif // PILLARS_WGMMA

} // namespace pillars::cuda::wgmma
