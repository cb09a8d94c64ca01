// See dropout.h.
#include "kernels/cpu/dropout.h"

#include <algorithm>

#include "base/parallel.h"
#include "kernels/cpu/attention_tiles.h"

namespace pillars::cpu {
namespace {

constexpr int64_t kChunk = 4096; // elements per parallel work item

// y[i] for i in [begin, end) (at most kChunk). Which elements stay comes from the attention tile
// kernels' Philox generator (kernels/cpu/attention_tiles.h: many counters at once in SIMD lanes,
// bit for bit philox4x32_10): keep[j] = 1 where u(offset + begin + j) >= p, else 0.
void dropout_range(const DropoutArgs& a, const attention_tiles::TileKernels& tiles, const float* x, float* y,
                   int64_t begin, int64_t end) {
  float keep[kChunk];
  tiles.dropout_multipliers(a.seed, a.offset + static_cast<uint64_t>(begin), end - begin,
                            attention_tiles::keep_threshold(a.p), 1.0f, keep);
#pragma omp simd
  for (int64_t i = begin; i < end; ++i) y[i] = keep[i - begin] != 0.0f ? x[i] * a.scale : 0.0f;
}

// The offset in `mask` (broadcast to x's shape, aligned at the right) of element (row, 0) of x
// viewed as (rows, x.back()): decompose `row` over x's leading axes, last first, and add the mask
// strides of the axes the mask does not broadcast. No allocation (kernels run allocation-free).
int64_t mask_row_offset(std::span<const int64_t> x, std::span<const int64_t> mask, int64_t row) {
  const int64_t rank = static_cast<int64_t>(x.size()), shift = rank - static_cast<int64_t>(mask.size());
  int64_t offset = 0, stride = mask.empty() ? 1 : mask.back(); // the mask stride of axis rank − 2
  for (int64_t axis = rank - 2; axis >= 0 && axis >= shift; --axis) {
    const int64_t extent = mask[static_cast<size_t>(axis - shift)];
    if (extent != 1) offset += (row % x[static_cast<size_t>(axis)]) * stride;
    row /= x[static_cast<size_t>(axis)];
    stride *= extent;
  }
  return offset;
}

} // namespace

void dropout(const DropoutArgs& a, const float* x, float* y) {
  const attention_tiles::TileKernels& tiles = attention_tiles::active_tiles();
  const int64_t chunks = (a.n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (a.n >= kParallelGrain)
  for (int64_t k = 0; k < chunks; ++k) dropout_range(a, tiles, x, y, k * kChunk, std::min(a.n, (k + 1) * kChunk));
}

void masked_fill(const MaskedFillArgs& a, const float* x, const int32_t* mask, float* y) {
  const std::span<const int64_t> x_dims = a.x_dims, mask_dims = a.mask_dims;
  const float value = a.value;
  int64_t numel = 1;
  for (int64_t d : x_dims) numel *= d;
  const int64_t inner = x_dims.empty() ? 1 : x_dims.back(), rows = inner == 0 ? 0 : numel / inner;
  const int64_t inner_stride = mask_dims.empty() || mask_dims.back() == 1 ? 0 : 1; // along x's last axis
#pragma omp parallel for schedule(static) if (rows * inner >= kParallelGrain)
  for (int64_t r = 0; r < rows; ++r) {
    const int32_t* m = mask + mask_row_offset(x_dims, mask_dims, r);
#pragma omp simd
    for (int64_t j = 0; j < inner; ++j) y[r * inner + j] = m[j * inner_stride] != 0 ? value : x[r * inner + j];
  }
}

} // namespace pillars::cpu
