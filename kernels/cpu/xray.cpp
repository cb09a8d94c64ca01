// See xray.h; the metrics built from these sums are defined in ght/xray.h.
#include "kernels/cpu/xray.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/vec_math.h" // PILLARS_PER_ISA

namespace pillars::cpu {
namespace {

// Rows [r0, r0 + R) of S += XᵀX, right of the diagonal only (columns c ≥ r0):
//   S[r][c] += Σ_n X[n][r] · X[n][c]
// Each token's row of X is read once for R rows of S, and the inner loop runs along a row of S
// (independent sums, so it vectorizes without reassociating anything).
PILLARS_VEC_INLINE void gram_rows_body(const double* X, int64_t N, int64_t M, int64_t r0, int64_t R, double* S) {
  for (int64_t n = 0; n < N; ++n) {
    const double* x = X + n * M;
    for (int64_t k = 0; k < R; ++k) {
      const double a = x[r0 + k];
      double* s = S + (r0 + k) * M;
      for (int64_t c = r0; c < M; ++c) s[c] += a * x[c];
    }
  }
}
PILLARS_PER_ISA(void, gram_rows, (const double* X, int64_t N, int64_t M, int64_t r0, int64_t R, double* S),
                (X, N, M, r0, R, S))

// ⟨a, b⟩ over n entries.
double dot(const double* a, const double* b, int64_t n) {
  double s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

// The valid keys of query row `row` of batch row b are [0, key_end).
int64_t key_end(const XrayProbsArgs& a, const int32_t* key_lengths, int64_t b, int64_t row) {
  int64_t end = key_lengths[b];
  if (a.causal) end = std::min(end, row + a.Tk - a.Tq + 1);
  return std::max<int64_t>(end, 0);
}

} // namespace

void xray_cross_gram(const XrayCrossGramArgs& a, const double* X, double* S) {
  constexpr int64_t kRows = 8; // rows of S per task: 8 rows of 4 KB for a base module stay in cache
  const int64_t N = a.N, M = a.M;
  std::fill(S, S + M * M, 0.0);
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t r0 = 0; r0 < M; r0 += kRows) gram_rows(X, N, M, r0, std::min(kRows, M - r0), S);
  for (int64_t r = 0; r < M; ++r) // mirror: entries left of the diagonal
    for (int64_t c = r + 1; c < M; ++c) S[c * M + r] = S[r * M + c];
}

void xray_block_norms(const XrayBlockNormsArgs& a, const double* S, double* abs_sum, double* frobenius, double* trace) {
  const int64_t H = a.H, D = a.D, M = H * D;
  for (int64_t i = 0; i < H; ++i)
    for (int64_t j = 0; j < H; ++j) {
      double abs = 0, sq = 0, tr = 0;
      for (int64_t d = 0; d < D; ++d)
        for (int64_t e = 0; e < D; ++e) {
          const double s = S[(i * D + d) * M + j * D + e];
          abs += std::abs(s);
          sq += s * s;
          if (d == e) tr += s;
        }
      abs_sum[i * H + j] = abs;
      frobenius[i * H + j] = std::sqrt(sq);
      trace[i * H + j] = tr;
    }
}

void xray_cosine_sums(const XrayCosineSumsArgs& a, const double* X, double* C) {
  const int64_t N = a.N, H = a.H, D = a.D;
  std::fill(C, C + H * H, 0.0);
  std::vector<double> sq(static_cast<size_t>(H)); // ‖x_h(n)‖²
  for (int64_t n = 0; n < N; ++n) {
    const double* x = X + n * H * D; // (H, D)
    for (int64_t h = 0; h < H; ++h) sq[static_cast<size_t>(h)] = dot(x + h * D, x + h * D, D);
    for (int64_t i = 0; i < H; ++i)
      for (int64_t j = i; j < H; ++j) {
        const double norms = sq[static_cast<size_t>(i)] * sq[static_cast<size_t>(j)];
        C[i * H + j] += dot(x + i * D, x + j * D, D) / std::sqrt(std::max(norms, a.eps * a.eps));
      }
  }
}

void xray_attention_variance(const XrayProbsArgs& a, const float* probs, const int32_t* query_lengths,
                             const int32_t* key_lengths, double* var_sum, int64_t* rows) {
  for (int64_t h = 0; h < a.H; ++h) {
    double sum = 0;
    int64_t count = 0;
    for (int64_t b = 0; b < a.B; ++b)
      for (int64_t r = 0; r < query_lengths[b]; ++r) {
        const int64_t K = key_end(a, key_lengths, b, r);
        if (K == 0) continue; // a row that sees no key has no distribution
        const float* row = probs + ((b * a.H + h) * a.Tq + r) * a.Tk;
        double mean = 0;
        for (int64_t j = 0; j < K; ++j) mean += row[j];
        mean /= static_cast<double>(K);
        double ss = 0;
        for (int64_t j = 0; j < K; ++j) ss += (row[j] - mean) * (row[j] - mean);
        sum += ss / static_cast<double>(K);
        ++count;
      }
    var_sum[h] = sum;
    rows[h] = count;
  }
}

void xray_probs_gram(const XrayProbsArgs& a, const float* probs, const int32_t* query_lengths,
                     const int32_t* key_lengths, double* G) {
  const int64_t H = a.H, Tq = a.Tq, Tk = a.Tk;
  std::fill(G, G + H * H, 0.0);
  for (int64_t b = 0; b < a.B; ++b)
    for (int64_t r = 0; r < query_lengths[b]; ++r) {
      const int64_t K = key_lengths[b];
      for (int64_t i = 0; i < H; ++i) {
        const float* ai = probs + ((b * H + i) * Tq + r) * Tk;
        for (int64_t j = i; j < H; ++j) {
          const float* aj = probs + ((b * H + j) * Tq + r) * Tk;
          double s = 0;
          for (int64_t k = 0; k < K; ++k) s += static_cast<double>(ai[k]) * aj[k];
          G[i * H + j] += s;
        }
      }
    }
  for (int64_t i = 0; i < H; ++i)
    for (int64_t j = 0; j < i; ++j) G[i * H + j] = G[j * H + i];
}

} // namespace pillars::cpu
