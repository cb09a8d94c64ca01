// The language-model head and its cross-entropy in one sweep over row blocks, on the CPU: the
// (N, V) logits never exist in full, and the sweep that computes the loss also computes the
// gradients of the head's input and weight.
//
//   h (N, d), W (V, d), targets t (N) i32;  per block of C rows (h_c: rows [r, r + C)):
//     x_c   = h_c Wᵀ                     (C, V)   the block's logits, in the scratch
//     lse, loss_n                                  as cross_entropy_forward (cross_entropy.h)
//     dx_c  = (softmax(x_c) − q) / n_valid (C, V)  written over x_c (cross_entropy_rows_backward)
//     dh_c  = dx_c W                     (C, d)
//     dW   += dx_cᵀ h_c                  (V, d)
//   L = Σ_n loss_n / n_valid (summed in double, in row order, as cross_entropy_forward sums)
//
// dh and dW are the gradients of L itself (an upstream gradient of 1); the op scales them by the
// real upstream gradient in the backward (engine/ops/linear_cross_entropy.h). The products are
// the three of the unfused head (the logits, and the two of matmul's backward), so the sweep costs
// what the separate nodes cost; what it saves is the (N, V) buffer, a training step's largest.
#pragma once
#include <cstdint>

#include "kernels/cpu/cross_entropy.h"

namespace pillars::cpu {

struct LinearCrossEntropyParams {
  CrossEntropyParams ce;  // N, V, smoothing, ignore_index
  int64_t d = 0;          // the hidden size (h's and W's columns)
  int64_t block_rows = 0; // C: rows per block (> 0)
};

// Floats of scratch the sweep needs: one block of logits (C·V), its lse (C) and the N row losses.
int64_t linear_cross_entropy_scratch_floats(const LinearCrossEntropyParams& p);

// Returns L; writes dh (N, d) and dW (V, d). Throws pillars::Error (before writing anything) when
// a target is neither ignore_index nor in [0, V).
float linear_cross_entropy(const LinearCrossEntropyParams& p, const float* h, const float* W, const int32_t* targets,
                           float* dh, float* dW, float* scratch);

} // namespace pillars::cpu
