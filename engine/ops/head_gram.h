// The head_gram op family: head_gram and head_gram_backward, GHT's per-head Gram matrix
// (engine/ops/head_gram.cpp; kernels: kernels/cpu/head_gram.h, kernels/cuda/head_gram.h). No parameters:
// the inputs say all.
#pragma once
#include <cstddef>
#include <cstdint>

#include "engine/graph.h"

namespace pillars::ops {

// Per-head Gram matrix for GHT (docs/METHOD.md §2): x (B, T, H, D) is a per-head feature map
// (e.g. V or O); lengths i32 (B) or kNoValue excludes padded positions t >= lengths[b].
// G[i, j] = Σ_{b, t < len_b, d} x[b,t,i,d] · x[b,t,j,d]  → (H, H). Gradient: dX = (dG + dGᵀ) X.
ValueId head_gram(Graph& g, ValueId x, ValueId lengths = kNoValue);

} // namespace pillars::ops
