// Reductions over one axis (negative axes count from the end).
#pragma once
#include "engine/graph.h"

namespace pillars::ops {

// The parameters of sum, mean, max and max_backward (params_of<ReduceParams>(node)).
struct ReduceParams {
  int64_t axis = 0;     // the reduced axis, stored non-negative (the builders normalize it)
  bool keepdim = false; // keep the axis with extent 1 instead of removing it
};

ValueId sum(Graph& g, ValueId x, int64_t axis, bool keepdim = false);
ValueId mean(Graph& g, ValueId x, int64_t axis, bool keepdim = false);
ValueId max(Graph& g, ValueId x, int64_t axis, bool keepdim = false); // gradient to the (first) arg-max
ValueId sum_all(Graph& g, ValueId x);                                 // scalar (shape [])

} // namespace pillars::ops
