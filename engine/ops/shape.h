// Ops that move data without arithmetic. reshape is a free view; the others copy.
#pragma once
#include <vector>

#include "engine/graph.h"

namespace pillars::ops {

ValueId reshape(Graph& g, ValueId x, const Shape& shape);            // -1 infers one extent
ValueId transpose(Graph& g, ValueId x, int64_t axis0, int64_t axis1);
ValueId permute(Graph& g, ValueId x, const std::vector<int64_t>& order); // out.shape[i] = x.shape[order[i]]
ValueId slice(Graph& g, ValueId x, int64_t axis, int64_t begin, int64_t end); // [begin, end)
ValueId concat(Graph& g, const std::vector<ValueId>& xs, int64_t axis);
// Gradient of slice: x placed at [begin, end) of `axis` in a zero tensor of extent `full`.
ValueId pad_slice(Graph& g, ValueId x, int64_t axis, int64_t begin, int64_t full);

} // namespace pillars::ops
