// The mask of the composed ("naive") attention on the GPU: the attention_mask op of
// engine/ops/attention_mask.cpp, so that attention_reference runs on a CUDA executor without the host
// fallback (which would also stop CUDA-graph capture).
//
// The API is attention_mask.h; engine/ops/cuda/attention_mask.cu adapts the op to it.
#include "kernels/cuda/attention_mask.h"

#include <cuda_runtime.h>

#include <cstdint>

#include "runtime/cuda_runtime.h"

namespace pillars::cuda {

// attention_mask: [key_lengths i32 (B)] → m i32 (B or 1, 1, Tq, Tk), 1 where key j is hidden from
// query i: j ≥ key_lengths[b] (padding) or, if causal, j > i + Tk − Tq (the naive attention's mask;
// engine/ops/attention_mask.cpp, whose AttentionMaskParams give Tq, Tk and causal).
namespace {

constexpr int kThreads = 256;

__global__ void attention_mask_kernel(const int32_t* lengths, int32_t* m, int64_t B, int64_t Tq, int64_t Tk,
                                      bool causal) {
  const int64_t n = B * Tq * Tk;
  for (int64_t e = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; e < n; e += int64_t{gridDim.x} * blockDim.x) {
    const int64_t j = e % Tk, i = (e / Tk) % Tq, b = e / (Tk * Tq);
    const bool padding = lengths && j >= lengths[b];
    const bool future = causal && j > i + Tk - Tq;
    m[e] = padding || future;
  }
}
} // namespace

void attention_mask(const AttentionMaskArgs& a, const int32_t* key_lengths, int32_t* m) {
  const int64_t B = a.B, Tq = a.Tq, Tk = a.Tk;
  const bool causal = a.causal;
  const int64_t n = B * Tq * Tk;
  if (n == 0) return;
  const unsigned grid = blocks_for(n, kThreads) < 65535u * 8 ? blocks_for(n, kThreads) : 65535u * 8;
  attention_mask_kernel<<<grid, kThreads, 0, stream()>>>(key_lengths, m, B, Tq, Tk, causal);
  PILLARS_CUDA_LAUNCHED("attention_mask_kernel");
}

} // namespace pillars::cuda
