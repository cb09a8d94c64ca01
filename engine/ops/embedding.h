// The embedding op family: embedding and embedding_backward (engine/ops/embedding.cpp; kernels:
// kernels/cpu/embedding.h, kernels/cuda/embedding.h).
#pragma once
#include <cstddef>
#include <cstdint>

#include "engine/graph.h"

namespace pillars::ops {

// embedding_backward: dout (..., D), ids (...) → dtable (vocab, D).
struct EmbeddingBackwardParams {
  int64_t vocab = 0; // V, the table's first extent
};

// Embedding gather: table (V, D), ids i32 (...) → (..., D). Gradient: scatter-add into (V, D).
// An id outside [0, V) is an error reported by the kernel.
ValueId embedding(Graph& g, ValueId table, ValueId ids);

} // namespace pillars::ops
