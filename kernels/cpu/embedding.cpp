// Embedding kernels (see embedding.h). Ids are validated before any thread starts, so an error is
// thrown from the calling thread (an exception must not leave an OpenMP region).
#include "kernels/cpu/embedding.h"

#include <algorithm>
#include <cstring>

#include "base/parallel.h"
#include "base/error.h"

namespace pillars::cpu {
namespace {
constexpr int64_t kColumnBlock = 64; // columns of dtable per work item of the scatter-add
} // namespace

void embedding_check_ids(const EmbeddingArgs& a, const int32_t* ids) {
  const int64_t n = a.n, V = a.V;
  for (int64_t i = 0; i < n; ++i)
    PILLARS_CHECK(ids[i] >= 0 && ids[i] < V, "embedding: id ", ids[i], " at position ", i,
                  " is outside the vocabulary [0, ", V, ")");
}

void embedding_forward(const EmbeddingArgs& a, const float* table, const int32_t* ids, float* out) {
  const int64_t n = a.n, D = a.D;
  embedding_check_ids(a, ids);
#pragma omp parallel for schedule(static) if (n * D >= kParallelGrain)
  for (int64_t i = 0; i < n; ++i)
    std::memcpy(out + i * D, table + static_cast<int64_t>(ids[i]) * D, static_cast<size_t>(D) * sizeof(float));
}

void embedding_backward(const EmbeddingArgs& a, const float* dout, const int32_t* ids, float* dtable) {
  const int64_t n = a.n, V = a.V, D = a.D;
  embedding_check_ids(a, ids);
  const bool parallel = (V + n) * D >= kParallelGrain;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t v = 0; v < V; ++v) std::fill(dtable + v * D, dtable + (v + 1) * D, 0.0f);
  // One work item per block of columns [d0, d0 + w): all positions, in order.
  const int64_t blocks = (D + kColumnBlock - 1) / kColumnBlock;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t d0 = b * kColumnBlock, w = std::min(kColumnBlock, D - d0);
    for (int64_t i = 0; i < n; ++i) {
      const float* src = dout + i * D + d0;
      float* dst = dtable + static_cast<int64_t>(ids[i]) * D + d0;
#pragma omp simd
      for (int64_t j = 0; j < w; ++j) dst[j] += src[j];
    }
  }
}

} // namespace pillars::cpu
