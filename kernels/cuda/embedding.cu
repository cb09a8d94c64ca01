// Embedding gather and its gradient on the GPU (same function as kernels/cpu/embedding.h).
//
// Shapes: table (V, D) f32, ids (n) i32 — the op's (...) flattened —, out (n, D), dtable (V, D).
//   forward   out[i, :] = table[ids[i], :]
//   backward  dtable[v, :] = Σ_{i : ids[i] = v} dout[i, :]      (rows never looked up stay 0)
// An id outside [0, V) is an error on the CPU; the GPU cannot throw, so the forward writes a zero
// row for it and the backward skips it.
//
// Algorithm. A warp per position i, its lanes across the D columns (16-byte loads and stores when
// D % 4 == 0 and the pointers are aligned): the forward is a row copy; the backward zeroes dtable
// (cudaMemsetAsync) and adds each dout row into dtable[ids[i]] with atomicAdd (on sm_90 one float4
// atomic per four columns).
//
// Not deterministic: when an id repeats, its rows are added in whatever order the warps reach the
// atomics, so dtable can differ in the last bits from run to run (the CPU kernel adds in position
// order). A deterministic version needs the positions grouped by id (a sort, i.e. a workspace,
// which this op's CUDA slot does not have).
//
// The API is embedding.h; engine/ops/cuda/embedding.cu adapts the ops to it.
#include "kernels/cuda/embedding.h"

#include <cuda_runtime.h>

#include <cstdint>

#include "runtime/cuda_runtime.h"

namespace pillars::cuda {
namespace {

constexpr int kThreads = 256, kWarpsPerBlock = kThreads / 32;

__device__ __forceinline__ bool in_vocabulary(int32_t id, int64_t V) { return id >= 0 && id < V; }

// Warp w of the grid handles positions w, w + W, ... (W warps in all).
template <bool kVec4>
__global__ void __launch_bounds__(kThreads)
    gather_kernel(const float* table, const int32_t* ids, float* out, int64_t n, int64_t V, int64_t D) {
  const int lane = threadIdx.x % 32;
  for (int64_t i = int64_t{blockIdx.x} * kWarpsPerBlock + threadIdx.x / 32; i < n;
       i += int64_t{gridDim.x} * kWarpsPerBlock) {
    const int32_t id = ids[i];
    const bool found = in_vocabulary(id, V);
    const float* src = table + (found ? id : 0) * D;
    float* dst = out + i * D;
    if constexpr (kVec4) {
      const float4* src4 = reinterpret_cast<const float4*>(src);
      float4* dst4 = reinterpret_cast<float4*>(dst);
      for (int64_t u = lane; u < D / 4; u += 32) dst4[u] = found ? src4[u] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    } else {
      for (int64_t d = lane; d < D; d += 32) dst[d] = found ? src[d] : 0.0f;
    }
  }
}

template <bool kVec4>
__global__ void __launch_bounds__(kThreads)
    scatter_add_kernel(const float* dout, const int32_t* ids, float* dtable, int64_t n, int64_t V, int64_t D) {
  const int lane = threadIdx.x % 32;
  for (int64_t i = int64_t{blockIdx.x} * kWarpsPerBlock + threadIdx.x / 32; i < n;
       i += int64_t{gridDim.x} * kWarpsPerBlock) {
    const int32_t id = ids[i];
    if (!in_vocabulary(id, V)) continue;
    const float* src = dout + i * D;
    float* dst = dtable + int64_t{id} * D;
    if constexpr (kVec4) {
      const float4* src4 = reinterpret_cast<const float4*>(src);
      float4* dst4 = reinterpret_cast<float4*>(dst);
      for (int64_t u = lane; u < D / 4; u += 32) {
        const float4 g = src4[u];
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
        atomicAdd(dst4 + u, g); // one 16-byte atomic (sm_90)
#else
        atomicAdd(&dst4[u].x, g.x), atomicAdd(&dst4[u].y, g.y), atomicAdd(&dst4[u].z, g.z), atomicAdd(&dst4[u].w, g.w);
#endif
      }
    } else {
      for (int64_t d = lane; d < D; d += 32) atomicAdd(dst + d, src[d]);
    }
  }
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

} // namespace

void embedding_forward(const EmbeddingArgs& a, const float* src, const int32_t* ids, float* out) {
  const int64_t n = a.n, V = a.V, D = a.D;
  if (n == 0 || D == 0) return;
  const unsigned grid = blocks_for(n, kWarpsPerBlock);
  if (D % 4 == 0 && aligned16(src) && aligned16(out))
    gather_kernel<true><<<grid, kThreads, 0, stream()>>>(src, ids, out, n, V, D);
  else
    gather_kernel<false><<<grid, kThreads, 0, stream()>>>(src, ids, out, n, V, D);
  PILLARS_CUDA_LAUNCHED("embedding gather_kernel");
}

void embedding_backward(const EmbeddingArgs& a, const float* src, const int32_t* ids, float* dst) {
  const int64_t n = a.n, V = a.V, D = a.D;
  PILLARS_CUDA_CHECK(cudaMemsetAsync(dst, 0, static_cast<size_t>(V * D) * sizeof(float), stream()));
  if (n == 0 || D == 0) return;
  const unsigned grid = blocks_for(n, kWarpsPerBlock);
  if (D % 4 == 0 && aligned16(src) && aligned16(dst))
    scatter_add_kernel<true><<<grid, kThreads, 0, stream()>>>(src, ids, dst, n, V, D);
  else
    scatter_add_kernel<false><<<grid, kThreads, 0, stream()>>>(src, ids, dst, n, V, D);
  PILLARS_CUDA_LAUNCHED("embedding scatter_add_kernel");
}

} // namespace pillars::cuda
