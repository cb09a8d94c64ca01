// The blocked LM head + cross-entropy sweep; the math is in linear_cross_entropy.h.
//
// Each block runs four threaded steps one after another: the logits GEMM, the rows' forward
// (lse and loss), the rows' backward in place, then the two gradient GEMMs. The pass chooses the
// block (engine/passes/fuse_linear_cross_entropy.h): larger blocks mean fewer passes over dW,
// smaller ones a smaller scratch. The three products run at the CPU's matmul precision
// (gemm_precision.h), as the unfused head's matmul nodes do.
#include "kernels/cpu/linear_cross_entropy.h"

#include <algorithm>

#include "base/error.h"
#include "kernels/cpu/gemm_precision.h"

namespace pillars::cpu {

int64_t linear_cross_entropy_scratch_floats(const LinearCrossEntropyParams& p) {
  const int64_t C = std::min(p.block_rows, p.ce.N);
  return C * p.ce.V + C + p.ce.N;
}

float linear_cross_entropy(const LinearCrossEntropyParams& p, const float* h, const float* W, const int32_t* targets,
                           float* dh, float* dW, float* scratch) {
  const int64_t N = p.ce.N, V = p.ce.V, d = p.d;
  PILLARS_CHECK(p.block_rows > 0, "linear_cross_entropy: block_rows must be positive, got ", p.block_rows);
  const int64_t valid = cross_entropy_valid_rows(p.ce, targets); // throws before anything is written
  const float scale = valid == 0 ? 0.0f : 1.0f / static_cast<float>(valid);
  const int64_t C = std::min(p.block_rows, N);
  float* logits = scratch;     // (C, V): x_c, then dx_c
  float* lse = logits + C * V; // (C)
  float* row_loss = lse + C;   // (N)
  if (N == 0) std::fill(dW, dW + V * d, 0.0f);
  for (int64_t r = 0; r < N; r += p.block_rows) {
    CrossEntropyParams block = p.ce;
    block.N = std::min(p.block_rows, N - r);
    const float* h_c = h + r * d;
    gemm_at_precision(false, true, block.N, V, d, 1.0f, h_c, d, W, d, 0.0f, logits, V); // x_c = h_c Wᵀ
    cross_entropy_rows_forward(block, logits, targets + r, lse, row_loss + r);
    cross_entropy_rows_backward(block, logits, targets + r, lse, scale, logits);                // dx_c over x_c
    gemm_at_precision(false, false, block.N, d, V, 1.0f, logits, V, W, d, 0.0f, dh + r * d, d); // dh_c = dx_c W
    gemm_at_precision(true, false, V, d, block.N, 1.0f, logits, V, h_c, d, r == 0 ? 0.0f : 1.0f, dW,
                      d); // dW += dx_cᵀ h_c
  }
  double total = 0.0;
  for (int64_t n = 0; n < N; ++n) total += row_loss[n];
  return valid == 0 ? 0.0f : static_cast<float>(total / static_cast<double>(valid));
}

} // namespace pillars::cpu
