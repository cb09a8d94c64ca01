// Hopper's warpgroup MMA (wgmma, sm_90a) as inline PTX: the fences, the commit/wait of the
// asynchronous groups, and the m64n64k16 bf16 product with B in shared memory and A in shared
// memory or in registers. The
// layout and the descriptors are kernels/cuda/wgmma_layout.h; kernels/cuda/wgmma_check.cu runs one
// tile product through them on the GPU (tests/test_cuda_wgmma.cpp).
//
// The protocol for one product, by all 128 threads of a warpgroup:
//   1. write the operands into shared memory; fence_shared_to_async() (wgmma reads shared memory
//      through the "async proxy", which must see the threads' ordinary stores); a barrier;
//   2. fence() before the first wgmma that touches the accumulator registers;
//   3. mma_m64n64k16(...) per k-step (scale-d false on the first: D = A B, then D += A B), or
//      mma_m64n64k16_rs with A from registers; a fence() again before a product whose accumulator
//      or A registers ordinary code has touched since the last one;
//   4. commit(), then wait<0>() before reading the accumulators.
// The asm statements of fence() and wait() name no registers, so the compiler would be free to move
// ordinary reads and writes of the accumulators (or of A's registers) across them; fence_operand()
// pins a register array in place (an empty asm that "reads and writes" it): call it on every
// register array of the products right before fence() and right after wait().
// Everything here compiles only for sm_90a (__CUDA_ARCH_FEAT_SM90_ALL); callers guard with
// PILLARS_WGMMA.
#pragma once
#include <cstdint>
#include <type_traits>

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
__device__ __forceinline__ void fence_shared_to_async() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

__device__ __forceinline__ void fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
// Waits until at most N committed groups are still running.
template <int N>
__device__ __forceinline__ void wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// An empty asm that reads and writes every register of x: ordinary code on x cannot move across it.
template <class T, int N>
__device__ __forceinline__ void fence_operand(T (&x)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) {
    if constexpr (sizeof(T) == 4 && std::is_floating_point_v<T>)
      asm volatile("" : "+f"(x[i])::"memory");
    else
      asm volatile("" : "+r"(x[i])::"memory");
  }
}
template <class T, int M, int N>
__device__ __forceinline__ void fence_operand(T (&x)[M][N]) {
#pragma unroll
  for (int i = 0; i < M; ++i) fence_operand(x[i]);
}

// The accumulator of an m64n64 product: 32 floats a thread, d[nt][e] being register 4·nt + e of
// wgmma_layout.h's map — element for element the C fragments of eight m16n8 mma.sync products of
// the thread's warp (16 rows × 8 columns each), so the warp-level softmax code applies unchanged.
using Accumulator = float[8][4];

// The accumulator as the asm operands %0 … %31 of both products below: the register list in the
// instruction text, and the 32 read-write operands it names, in d[nt][e] order.
#define PILLARS_WGMMA_D_REGISTERS                                           \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  " %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
#define PILLARS_WGMMA_D_OPERANDS(d)                                                                            \
  "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]),     \
      "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), \
      "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]), \
      "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), \
      "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3])

// D (64 × 64) = A (64 × 16) · B (16 × 64) [+ D when accumulate]; A and Bᵀ K-major bf16 tiles in
// shared memory, named by their descriptors.
__device__ __forceinline__ void mma_m64n64k16(Accumulator& d, uint64_t a, uint64_t b, bool accumulate) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " PILLARS_WGMMA_D_REGISTERS
      "%32, %33, p, 1, 1, 0, 0;\n"
      "}\n"
      : PILLARS_WGMMA_D_OPERANDS(d)
      : "l"(a), "l"(b), "r"(static_cast<int>(accumulate)));
}

// The same with A from registers: this warp's 16 rows × 16 columns as the A fragment of an m16n8k16
// mma.sync (a[0] rows g, columns 2t, 2t+1; a[1] rows g+8; a[2], a[3] columns + 8), which is what
// attention_detail::to_a makes of a row of accumulators — P goes from S to the next product
// without leaving the registers. B_MN_MAJOR sets wgmma's transpose bit for B: B (16 × 64) is then
// read with N along the rows of its tile (MN-major), as V (keys × dims) lies in memory, instead of
// as Bᵀ with K along the rows.
template <bool B_MN_MAJOR = false>
__device__ __forceinline__ void mma_m64n64k16_rs(Accumulator& d, const uint32_t (&a)[4], uint64_t b, bool accumulate) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " PILLARS_WGMMA_D_REGISTERS
      "{%32, %33, %34, %35}, %36, p, 1, 1, %38;\n"
      "}\n"
      : PILLARS_WGMMA_D_OPERANDS(d)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(static_cast<int>(accumulate)), "n"(B_MN_MAJOR ? 1 : 0));
}

#undef PILLARS_WGMMA_D_REGISTERS
#undef PILLARS_WGMMA_D_OPERANDS

#endif // PILLARS_WGMMA

} // namespace pillars::cuda::wgmma
