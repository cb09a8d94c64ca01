// Small helpers shared by the op definitions (not part of the public API).
#pragma once
#include <string>
#include <vector>

#include "base/parallel.h"
#include "base/error.h"
#include "engine/graph.h"
#include "engine/op.h"

namespace pillars::ops::detail {

// A negative axis counts from the end; throws naming the op if out of range.
inline int64_t normalize_axis(const char* op, int64_t axis, size_t rank) {
  const int64_t r = static_cast<int64_t>(rank);
  const int64_t a = axis < 0 ? axis + r : axis;
  PILLARS_CHECK(a >= 0 && a < r, op, ": axis ", axis, " out of range for rank ", rank);
  return a;
}

inline void expect_f32(const char* op, const Graph& g, ValueId v) {
  PILLARS_CHECK(g.dtype(v) == DType::f32, op, ": expected an f32 input, got ", dtype_name(g.dtype(v)),
                shape_str(g.shape(v)));
}

// (outer, n, inner) view of a shape around `axis`: the layout every axis-wise kernel uses.
struct AxisSplit {
  int64_t outer = 1, n = 1, inner = 1;
  // Flat index of element (o, k, i): (o·n + k)·inner + i.
  int64_t at(int64_t o, int64_t k, int64_t i) const { return (o * n + k) * inner + i; }
};
inline AxisSplit split_at(const Shape& s, int64_t axis) {
  AxisSplit r;
  for (int64_t i = 0; i < static_cast<int64_t>(s.size()); ++i) {
    if (i < axis)
      r.outer *= s[static_cast<size_t>(i)];
    else if (i == axis)
      r.n = s[static_cast<size_t>(i)];
    else
      r.inner *= s[static_cast<size_t>(i)];
  }
  return r;
}

using pillars::kParallelGrain; // base/parallel.h

} // namespace pillars::ops::detail
