// See xray.h for the definitions. Implementation plan:
//   * gather the valid rows of q (or out) once, as an N × (H·D) matrix X of doubles;
//   * S = XᵀX, the (H·D) × (H·D) cross-Gram: its D × D block (i, j) is Q_iᵀ Q_j, so (1) and (2)
//     for all pairs, and the norms ‖Q_i‖²_F = trace of block (i, i), come from one matrix;
//   * (3) and (4) are per-token / per-row sums.
// The loops over the data are the kernels of kernels/cpu/xray.h (and head_gram_f64 of
// kernels/cpu/head_gram.h); this file says which sums make each metric and normalizes them.
// Everything is accumulated in double.
#include "ght/xray.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/error.h"
#include "kernels/cpu/head_gram.h"
#include "kernels/cpu/xray.h"

namespace pillars::ght {

// (FeatureMap and its names live in ght/settings.h.)

namespace {

constexpr double kEps = 1e-8; // PyTorch's cosine-similarity epsilon

struct Dims {
  int64_t B = 0, Tq = 0, Tk = 0, H = 0, D = 0;
};

void check_lengths(const std::vector<int32_t>& lengths, int64_t B, int64_t T, const char* what) {
  PILLARS_CHECK(static_cast<int64_t>(lengths.size()) == B, "xray: ", what, " has ", lengths.size(),
                " entries for a batch of ", B);
  for (int32_t L : lengths) PILLARS_CHECK(L >= 0 && L <= T, "xray: ", what, " ", L, " is outside [0, ", T, "]");
}

// The shapes of the four tensors must agree: q, out (B, Tq, H, D), v (B, Tk, H, D), probs (B, H, Tq, Tk).
Dims check_shapes(const ModuleTensors& t) {
  PILLARS_CHECK(t.q.rank() == 4 && t.v.rank() == 4 && t.out.rank() == 4 && t.probs.rank() == 4,
                "xray: q, v, out and probs must be rank 4, got ", shape_str(t.q.shape()), " ", shape_str(t.v.shape()),
                " ", shape_str(t.out.shape()), " ", shape_str(t.probs.shape()));
  Dims d{t.q.dim(0), t.q.dim(1), t.v.dim(1), t.q.dim(2), t.q.dim(3)};
  PILLARS_CHECK(t.out.shape() == t.q.shape(), "xray: out ", shape_str(t.out.shape()), " differs from q ",
                shape_str(t.q.shape()));
  PILLARS_CHECK(t.v.shape() == Shape({d.B, d.Tk, d.H, d.D}), "xray: v ", shape_str(t.v.shape()), " does not fit q ",
                shape_str(t.q.shape()));
  PILLARS_CHECK(t.probs.shape() == Shape({d.B, d.H, d.Tq, d.Tk}), "xray: probs ", shape_str(t.probs.shape()),
                " is not (B, H, Tq, Tk) = ", shape_str({d.B, d.H, d.Tq, d.Tk}));
  check_lengths(t.query_lengths, d.B, d.Tq, "query_lengths");
  check_lengths(t.key_lengths, d.B, d.Tk, "key_lengths");
  return d;
}

// The valid rows of a per-head map x (B, T, H, D) as an N × M matrix, M = H·D: row n holds the
// H·D values of the n-th valid position (batch-major order), column h·D + d coordinate d of head h.
struct ValidRows {
  int64_t N = 0, M = 0;
  std::vector<double> data; // (N, M)
};

ValidRows valid_rows(const Tensor& x, const std::vector<int32_t>& lengths) {
  const int64_t B = x.dim(0), T = x.dim(1);
  ValidRows v;
  v.M = x.dim(2) * x.dim(3);
  for (int32_t L : lengths) v.N += L;
  v.data.reserve(static_cast<size_t>(v.N * v.M));
  const float* p = x.data<float>();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < lengths[static_cast<size_t>(b)]; ++t) {
      const float* row = p + (b * T + t) * v.M;
      v.data.insert(v.data.end(), row, row + v.M);
    }
  return v;
}

// a / b, and 0 when b is 0 (a head that is all zero is orthogonal to everything).
double ratio(double a, double b) { return b > 0 ? a / b : 0.0; }

// (1) or (2) for all pairs from the cross-Gram of one map: raw and normalized H × H matrices.
// orthogonality: entrywise L1, normalized by D‖X_i‖‖X_j‖; otherwise Frobenius, normalized by ‖X_i‖‖X_j‖.
void pair_norms(const ValidRows& x, int64_t H, int64_t D, bool orthogonality, std::vector<double>& raw,
                std::vector<double>& norm) {
  std::vector<double> S(static_cast<size_t>(x.M * x.M)); // XᵀX
  cpu::xray_cross_gram({.N = x.N, .M = x.M}, x.data.data(), S.data());
  const size_t HH = static_cast<size_t>(H * H);
  std::vector<double> abs_sum(HH), frobenius(HH), trace(HH); // of each D × D block X_iᵀ X_j
  cpu::xray_block_norms({.H = H, .D = D}, S.data(), abs_sum.data(), frobenius.data(), trace.data());
  std::vector<double> head_norm(static_cast<size_t>(H)); // ‖X_h‖_F
  for (int64_t h = 0; h < H; ++h) head_norm[static_cast<size_t>(h)] = std::sqrt(trace[static_cast<size_t>(h * H + h)]);
  raw.assign(HH, 0.0);
  norm.assign(HH, 0.0);
  for (int64_t i = 0; i < H; ++i)
    for (int64_t j = 0; j < H; ++j) {
      const size_t ij = static_cast<size_t>(i * H + j);
      const double value = orthogonality ? abs_sum[ij] : frobenius[ij];
      const double scale = (orthogonality ? static_cast<double>(D) : 1.0) * head_norm[static_cast<size_t>(i)] *
                           head_norm[static_cast<size_t>(j)];
      raw[ij] = value;
      norm[ij] = ratio(value, scale);
    }
}

// (3): dis_ij = −mean_n cos(o_i(n), o_j(n)) over the valid query tokens.
std::vector<double> output_dissimilarity(const ValidRows& o, int64_t H, int64_t D) {
  std::vector<double> cos_sum(static_cast<size_t>(H * H)); // upper triangle
  cpu::xray_cosine_sums({.N = o.N, .H = H, .D = D, .eps = kEps}, o.data.data(), cos_sum.data());
  std::vector<double> dis(static_cast<size_t>(H * H));
  for (int64_t i = 0; i < H; ++i)
    for (int64_t j = i; j < H; ++j)
      dis[static_cast<size_t>(i * H + j)] = dis[static_cast<size_t>(j * H + i)] =
          -cos_sum[static_cast<size_t>(i * H + j)] / static_cast<double>(o.N);
  return dis;
}

cpu::XrayProbsArgs probs_args(const ModuleTensors& t, const Dims& d) {
  return {.B = d.B, .H = d.H, .Tq = d.Tq, .Tk = d.Tk, .causal = t.causal};
}

// (4): per head, the mean over valid query rows of the population variance over the valid keys.
std::vector<double> attention_variance(const ModuleTensors& t, const Dims& d) {
  std::vector<double> sum(static_cast<size_t>(d.H));
  std::vector<int64_t> rows(static_cast<size_t>(d.H));
  cpu::xray_attention_variance(probs_args(t, d), t.probs.data<float>(), t.query_lengths.data(), t.key_lengths.data(),
                               sum.data(), rows.data());
  std::vector<double> var(static_cast<size_t>(d.H));
  for (size_t h = 0; h < var.size(); ++h)
    var[h] = rows[h] > 0 ? sum[h] / static_cast<double>(rows[h]) : std::numeric_limits<double>::quiet_NaN();
  return var;
}

// G_ij = Σ over valid positions and features of x_i · x_j, for x (B, T, H, D): the Gram matrix of
// ops::head_gram (engine/ops/head_gram.h), computed here in float64 from the fetched tensor, as
// every X-Raying metric is, rather than by the float32 graph op that training differentiates.
std::vector<double> positions_gram(const Tensor& x, const std::vector<int32_t>& lengths) {
  const ValidRows v = valid_rows(x, lengths);
  const int64_t H = x.dim(2), D = x.dim(3);
  std::vector<double> G(static_cast<size_t>(H * H));
  cpu::head_gram_f64({.N = v.N, .H = H, .D = D}, v.data.data(), G.data());
  return G;
}

// G_ij = Σ over valid query rows and their valid keys of a_i · a_j, for probs (B, H, Tq, Tk).
// (Keys hidden by the causal mask have weight 0 in every head, so they add nothing either way.)
std::vector<double> probs_gram(const ModuleTensors& t, const Dims& d) {
  std::vector<double> G(static_cast<size_t>(d.H * d.H));
  cpu::xray_probs_gram(probs_args(t, d), t.probs.data<float>(), t.query_lengths.data(), t.key_lengths.data(), G.data());
  return G;
}

double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? std::numeric_limits<double>::quiet_NaN() : s / static_cast<double>(v.size());
}

} // namespace

