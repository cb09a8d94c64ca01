// Fused softmax cross-entropy with label smoothing and ignore_index on the GPU: the plain-pointer
// API under the cross_entropy ops (adapters: engine/ops/cuda/cross_entropy.cu; the math and the
// algorithm: cross_entropy.cu). Device arrays:
//
//   forward   logits (N, V) f32, targets (N) i32 → loss (a scalar) f32, lse (N) f32;
//             row_loss: device scratch of N floats
//   backward  logits (N, V), targets (N), lse (N), dL (a scalar, on the device) → dlogits (N, V),
//             which may be logits' own buffer; scale: device scratch of one float
//
// Deterministic, no atomics. Queued on cuda::stream(). Plain C++: callable from host code compiled
// without nvcc.
#pragma once
#include <cstdint>

namespace pillars::cuda {

struct CrossEntropyParams {
  int64_t N, V, ignore_index;
  float one_minus_smoothing, uniform; // 1 − ε and ε/V, rounded as the CPU kernel rounds them
};

// The parameters of N rows of V classes with label smoothing ε (the one place that rounds 1 − ε
// and ε/V).
inline CrossEntropyParams cross_entropy_params(int64_t N, int64_t V, float smoothing, int64_t ignore_index) {
  return {.N = N,
          .V = V,
          .ignore_index = ignore_index,
          .one_minus_smoothing = 1.0f - smoothing,
          .uniform = smoothing / static_cast<float>(V)};
}

void cross_entropy_forward(const CrossEntropyParams& p, const float* logits, const int32_t* targets, float* loss,
                           float* lse, float* row_loss);
void cross_entropy_backward(const CrossEntropyParams& p, const float* logits, const int32_t* targets, const float* lse,
                            const float* dL, float* dlogits, float* scale);

// The steps of the two functions above, for a caller that sees the rows a block at a time
// (engine/ops/cuda/linear_cross_entropy.cu). p.N is the block's rows for the two row steps and
// all the rows for the other two.
//   rows_forward   lse and row_loss of each row (0 on rows that are not valid)
//   mean_loss      *loss = Σ row_loss / n_valid
//   scale          *scale = dL / n_valid, with dL = 1 when dL is nullptr
//   rows_backward  dlogits = (softmax − q)·*scale on valid rows, 0 on the others (may be logits)
void cross_entropy_rows_forward(const CrossEntropyParams& p, const float* logits, const int32_t* targets, float* lse,
                                float* row_loss);
void cross_entropy_mean_loss(const CrossEntropyParams& p, const float* row_loss, const int32_t* targets, float* loss);
void cross_entropy_scale(const CrossEntropyParams& p, const int32_t* targets, const float* dL, float* scale);
void cross_entropy_rows_backward(const CrossEntropyParams& p, const float* logits, const int32_t* targets,
                                 const float* lse, const float* scale, float* dlogits);

} // namespace pillars::cuda
