// See gct.h; the formulas and their derivatives are written out in ght/ops.cpp.
#include "kernels/cpu/gct.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "base/error.h"
#include "base/parallel.h"

namespace pillars::cpu {
namespace {

// f = p / sqrt(max(A·B, eps²)) and its partial derivatives (clamped: only ∂f/∂p = 1/eps).
struct Cosine {
  double f, dp, dA, dB;
};
Cosine cosine_with_partials(double p, double A, double B, double eps) {
  if (A * B <= eps * eps) return {p / eps, 1 / eps, 0, 0};
  const double n = std::sqrt(A * B), f = p / n;
  return {f, 1 / n, -f / (2 * A), -f / (2 * B)};
}

// ---- gct_metric_loss ----

// The workspace of the metric loss and its backward: the block sums of the formulas, then
// (backward) the gradient coefficients. All double.
struct GroupSums {
  int k, C;
  double* n;     // (C)     members per group
  double* S;     // (C, C)  block sums S_ab
  double* r;     // (k)     r_i
  double* block; // (C, C)  backward: block coefficients
  double* row;   // (k)     backward: row_i
  double* diag;  // (k)     backward: diag_i
  static size_t doubles(int64_t k, int64_t C) { return static_cast<size_t>(2 * C * C + C + 3 * k); }
  GroupSums(void* workspace, int k_, int C_) : k(k_), C(C_) {
    double* p = static_cast<double*>(workspace);
    n = p, S = n + C, r = S + C * C, block = r + k, row = block + C * C, diag = row + k;
    std::fill(p, p + doubles(k, C), 0.0);
  }
  double M(int a) const { return S[a * C + a] / (n[a] * n[a]); }        // ‖μ_a‖²
  double Q(int a, int b) const { return S[a * C + b] / (n[a] * n[b]); } // ⟨μ_a, μ_b⟩
};

void sum_blocks(GroupSums& s, const float* G, const int32_t* c) {
  for (int i = 0; i < s.k; ++i) {
    s.n[c[i]] += 1;
    for (int j = 0; j < s.k; ++j) {
      const double gij = G[i * s.k + j];
      s.S[c[i] * s.C + c[j]] += gij;
      if (c[j] == c[i]) s.r[i] += gij;
    }
  }
}

int nonempty_pairs(const GroupSums& s) {
  int m = 0;
  for (int a = 0; a < s.C; ++a) m += s.n[a] > 0 ? 1 : 0;
  return m * (m - 1) / 2;
}

// hom and div from the block sums; also accumulates the gradient coefficients (row, diag, block)
// of w_h·hom + w_d·div (zero in the forward, which ignores them).
struct Terms {
  double hom = 0, div = 0;
};
Terms metric_terms(GroupSums& s, const float* G, const int32_t* c, double eps, double w_h = 0, double w_d = 0) {
  Terms t;
  for (int i = 0; i < s.k; ++i) {
    const int a = c[i];
    const Cosine f = cosine_with_partials(s.r[i] / s.n[a], G[i * s.k + i], s.M(a), eps);
    t.hom += f.f / s.k;
    const double w = w_h / s.k;
    s.row[i] += w * f.dp / s.n[a], s.diag[i] += w * f.dA, s.block[a * s.C + a] += w * f.dB;
  }
  const int pairs = nonempty_pairs(s);
  for (int a = 0; a < s.C; ++a)
    for (int b = a + 1; b < s.C; ++b) {
      if (s.n[a] == 0 || s.n[b] == 0) continue;
      const Cosine f = cosine_with_partials(s.Q(a, b), s.M(a), s.M(b), eps);
      t.div += f.f / pairs;
      const double w = w_d / pairs;
      s.block[a * s.C + b] += w * f.dp, s.block[a * s.C + a] += w * f.dA, s.block[b * s.C + b] += w * f.dB;
    }
  return t;
}

// ---- gct_classification_loss ----

// log Σ_{u ≠ skip} exp z_u over the C logits of one head (skip = −1: all of them), in double.
// Needs at least one logit left (C ≥ 2 when skip ≥ 0).
double log_sum_exp(const float* z, int C, int skip = -1) {
  double m = -std::numeric_limits<double>::infinity(), s = 0;
  for (int u = 0; u < C; ++u)
    if (u != skip) m = std::max(m, static_cast<double>(z[u]));
  for (int u = 0; u < C; ++u)
    if (u != skip) s += std::exp(z[u] - m);
  return m + std::log(s);
}

// R_i of one head: α·(lse − z_y) − β/(C−1)·Σ_{v≠y} (L_v − lse).
double classification_head_loss(const float* z, int C, int y, double alpha, double beta) {
  const double lse = log_sum_exp(z, C);
  double log_not = 0; // Σ_{v≠y} log(1 − p_v)
  for (int v = 0; v < C; ++v)
    if (v != y) log_not += log_sum_exp(z, C, v) - lse;
  return alpha * (lse - z[y]) - (C > 1 ? beta / (C - 1) * log_not : 0.0);
}

} // namespace

size_t gct_metric_workspace(int64_t k, int64_t C) { return GroupSums::doubles(k, C) * sizeof(double); }

void gct_metric_loss(const GctMetricArgs& a, float* R, float* hom, float* div) {
  GroupSums s(a.workspace, a.k, a.C);
  sum_blocks(s, a.G, a.labels);
  const Terms t = metric_terms(s, a.G, a.labels, a.eps);
  *R = static_cast<float>(-a.alpha * t.hom + a.beta * t.div);
  *hom = static_cast<float>(t.hom);
  *div = static_cast<float>(t.div);
}

// dG_ij = [c(i) = c(j)]·row_i + [i = j]·diag_i + block_{c(i) c(j)} / (n_c(i) n_c(j)).
void gct_metric_loss_backward(const GctMetricArgs& a, double dR, double dhom, double ddiv, float* dG) {
  GroupSums s(a.workspace, a.k, a.C);
  sum_blocks(s, a.G, a.labels);
  metric_terms(s, a.G, a.labels, a.eps, -a.alpha * dR + dhom, a.beta * dR + ddiv);
  for (int i = 0; i < s.k; ++i)
    for (int j = 0; j < s.k; ++j) {
      const int ga = a.labels[i], gb = a.labels[j];
      double d = s.block[ga * s.C + gb] / (s.n[ga] * s.n[gb]);
      if (ga == gb) d += s.row[i];
      if (i == j) d += s.diag[i];
      dG[i * s.k + j] = static_cast<float>(d);
    }
}

size_t head_mean_workspace(int64_t H, int64_t D) { return static_cast<size_t>(H * D) * sizeof(double); }

// Token t = b·T + s is valid when s < lengths[b].
static bool valid(const HeadMeanArgs& a, int64_t token) { return !a.lengths || token % a.T < a.lengths[token / a.T]; }

static int64_t valid_tokens(const HeadMeanArgs& a) {
  if (!a.lengths) return a.B * a.T;
  int64_t n = 0;
  for (int64_t b = 0; b < a.B; ++b) n += a.lengths[b];
  return n;
}

void head_mean(const HeadMeanArgs& a, const float* x, float* y, void* workspace) {
  const int64_t HD = a.H * a.D;
  double* sum = static_cast<double*>(workspace);
  std::fill(sum, sum + HD, 0.0);
  for (int64_t t = 0; t < a.B * a.T; ++t)
    if (valid(a, t))
      for (int64_t e = 0; e < HD; ++e) sum[e] += x[t * HD + e];
  const int64_t N = valid_tokens(a);
  for (int64_t e = 0; e < HD; ++e) y[e] = N ? static_cast<float>(sum[e] / static_cast<double>(N)) : 0.0f;
}

void head_mean_backward(const HeadMeanArgs& a, const float* dy, float* dx) {
  const int64_t HD = a.H * a.D, N = valid_tokens(a);
  const float inv = N ? static_cast<float>(1.0 / static_cast<double>(N)) : 0.0f;
#pragma omp parallel for schedule(static) if (a.B * a.T * HD >= kParallelGrain)
  for (int64_t t = 0; t < a.B * a.T; ++t)
    for (int64_t e = 0; e < HD; ++e) dx[t * HD + e] = valid(a, t) ? dy[e] * inv : 0.0f;
}

void gct_classification_loss(const GctClassificationArgs& a, float* R) {
  double sum = 0;
  for (int i = 0; i < a.k; ++i) sum += classification_head_loss(a.logits + i * a.C, a.C, a.labels[i], a.alpha, a.beta);
  *R = static_cast<float>(sum / a.k);
}

// dz_iu = s·[α·(p_u − [u = y]) + β·p_u − b·Σ_{v∉{y,u}} exp(z_u − L_v)], s = dR/k, b = β/(C−1).
void gct_classification_loss_backward(const GctClassificationArgs& a, double dR, float* dz) {
  const int k = a.k, C = a.C;
  const int32_t* y = a.labels;
  const double alpha = a.alpha, beta = C > 1 ? a.beta : 0.0, b = C > 1 ? a.beta / (C - 1) : 0.0;
  const double s = dR / static_cast<double>(k);
  std::vector<double> L(static_cast<size_t>(C)); // L_v, the log-sum-exp without v (v ≠ y)
  for (int i = 0; i < k; ++i) {
    const float* zi = a.logits + i * C;
    const double lse = log_sum_exp(zi, C);
    for (int v = 0; v < C; ++v)
      if (v != y[i]) L[v] = log_sum_exp(zi, C, v);
    for (int u = 0; u < C; ++u) {
      const double pu = std::exp(zi[u] - lse);
      double others = 0; // Σ_{v ∉ {y, u}} q_vu
      for (int v = 0; v < C; ++v)
        if (v != y[i] && v != u) others += std::exp(zi[u] - L[v]);
      dz[i * C + u] = static_cast<float>(s * (alpha * (pu - (u == y[i] ? 1.0 : 0.0)) + beta * pu - b * others));
    }
  }
}

void mean_pairwise_cosine(const PairwiseCosineArgs& a, float* D) {
  const int64_t H = a.H;
  const float* G = a.G;
  double sum = 0;
  for (int64_t i = 0; i < H; ++i)
    for (int64_t j = 0; j < H; ++j)
      if (i != j)
        sum +=
            static_cast<double>(G[i * H + j]) /
            std::sqrt(std::max(static_cast<double>(G[i * H + i]) * static_cast<double>(G[j * H + j]), a.eps * a.eps));
  *D = H > 1 ? static_cast<float>(sum / static_cast<double>(H * (H - 1))) : 0.0f;
}

// dG_ij += s/sqrt(G_ii G_jj), dG_ii −= s·cos_ij/(2 G_ii), dG_jj −= s·cos_ij/(2 G_jj), s = dD/(H(H−1));
// the diagonal collects from every pair of its row and column, in double (the workspace).
void mean_pairwise_cosine_backward(const PairwiseCosineArgs& a, double dD, float* dG) {
  const int64_t H = a.H;
  const float* G = a.G;
  double* diag = static_cast<double*>(a.workspace);
  std::fill(diag, diag + H, 0.0);
  const double s = H > 1 ? dD / static_cast<double>(H * (H - 1)) : 0.0;
  for (int64_t i = 0; i < H; ++i)
    for (int64_t j = 0; j < H; ++j) {
      if (i == j) continue;
      const Cosine f = cosine_with_partials(G[i * H + j], G[i * H + i], G[j * H + j], a.eps);
      dG[i * H + j] = static_cast<float>(s * f.dp);
      diag[i] += s * f.dA, diag[j] += s * f.dB;
    }
  for (int64_t i = 0; i < H; ++i) dG[i * H + i] = static_cast<float>(diag[i]);
}

// ---- input checks ----

void gct_check_labels(const GctLabelsArgs& a, const int32_t* labels) {
  for (int64_t i = 0; i < a.n; ++i)
    PILLARS_CHECK(labels[i] >= 0 && labels[i] < a.C, a.op, ": labels[", i, "] = ", labels[i], " is outside [0, ", a.C,
                  ")");
}

void head_mean_check_lengths(const HeadMeanArgs& a) {
  for (int64_t b = 0; a.lengths && b < a.B; ++b)
    PILLARS_CHECK(a.lengths[b] >= 0 && a.lengths[b] <= a.T, "head_mean: lengths[", b, "] = ", a.lengths[b],
                  " is outside [0, ", a.T, "]");
}

} // namespace pillars::cpu
