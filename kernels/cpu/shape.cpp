// See shape.h.
#include "kernels/cpu/shape.h"

#include <array>
#include <cstring>

#include "base/error.h"
#include "base/parallel.h"

namespace pillars::cpu {

// For each output row (the last axis), gathers from x with the permuted strides; when the last
// axis stays last the row is one memcpy.
void permute(const PermuteArgs& a, const void* x_raw, void* y_raw) {
  const std::span<const int64_t> xs = a.x_dims, os = a.y_dims, order = a.order;
  const size_t es = a.elem_size;
  const size_t r = xs.size();
  int64_t total = 1;
  for (int64_t d : os) total *= d;
  if (total == 0) return;
  if (r == 0) {
    std::memcpy(y_raw, x_raw, es);
    return;
  }
  constexpr size_t kMaxRank = 8; // fixed arrays: kernels must not allocate inside a step
  PILLARS_CHECK(r <= kMaxRank, "permute supports rank <= ", kMaxRank);
  std::array<int64_t, kMaxRank> xstride{}, st{}; // st: stride in x of each output axis
  xstride[r - 1] = 1;
  for (size_t i = r - 1; i-- > 0;) xstride[i] = xstride[i + 1] * xs[i + 1];
  for (size_t i = 0; i < r; ++i) st[i] = xstride[static_cast<size_t>(order[i])];
  const int64_t row = os[r - 1], rows = total / row;
  const char* x = static_cast<const char*>(x_raw);
  char* y = static_cast<char*>(y_raw);
  const bool contiguous_rows = st[r - 1] == 1;
#pragma omp parallel for schedule(static) if (total > kParallelGrain)
  for (int64_t rr = 0; rr < rows; ++rr) {
    int64_t rem = rr, off = 0;
    for (size_t ax = r - 1; ax-- > 0;) {
      off += (rem % os[ax]) * st[ax];
      rem /= os[ax];
    }
    char* dst = y + static_cast<size_t>(rr * row) * es;
    if (contiguous_rows) {
      std::memcpy(dst, x + static_cast<size_t>(off) * es, static_cast<size_t>(row) * es);
    } else if (es == 4) {
      const float* src = reinterpret_cast<const float*>(x) + off;
      float* d = reinterpret_cast<float*>(dst);
      const int64_t s = st[r - 1];
      for (int64_t k = 0; k < row; ++k) d[k] = src[k * s];
    } else {
      for (int64_t k = 0; k < row; ++k)
        std::memcpy(dst + static_cast<size_t>(k) * es, x + static_cast<size_t>(off + k * st[r - 1]) * es, es);
    }
  }
}

void slice(const SliceArgs& a, const void* x, void* y) {
  const int64_t outer = a.outer, n = a.n, inner = a.inner, begin = a.begin, len = a.len;
  const size_t es = a.elem_size;
  const size_t xrow = static_cast<size_t>(n * inner) * es, yrow = static_cast<size_t>(len * inner) * es;
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(static_cast<char*>(y) + o * yrow,
                static_cast<const char*>(x) + o * xrow + static_cast<size_t>(begin * inner) * es, yrow);
}

void concat_part(const ConcatPartArgs& a, const void* x, void* y) {
  const int64_t outer = a.outer, x_n = a.x_n, y_n = a.y_n, at = a.at, inner = a.inner;
  const size_t es = a.elem_size;
  const size_t xrow = static_cast<size_t>(x_n * inner) * es, yrow = static_cast<size_t>(y_n * inner) * es;
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(static_cast<char*>(y) + o * yrow + static_cast<size_t>(at * inner) * es,
                static_cast<const char*>(x) + o * xrow, xrow);
}

void pad_slice(const PadSliceArgs& a, const void* x, void* y) {
  std::memset(y, 0, static_cast<size_t>(a.outer * a.full * a.inner) * a.elem_size);
  concat_part({.outer = a.outer, .x_n = a.n, .y_n = a.full, .at = a.begin, .inner = a.inner, .elem_size = a.elem_size},
              x, y);
}

} // namespace pillars::cpu
