// Ops that move data without arithmetic. reshape is a free view; the others copy.
#pragma once
#include <vector>

#include "engine/graph.h"

namespace pillars::ops {

// ---- parameters (params_of<P>(node), engine/graph.h) ----

struct ReshapeParams {
  Shape shape; // the output's shape, fully resolved (no -1)
};

struct PermuteParams {
  std::vector<int64_t> order; // output axis i is input axis order[i] (a permutation of 0..rank-1)
};

// slice: y = x[..., begin:end, ...] along `axis`.
struct SliceParams {
  int64_t axis = 0;  // stored non-negative
  int64_t begin = 0; // first index kept
  int64_t end = 0;   // one past the last index kept
};

// pad_slice (slice's gradient): x placed at [begin, begin + extent) of `axis` in zeros of extent `full`.
struct PadSliceParams {
  int64_t axis = 0;  // stored non-negative
  int64_t begin = 0; // where x starts along the axis
  int64_t full = 0;  // the output's extent along the axis
};

struct ConcatParams {
  int64_t axis = 0; // the joined axis, stored non-negative
};

// ---- builders ----

ValueId reshape(Graph& g, ValueId x, const Shape& shape); // -1 infers one extent
ValueId transpose(Graph& g, ValueId x, int64_t axis0, int64_t axis1);
ValueId permute(Graph& g, ValueId x, const std::vector<int64_t>& order);      // out.shape[i] = x.shape[order[i]]
ValueId slice(Graph& g, ValueId x, int64_t axis, int64_t begin, int64_t end); // [begin, end)
ValueId concat(Graph& g, const std::vector<ValueId>& xs, int64_t axis);
// Gradient of slice: x placed at [begin, end) of `axis` in a zero tensor of extent `full`.
ValueId pad_slice(Graph& g, ValueId x, int64_t axis, int64_t begin, int64_t full);

} // namespace pillars::ops
