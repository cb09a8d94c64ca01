// Layer-norm kernels (math in layernorm.h). Rows are independent: OpenMP over rows for dx and y;
// the parameter gradients dγ, dβ are column sums, threaded over blocks of columns.
#include "kernels/cpu/layernorm.h"

#include <algorithm>
#include <cmath>

#include "base/parallel.h"
#include "kernels/cpu/vec_math.h"

namespace pillars::cpu {
namespace {

constexpr int64_t kColumnBlock = 64; // columns of dγ/dβ one thread sums at a time

PILLARS_VEC_INLINE void forward_row_body(const float* x, const float* gamma, const float* beta, float* y,
                                         float* mean_out, float* rstd_out, int64_t D, float eps) {
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t d = 0; d < D; ++d) sum += x[d];
  const float mean = sum / static_cast<float>(D);
  float sq = 0.0f;
#pragma omp simd reduction(+ : sq)
  for (int64_t d = 0; d < D; ++d) sq += (x[d] - mean) * (x[d] - mean);
  const float rstd = 1.0f / std::sqrt(sq / static_cast<float>(D) + eps);
#pragma omp simd
  for (int64_t d = 0; d < D; ++d) {
    const float xhat = (x[d] - mean) * rstd;
    y[d] = xhat * (gamma ? gamma[d] : 1.0f) + (beta ? beta[d] : 0.0f);
  }
  *mean_out = mean;
  *rstd_out = rstd;
}
PILLARS_PER_ISA(void, forward_row,
                (const float* x, const float* gamma, const float* beta, float* y, float* mean_out, float* rstd_out,
                 int64_t D, float eps),
                (x, gamma, beta, y, mean_out, rstd_out, D, eps))

PILLARS_VEC_INLINE void backward_row_body(const float* x, const float* gamma, float mean, float rstd, const float* g,
                                          float* dx, int64_t D) {
  float sum_g = 0.0f, sum_gx = 0.0f; // Σ ĝ, Σ ĝ·x̂
#pragma omp simd reduction(+ : sum_g, sum_gx)
  for (int64_t d = 0; d < D; ++d) {
    const float gh = g[d] * (gamma ? gamma[d] : 1.0f);
    sum_g += gh;
    sum_gx += gh * (x[d] - mean) * rstd;
  }
  const float mean_g = sum_g / static_cast<float>(D), mean_gx = sum_gx / static_cast<float>(D);
#pragma omp simd
  for (int64_t d = 0; d < D; ++d) {
    const float gh = g[d] * (gamma ? gamma[d] : 1.0f);
    dx[d] = rstd * (gh - mean_g - (x[d] - mean) * rstd * mean_gx);
  }
}
PILLARS_PER_ISA(void, backward_row,
                (const float* x, const float* gamma, float mean, float rstd, const float* g, float* dx, int64_t D),
                (x, gamma, mean, rstd, g, dx, D))

// dγ[d0, d0 + w) and dβ[d0, d0 + w): Σ over all rows, in row order, accumulated in double.
PILLARS_VEC_INLINE void param_grad_block_body(const float* x, const float* mean, const float* rstd, const float* g,
                                              float* dgamma, float* dbeta, int64_t N, int64_t D, int64_t d0,
                                              int64_t w) {
  double acc_gamma[kColumnBlock] = {}, acc_beta[kColumnBlock] = {};
  for (int64_t n = 0; n < N; ++n) {
    const float* xr = x + n * D + d0;
    const float* gr = g + n * D + d0;
#pragma omp simd
    for (int64_t j = 0; j < w; ++j) {
      acc_gamma[j] += static_cast<double>(gr[j] * ((xr[j] - mean[n]) * rstd[n]));
      acc_beta[j] += static_cast<double>(gr[j]);
    }
  }
  for (int64_t j = 0; j < w; ++j) {
    if (dgamma) dgamma[d0 + j] = static_cast<float>(acc_gamma[j]);
    if (dbeta) dbeta[d0 + j] = static_cast<float>(acc_beta[j]);
  }
}
PILLARS_PER_ISA(void, param_grad_block,
                (const float* x, const float* mean, const float* rstd, const float* g, float* dgamma, float* dbeta,
                 int64_t N, int64_t D, int64_t d0, int64_t w),
                (x, mean, rstd, g, dgamma, dbeta, N, D, d0, w))

} // namespace

void layer_norm_forward(const LayerNormForwardArgs& a) {
  const int64_t N = a.N, D = a.D;
#pragma omp parallel for schedule(static) if (N * D >= kParallelGrain)
  for (int64_t n = 0; n < N; ++n)
    forward_row(a.x + n * D, a.gamma, a.beta, a.y + n * D, a.mean + n, a.rstd + n, D, a.eps);
}

void layer_norm_backward(const LayerNormBackwardArgs& a) {
  const int64_t N = a.N, D = a.D;
  const float *x = a.x, *mean = a.mean, *rstd = a.rstd, *dy = a.dy;
  float *dgamma = a.dgamma, *dbeta = a.dbeta;
  const bool parallel = N * D >= kParallelGrain;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t n = 0; n < N; ++n) backward_row(x + n * D, a.gamma, mean[n], rstd[n], dy + n * D, a.dx + n * D, D);
  if (!dgamma && !dbeta) return;
  const int64_t blocks = (D + kColumnBlock - 1) / kColumnBlock;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t d0 = b * kColumnBlock;
    param_grad_block(x, mean, rstd, dy, dgamma, dbeta, N, D, d0, std::min(kColumnBlock, D - d0));
  }
}

} // namespace pillars::cpu
