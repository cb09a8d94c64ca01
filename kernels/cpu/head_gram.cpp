// See head_gram.h.
#include "kernels/cpu/head_gram.h"

#include <algorithm>

#include "base/error.h"
#include "base/parallel.h"

namespace pillars::cpu {
namespace {

constexpr int64_t kGramChunk = 32; // tokens per partial Gram matrix

struct GramView {
  int64_t B, T, H, D;
  const int32_t* lengths; // nullable
  bool valid(int64_t token) const { return !lengths || token % T < lengths[token / T]; }
  int64_t tokens() const { return B * T; }
};

// partial (H, H), upper triangle: Σ over the valid tokens of [t0, t1) of x_t x_tᵀ.
void gram_chunk(const GramView& v, const float* x, int64_t t0, int64_t t1, double* partial) {
  std::fill(partial, partial + v.H * v.H, 0.0);
  for (int64_t t = t0; t < t1; ++t) {
    if (!v.valid(t)) continue;
    const float* xt = x + t * v.H * v.D;
    for (int64_t i = 0; i < v.H; ++i)
      for (int64_t j = i; j < v.H; ++j) {
        float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
        for (int64_t d = 0; d < v.D; ++d) dot += xt[i * v.D + d] * xt[j * v.D + d];
        partial[i * v.H + j] += dot;
      }
  }
}

double dot_f64(const double* a, const double* b, int64_t n) {
  double s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

} // namespace

size_t head_gram_workspace(const HeadGramArgs& a) {
  const int64_t B = a.B, T = a.T, H = a.H;
  const int64_t chunks = (B * T + kGramChunk - 1) / kGramChunk;
  return static_cast<size_t>(chunks * H * H) * sizeof(double);
}

void head_gram(const HeadGramArgs& a, const float* x, const int32_t* lengths, float* G, void* workspace) {
  const int64_t B = a.B, T = a.T, H = a.H, D = a.D;
  const GramView v{B, T, H, D, lengths};
  double* partials = static_cast<double*>(workspace);
  const int64_t chunks = (v.tokens() + kGramChunk - 1) / kGramChunk, HH = H * H;
#pragma omp parallel for schedule(static) if (B * T * H * D >= kParallelGrain)
  for (int64_t k = 0; k < chunks; ++k)
    gram_chunk(v, x, k * kGramChunk, std::min(v.tokens(), (k + 1) * kGramChunk), partials + k * HH);
  for (int64_t i = 0; i < H; ++i)
    for (int64_t j = i; j < H; ++j) {
      double sum = 0.0;
      for (int64_t k = 0; k < chunks; ++k) sum += partials[k * HH + i * H + j];
      G[i * H + j] = G[j * H + i] = static_cast<float>(sum);
    }
}

void head_gram_backward(const HeadGramArgs& a, const float* x, const float* dG, const int32_t* lengths, float* dx) {
  const int64_t B = a.B, T = a.T, H = a.H, D = a.D;
  const GramView v{B, T, H, D, lengths};
#pragma omp parallel for schedule(static) if (B * T * H * D >= kParallelGrain)
  for (int64_t t = 0; t < v.tokens(); ++t) {
    const float* xt = x + t * H * D;
    float* dxt = dx + t * H * D;
    std::fill(dxt, dxt + H * D, 0.0f);
    if (!v.valid(t)) continue;
    for (int64_t i = 0; i < H; ++i)
      for (int64_t j = 0; j < H; ++j) {
        const float s = dG[i * H + j] + dG[j * H + i]; // (dG + dGᵀ)[i, j]
#pragma omp simd
        for (int64_t d = 0; d < D; ++d) dxt[i * D + d] += s * xt[j * D + d];
      }
  }
}

void head_gram_check_lengths(const HeadGramArgs& a, const int32_t* lengths) {
  for (int64_t b = 0; b < a.B; ++b)
    PILLARS_CHECK(lengths[b] >= 0 && lengths[b] <= a.T, "head_gram: lengths[", b, "] = ", lengths[b],
                  " is outside [0, ", a.T, "]");
}

void head_gram_f64(const HeadGramRowsArgs& a, const double* rows, double* G) {
  const int64_t N = a.N, H = a.H, D = a.D;
  std::fill(G, G + H * H, 0.0);
  for (int64_t n = 0; n < N; ++n) {
    const double* row = rows + n * H * D; // (H, D)
    for (int64_t i = 0; i < H; ++i)
      for (int64_t j = i; j < H; ++j) G[i * H + j] += dot_f64(row + i * D, row + j * D, D);
  }
  for (int64_t i = 0; i < H; ++i)
    for (int64_t j = 0; j < i; ++j) G[i * H + j] = G[j * H + i];
}

} // namespace pillars::cpu
