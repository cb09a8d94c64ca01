// Fused softmax + cross-entropy with label smoothing, forward and backward, on the CPU.
//
// logits x (N, V), targets t (N) i32. A row with t_n == ignore_index contributes nothing; every
// other target must lie in [0, V). With ε the label smoothing, the smoothed target distribution
// is q_v = (1 − ε)·[v = t_n] + ε/V, and with lse_n = log Σ_v exp(x_{n,v}):
//   loss_n = −Σ_v q_v log p_v = lse_n − (1 − ε)·x_{n,t} − (ε/V)·Σ_v x_{n,v}
//   L      = (1/n_valid) Σ_{valid n} loss_n                   (0 when no row is valid)
// which is PyTorch's F.cross_entropy(x, t, ignore_index, label_smoothing=ε, reduction="mean").
//
// Backward, with G = dL/dL_out (a scalar) and p = softmax(x_n) = exp(x_n − lse_n):
//   dx_{n,v} = (p_v − q_v) · G / n_valid   on valid rows,   0 on ignored rows.
// The forward saves only lse (N floats), so the backward needs logits + lse: no (N, V) softmax is
// ever stored. Both passes thread over rows.
#pragma once
#include <cstdint>

namespace pillars::cpu {

struct CrossEntropyParams {
  int64_t N = 0, V = 0;
  float smoothing = 0.0f;
  int64_t ignore_index = -100;
};

// Counts the rows with a target != ignore_index; throws pillars::Error naming the row, the target
// and V when a target is neither ignore_index nor in [0, V).
int64_t cross_entropy_valid_rows(const CrossEntropyParams& p, const int32_t* targets);

// Returns L; writes lse (N) (0 on ignored rows). row_loss: scratch of N floats.
float cross_entropy_forward(const CrossEntropyParams& p, const float* logits, const int32_t* targets, float* lse,
                            float* row_loss);

// dlogits (N, V) overwritten; grad = dL_total/dL (the upstream scalar gradient).
void cross_entropy_backward(const CrossEntropyParams& p, const float* logits, const int32_t* targets, const float* lse,
                            float grad, float* dlogits);

// The two row sweeps under the functions above, for a caller that sees the rows a block at a time
// (kernels/cpu/linear_cross_entropy.h) and so knows n_valid from elsewhere. Targets must already be
// checked (cross_entropy_valid_rows).
//   rows_forward:  lse_n and loss_n of every row (both 0 on ignored rows); no mean.
//   rows_backward: dx_{n,v} = (p_v − q_v)·scale on valid rows, 0 on ignored rows. dlogits may be
//                  logits itself (each element is read before it is written).
void cross_entropy_rows_forward(const CrossEntropyParams& p, const float* logits, const int32_t* targets, float* lse,
                                float* row_loss);
void cross_entropy_rows_backward(const CrossEntropyParams& p, const float* logits, const int32_t* targets,
                                 const float* lse, float scale, float* dlogits);

} // namespace pillars::cpu
