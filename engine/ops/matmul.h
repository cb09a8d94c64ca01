// Matrix products (kernels/cpu/gemm.h).
#pragma once
#include "engine/graph.h"

namespace pillars::ops {

// matmul's parameters (params_of<MatmulParams>(node)): C = alpha · op(A) · op(B).
struct MatmulParams {
  bool trans_a = false; // op(A) = Aᵀ on the last two axes
  bool trans_b = false; // op(B) = Bᵀ on the last two axes
  float alpha = 1.0f;   // scales the product (the GEMM's alpha); 1 for every matmul a model emits,
                        // the vjp passes it on to the gradient products
};

// The op itself, for passes that match nodes (node.op == &ops::kMatmul; engine/passes/fuse_linear.cpp).
extern const OpDef kMatmul;

// C = op(A) · op(B), op = transpose when the flag is set (on the last two axes).
//   2-D:      A (M, K), B (K, N) → (M, N)
//   batched:  A (..., M, K), B (..., K, N) with equal leading axes → (..., M, N)
//   mixed:    A (..., M, K), B (K, N) 2-D → (..., M, N)   (rows of all batches at once)
ValueId matmul(Graph& g, ValueId a, ValueId b, bool trans_a = false, bool trans_b = false);

// y = x Wᵀ + b, PyTorch's nn.Linear: x (..., in), W (out, in), b (out) or kNoValue → (..., out)
ValueId linear(Graph& g, ValueId x, ValueId w, ValueId b = kNoValue);

} // namespace pillars::ops