double mean_over_pairs(const std::vector<double>& M, int64_t H) {
  PILLARS_CHECK(static_cast<int64_t>(M.size()) == H * H, "mean_over_pairs: ", M.size(), " entries for H = ", H);
  if (H < 2) return std::numeric_limits<double>::quiet_NaN();
  double s = 0;
  for (int64_t i = 0; i < H; ++i)
    for (int64_t j = i + 1; j < H; ++j) s += M[static_cast<size_t>(i * H + j)];
  return s / static_cast<double>(H * (H - 1) / 2);
}

std::vector<double> cosine_from_gram(const std::vector<double>& G, int64_t H) {
  PILLARS_CHECK(static_cast<int64_t>(G.size()) == H * H, "cosine_from_gram: ", G.size(), " entries for H = ", H);
  std::vector<double> cos(G.size());
  for (int64_t i = 0; i < H; ++i)
    for (int64_t j = 0; j < H; ++j) {
      const double norms = G[static_cast<size_t>(i * H + i)] * G[static_cast<size_t>(j * H + j)];
      cos[static_cast<size_t>(i * H + j)] = G[static_cast<size_t>(i * H + j)] / std::sqrt(std::max(norms, kEps * kEps));
    }
  return cos;
}

XrayMetrics xray(const ModuleTensors& t) {
  const Dims d = check_shapes(t);
  const ValidRows q = valid_rows(t.q, t.query_lengths);
  PILLARS_CHECK(q.N > 0, "xray: the batch has no valid query token");
  const ValidRows o = valid_rows(t.out, t.query_lengths);

  XrayMetrics m;
  m.heads = d.H;
  pair_norms(q, d.H, d.D, /*orthogonality=*/true, m.orthogonality, m.orthogonality_norm);
  pair_norms(o, d.H, d.D, /*orthogonality=*/false, m.context_nonorth, m.context_nonorth_norm);
  m.output_dissimilarity = output_dissimilarity(o, d.H, d.D);
  m.attention_variance = attention_variance(t, d);

  m.orthogonality_mean = mean_over_pairs(m.orthogonality, d.H);
  m.orthogonality_norm_mean = mean_over_pairs(m.orthogonality_norm, d.H);
  m.context_nonorth_mean = mean_over_pairs(m.context_nonorth, d.H);
  m.context_nonorth_norm_mean = mean_over_pairs(m.context_nonorth_norm, d.H);
  m.output_dissimilarity_mean = mean_over_pairs(m.output_dissimilarity, d.H);
  m.attention_variance_mean = mean_of(m.attention_variance);
  return m;
}

std::vector<double> feature_gram(const ModuleTensors& t, FeatureMap f) {
  const Dims d = check_shapes(t);
  switch (f) {
    case FeatureMap::V:
      return positions_gram(t.v, t.key_lengths);
    case FeatureMap::O:
      return positions_gram(t.out, t.query_lengths);
    case FeatureMap::A:
      return probs_gram(t, d);
  }
  throw Error("feature_gram: unknown feature map");
}

} // namespace pillars::ght
