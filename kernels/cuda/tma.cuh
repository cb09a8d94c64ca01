// Hopper's asynchronous copies and the synchronization around them, as inline PTX (sm_90a, guarded
// like wgmma.cuh by PILLARS_WGMMA): the tensor memory accelerator (TMA), which copies a box of a
// tensor from global to shared memory on its own, described by a CUtensorMap made on the host
// (kernels/cuda/tensor_map.h); the mbarriers that say when such a copy has landed; the named
// barriers that let groups of warps wait for each other without stopping the whole block; and
// setmaxnreg, which moves registers from warps that only copy to warps that compute.
//
// THE MBARRIER PROTOCOL. An mbarrier is 8 bytes of shared memory holding a phase (0, 1, 0, ...),
// a count of arrivals still expected and a count of bytes still expected ("transactions"). A phase
// completes when both reach zero; then the barrier starts the next phase with the count it was
// initialized with. A producer announces a copy with arrive_expect_tx(bytes) and issues it with the
// barrier's address; the TMA unit counts the bytes down as they land. A consumer waits for "the
// phase of parity P has completed" with wait(bar, P): the k-th use of a barrier (k = 0, 1, ...)
// completes the phase of parity k mod 2.
#pragma once
#include <cstdint>

#include "kernels/cuda/wgmma.cuh" // PILLARS_WGMMA

namespace pillars::cuda::tma {

#ifdef PILLARS_WGMMA

__device__ __forceinline__ uint32_t shared_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// ---- mbarriers ------------------------------------------------------------------------------------

// Before any use, by one thread; then fence_barrier_init() and a block-wide barrier.
__device__ __forceinline__ void barrier_init(uint64_t* bar, uint32_t arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(shared_address(bar)), "r"(arrivals) : "memory");
}
// Makes the initializations visible to the TMA unit (the async proxy) and to the other threads.
__device__ __forceinline__ void fence_barrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
// One arrival, announcing `bytes` more to come from copies that name this barrier.
__device__ __forceinline__ void arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(shared_address(bar)), "r"(bytes)
               : "memory");
}
// One arrival (release: this thread's earlier reads and writes happen before the phase completes).
__device__ __forceinline__ void arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(shared_address(bar)) : "memory");
}
// Waits until the phase of parity `parity` has completed (acquire: what the arrivals released, and
// the bytes the copies brought, are visible after it).
__device__ __forceinline__ void wait(uint64_t* bar, uint32_t parity) {
  uint32_t done = 0;
  do {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n"
        "}\n"
        : "=r"(done)
        : "r"(shared_address(bar)), "r"(parity)
        : "memory");
  } while (!done);
}

// ---- TMA --------------------------------------------------------------------------------------------

// The box of a 4-dimensional tensor map whose first element has coordinates (c0, c1, c2, c3)
// (innermost first) into shared memory at `dst`, counted on `bar`. Elements outside the tensor
// land as zeros (and still count as bytes). The map must live in constant, parameter or global
// memory: a __grid_constant__ kernel parameter.
__device__ __forceinline__ void load_4d(void* dst, const void* map, uint64_t* bar, int c0, int c1, int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], "
      "[%6];\n" ::"r"(shared_address(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(shared_address(bar))
      : "memory");
}
// Fetches the tensor map's 128 bytes ahead of the first copy that uses it.
__device__ __forceinline__ void prefetch_map(const void* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}
// Orders this thread's ordinary shared-memory writes before later reads and writes of the async
// proxy (wgmma's operand reads, the TMA's copies).
__device__ __forceinline__ void fence_async_shared() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// ---- named barriers and registers ------------------------------------------------------------------

// Barrier `id` (1–15; 0 is __syncthreads) completes when `threads` threads (a multiple of 32) have
// reached it: sync() arrives and waits, arrive() arrives and goes on.
__device__ __forceinline__ void named_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// Every warp of a warpgroup gives registers back (down to N a thread) or takes them (up to N):
// the copying warpgroup shrinks so that the computing ones can grow.
template <int N>
__device__ __forceinline__ void release_registers() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N>
__device__ __forceinline__ void claim_registers() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}

#endif // PILLARS_WGMMA

} // namespace pillars::cuda::tma
