// The GHT graph ops (docs/METHOD.md §2, §4, §6), each with its fused backward op. Sizes: k = H
// heads, C groups; everything of size k or C is tiny, so the kernels work in double and serially
// (head_mean, which reads a whole feature map, is the exception).
//
// huds_cluster: G (H, H) f32 → labels i32 (H)                HudsClusterParams {C, seed}
//   labels = kmeans_gram(G, H, C, seed + run seed) (ght/kmeans.h). No gradient.
//
// gct_metric_loss: G (H, H) f32, labels i32 (H) → R, hom, div (scalars)
//                                                       GctMetricParams {C, α, β}
//   With the groups' block sums  n_a = |a|,  S_ab = Σ_{i∈a, j∈b} G_ij,  r_i = Σ_{j∈c(i)} G_ij:
//     ‖μ_a‖² = M_a = S_aa / n_a²,   ⟨e_i, μ_c(i)⟩ = P_i = r_i / n_c(i),   ⟨μ_a, μ_b⟩ = Q_ab = S_ab / (n_a n_b)
//     cos(x, y) = ⟨x, y⟩ / sqrt(max(‖x‖²‖y‖², eps²))       (clamped_cosine, eps = kCosineEps)
//     hom = (1/k) Σ_i cos_i,        cos_i  = P_i  / sqrt(max(G_ii · M_c(i), eps²))
//     div = (1/|pairs|) Σ_{a<b} cos_ab, cos_ab = Q_ab / sqrt(max(M_a · M_b, eps²))
//           (pairs of non-empty groups; div = 0 without any)
//     R   = − α · hom + β · div
//   Gradient, labels fixed, each G_ij a separate variable in the formulas as written (dG is not
//   symmetric; head_gram's backward adds dG + dGᵀ). With w_h = −α·dR + dhom, w_d = β·dR + ddiv, and
//   for f = p / sqrt(max(A·B, eps²)): ∂f/∂p = 1/sqrt(A·B), ∂f/∂A = −f/(2A), ∂f/∂B = −f/(2B)
//   (clamped: ∂f/∂p = 1/eps and ∂f/∂A = ∂f/∂B = 0):
//     from cos_i (weight w_h/k):       row_i   += ∂f/∂p / n_c(i)   (→ dG_ij for j ∈ c(i))
//                                      diag_i  += ∂f/∂A             (→ dG_ii)
//                                      block_cc += ∂f/∂B            (→ dG_jj' / n_c² for j, j' ∈ c)
//     from cos_ab (weight w_d/|pairs|): block_ab += ∂f/∂p, block_aa += ∂f/∂A, block_bb += ∂f/∂B
//     dG_ij = [c(i) = c(j)]·row_i + [i = j]·diag_i + block_{c(i) c(j)} / (n_c(i) n_c(j))
//                                                 → op gct_metric_loss_backward(G, labels, dR, dhom, ddiv)
//
// head_mean: x (B, T, H, D) f32, lengths i32 (B) or none → y (H, D)
//   y[h, d] = (1/N) Σ_{b, t < len_b} x[b, t, h, d],  N = Σ_b len_b  (y = 0 when N = 0)
//   dx[b, t, h, d] = dy[h, d] / N for t < len_b, 0 on padding.
//                    → op head_mean_backward(dy [, lengths]), HeadMeanBackwardParams {x's shape}
//
// gct_classification_loss: logits z (H, C) f32, labels y i32 (H) → R (scalar)
//                                                                   GctClassificationParams {α, β}
//   Per head i (row z = z_i, own group y = y_i), with p = softmax(z) and the log-sum-exps
//     lse = log Σ_u exp z_u,        L_v = log Σ_{u ≠ v} exp z_u      (the softmax without group v)
//     CE_i       = lse − z_y                                          = −log p_y
//     log(1−p_v) = L_v − lse              (exact: 1 − p_v = Σ_{u≠v} exp z_u / Σ_u exp z_u; stable
//                                          as p_v → 1, where 1 − p_v would cancel)
//     R_i = α·CE_i − b·Σ_{v ≠ y} log(1 − p_v),   b = β/(C−1)   (b = 0 and no such v when C = 1)
//   R = (1/k) Σ_i R_i. Both terms are ≥ 0 and fall towards 0 as p_y → 1 (p_v → 0 for v ≠ y): the
//   β term pushes the head away from each other group, bounded (the literal −Σ log p_v is not).
//   With C = 2, 1 − p_v = p_y and R_i = (α+β)·CE_i.
//   Gradient. ∂lse/∂z_u = p_u, ∂L_v/∂z_u = [u ≠ v]·q_vu with q_vu = exp(z_u − L_v) = p_u/(1 − p_v)
//   (the softmax over the groups other than v), so
//     ∂CE_i/∂z_u        = p_u − [u = y]
//     ∂log(1−p_v)/∂z_u  = [u ≠ v]·q_vu − p_u
//     dz_iu = (dR/k)·[ α·(p_u − [u = y]) + b·Σ_{v≠y} (p_u − [u ≠ v]·q_vu) ]
//           = (dR/k)·[ α·(p_u − [u = y]) + β·p_u − b·Σ_{v ∉ {y, u}} q_vu ]          (C > 1)
//   (Σ_u dz_iu = 0: Σ_u q_vu over u ≠ v is 1, so the β parts cancel, as a shift of z_i changes nothing.)
//                                                 → op gct_classification_loss_backward(z, y, dR)
//
// mean_pairwise_cosine: G (H, H) f32 → D (scalar)
//   D = 1/(H(H−1)) Σ_{i ≠ j} cos_ij,  cos_ij = G_ij / sqrt(max(G_ii G_jj, eps²))   (0 when H = 1)
//   dG_ij += s/sqrt(G_ii G_jj), dG_ii −= s·cos_ij/(2 G_ii), dG_jj −= s·cos_ij/(2 G_jj),
//   s = dD/(H(H−1)) (clamped pairs: dG_ij += s/eps only).
//                                                 → op mean_pairwise_cosine_backward(G, dD)
#include "ght/ops.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "engine/ops/common.h"
#include "engine/ops/elementwise.h"
#include "ght/kmeans.h"

namespace pillars::ght {
namespace {

using ops::detail::kParallelGrain;

// ---- shared checks and the clamped cosine's partial derivatives --------------------------------

int64_t check_gram(const Graph& g, const char* op, ValueId gram) {
  const Shape& s = g.shape(gram);
  PILLARS_CHECK(g.dtype(gram) == DType::f32 && s.size() == 2 && s[0] == s[1] && s[0] >= 1, op,
                ": G must be f32 (H, H), got ", dtype_name(g.dtype(gram)), shape_str(s));
  return s[0];
}

void check_labels(const Graph& g, const char* op, ValueId labels, int64_t H) {
  PILLARS_CHECK(g.dtype(labels) == DType::i32 && g.shape(labels) == Shape{H}, op, ": labels must be i32 of shape [",
                H, "], got ", dtype_name(g.dtype(labels)), shape_str(g.shape(labels)));
}

void check_scalar(const Graph& g, const char* op, ValueId v) {
  PILLARS_CHECK(g.dtype(v) == DType::f32 && g.shape(v).empty(), op, ": expects an f32 scalar gradient, got ",
                dtype_name(g.dtype(v)), shape_str(g.shape(v)));
}


// Labels of a kernel's input, each checked to lie in [0, C).
const int32_t* read_labels(const char* op, const Tensor& t, int C) {
  const int32_t* labels = t.data<int32_t>();
  for (int64_t i = 0; i < t.numel(); ++i)
    PILLARS_CHECK(labels[i] >= 0 && labels[i] < C, op, ": labels[", i, "] = ", labels[i], " is outside [0, ", C, ")");
  return labels;
}

// f = p / sqrt(max(A·B, eps²)) and its partial derivatives (clamped: only ∂f/∂p = 1/eps).
struct Cosine {
  double f, dp, dA, dB;
};
Cosine cosine_with_partials(double p, double A, double B) {
  const double eps = kCosineEps;
  if (A * B <= eps * eps) return {p / eps, 1 / eps, 0, 0};
  const double n = std::sqrt(A * B), f = p / n;
  return {f, 1 / n, -f / (2 * A), -f / (2 * B)};
}

// ---- huds_cluster --------------------------------------------------------------------------------

std::vector<OutputSpec> infer_huds(const Graph& g, const Node& n) {
  const int64_t H = check_gram(g, "huds_cluster", n.inputs[0]);
  const int64_t groups = params_of<HudsClusterParams>(n).groups;
  PILLARS_CHECK(groups >= 1 && groups <= H, "huds_cluster: ", groups, " groups over ", H, " heads (want 1 <= groups <= heads)");
  return {{Shape{H}, DType::i32}};
}

void cpu_huds(const KernelContext& c) {
  const int k = static_cast<int>(c.in[0].dim(0));
  const float* G = c.in[0].data<float>();
  const std::vector<double> Gd(G, G + k * k);
  const HudsClusterParams& p = params_of<HudsClusterParams>(c.node);
  const Clustering r = kmeans_gram(Gd, k, static_cast<int>(p.groups), p.seed + c.run_seed);
  std::copy(r.labels.begin(), r.labels.end(), c.out[0].data<int32_t>());
}

std::string print_huds(const Node& n) {
  const HudsClusterParams& p = params_of<HudsClusterParams>(n);
  return str_cat(" groups=", p.groups, " seed=", p.seed);
}

const OpDef kHudsCluster{.name = "huds_cluster", .infer = infer_huds, .cpu = cpu_huds, .print = print_huds};

// ---- gct_metric_loss -----------------------------------------------------------------------------

// The workspace of the metric loss and its backward: the block sums of the formulas above, then
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
  double M(int a) const { return S[a * C + a] / (n[a] * n[a]); }       // ‖μ_a‖²
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
Terms metric_terms(GroupSums& s, const float* G, const int32_t* c, double w_h = 0, double w_d = 0) {
  Terms t;
  for (int i = 0; i < s.k; ++i) {
    const int a = c[i];
    const Cosine f = cosine_with_partials(s.r[i] / s.n[a], G[i * s.k + i], s.M(a));
    t.hom += f.f / s.k;
    const double w = w_h / s.k;
    s.row[i] += w * f.dp / s.n[a], s.diag[i] += w * f.dA, s.block[a * s.C + a] += w * f.dB;
  }
  const int pairs = nonempty_pairs(s);
  for (int a = 0; a < s.C; ++a)
    for (int b = a + 1; b < s.C; ++b) {
      if (s.n[a] == 0 || s.n[b] == 0) continue;
      const Cosine f = cosine_with_partials(s.Q(a, b), s.M(a), s.M(b));
      t.div += f.f / pairs;
      const double w = w_d / pairs;
      s.block[a * s.C + b] += w * f.dp, s.block[a * s.C + a] += w * f.dA, s.block[b * s.C + b] += w * f.dB;
    }
  return t;
}

int metric_groups(const Node& n) { return static_cast<int>(params_of<GctMetricParams>(n).groups); }

std::vector<OutputSpec> infer_metric(const Graph& g, const Node& n) {
  const int64_t H = check_gram(g, n.op->name, n.inputs[0]);
  check_labels(g, n.op->name, n.inputs[1], H);
  PILLARS_CHECK(metric_groups(n) >= 1, n.op->name, ": groups must be >= 1, got ", metric_groups(n));
  if (n.inputs.size() == 2) return {{Shape{}, DType::f32}, {Shape{}, DType::f32}, {Shape{}, DType::f32}};
  for (size_t i = 2; i < 5; ++i) check_scalar(g, n.op->name, n.inputs.at(i));
  return {{Shape{H, H}, DType::f32}};
}

size_t workspace_metric(const Graph& g, const Node& n) {
  return GroupSums::doubles(g.shape(n.inputs[0])[0], metric_groups(n)) * sizeof(double);
}

void cpu_metric(const KernelContext& c) {
  const GctMetricParams& p = params_of<GctMetricParams>(c.node);
  GroupSums s(c.workspace, static_cast<int>(c.in[0].dim(0)), static_cast<int>(p.groups));
  const float* G = c.in[0].data<float>();
  const int32_t* labels = read_labels("gct_metric_loss", c.in[1], s.C);
  sum_blocks(s, G, labels);
  const Terms t = metric_terms(s, G, labels);
  const double alpha = p.alpha, beta = p.beta;
  c.out[0].data<float>()[0] = static_cast<float>(-alpha * t.hom + beta * t.div);
  c.out[1].data<float>()[0] = static_cast<float>(t.hom);
  c.out[2].data<float>()[0] = static_cast<float>(t.div);
}

void cpu_metric_backward(const KernelContext& c) {
  const GctMetricParams& p = params_of<GctMetricParams>(c.node);
  GroupSums s(c.workspace, static_cast<int>(c.in[0].dim(0)), static_cast<int>(p.groups));
  const float* G = c.in[0].data<float>();
  const int32_t* labels = read_labels("gct_metric_loss_backward", c.in[1], s.C);
  const double dR = c.in[2].data<float>()[0], dhom = c.in[3].data<float>()[0], ddiv = c.in[4].data<float>()[0];
  const double alpha = p.alpha, beta = p.beta;
  sum_blocks(s, G, labels);
  metric_terms(s, G, labels, -alpha * dR + dhom, beta * dR + ddiv);
  float* dG = c.out[0].data<float>();
  for (int i = 0; i < s.k; ++i)
    for (int j = 0; j < s.k; ++j) {
      const int a = labels[i], b = labels[j];
      double d = s.block[a * s.C + b] / (s.n[a] * s.n[b]);
      if (a == b) d += s.row[i];
      if (i == j) d += s.diag[i];
      dG[i * s.k + j] = static_cast<float>(d);
    }
}

std::string print_metric(const Node& n) {
  const GctMetricParams& p = params_of<GctMetricParams>(n);
  return str_cat(" groups=", p.groups, " alpha=", p.alpha, " beta=", p.beta);
}

const OpDef kMetricBackward{.name = "gct_metric_loss_backward",
                            .infer = infer_metric,
                            .cpu = cpu_metric_backward,
                            .workspace = workspace_metric,
                            .print = print_metric};

// Each output's gradient may be absent (kNoValue): it is then a zero scalar.
std::vector<ValueId> vjp_metric(Graph& g, const Node& n, const std::vector<ValueId>& dy, const std::vector<bool>& needs) {
  if (!needs[0]) return {kNoValue, kNoValue};
  std::vector<ValueId> in{n.inputs[0], n.inputs[1]};
  for (ValueId d : dy) in.push_back(d != kNoValue ? d : ops::fill(g, {}, 0.0f));
  return {g.add1(kMetricBackward, in, n.params), kNoValue};
}

const OpDef kMetric{.name = "gct_metric_loss",
                    .infer = infer_metric,
                    .cpu = cpu_metric,
                    .vjp = vjp_metric,
                    .workspace = workspace_metric,
                    .print = print_metric};

// ---- head_mean -----------------------------------------------------------------------------------

// (B, T, H, D) and the valid-token test, as in head_gram.
struct MeanView {
  int64_t B, T, H, D;
  const int32_t* lengths; // nullable
  bool valid(int64_t token) const { return !lengths || token % T < lengths[token / T]; }
  int64_t valid_tokens() const {
    if (!lengths) return B * T;
    int64_t n = 0;
    for (int64_t b = 0; b < B; ++b) n += lengths[b];
    return n;
  }
};

MeanView mean_view(const Shape& xs, const Tensor* lengths) {
  MeanView v{xs[0], xs[1], xs[2], xs[3], lengths ? lengths->data<int32_t>() : nullptr};
  for (int64_t b = 0; v.lengths && b < v.B; ++b)
    PILLARS_CHECK(v.lengths[b] >= 0 && v.lengths[b] <= v.T, "head_mean: lengths[", b, "] = ", v.lengths[b],
                  " is outside [0, ", v.T, "]");
  return v;
}

void check_lengths(const Graph& g, const Node& n, size_t index, int64_t B) {
  if (n.inputs.size() <= index) return;
  const ValueId len = n.inputs[index];
  PILLARS_CHECK(g.dtype(len) == DType::i32 && g.shape(len) == Shape{B}, n.op->name, ": lengths must be i32 of shape [", B, "]");
}

// inputs: x [, lengths]
std::vector<OutputSpec> infer_mean(const Graph& g, const Node& n) {
  const Shape& xs = g.shape(n.inputs[0]);
  PILLARS_CHECK(xs.size() == 4 && g.dtype(n.inputs[0]) == DType::f32, "head_mean: x must be f32 (B, T, H, D), got ",
                shape_str(xs));
  check_lengths(g, n, 1, xs[0]);
  return {{Shape{xs[2], xs[3]}, DType::f32}};
}

size_t workspace_mean(const Graph& g, const Node& n) {
  const Shape& xs = g.shape(n.inputs[0]);
  return static_cast<size_t>(xs[2] * xs[3]) * sizeof(double);
}

void cpu_mean(const KernelContext& c) {
  const MeanView v = mean_view(c.in[0].shape(), c.in.size() > 1 ? &c.in[1] : nullptr);
  const float* x = c.in[0].data<float>();
  const int64_t HD = v.H * v.D;
  double* sum = static_cast<double*>(c.workspace);
  std::fill(sum, sum + HD, 0.0);
  for (int64_t t = 0; t < v.B * v.T; ++t)
    if (v.valid(t))
      for (int64_t e = 0; e < HD; ++e) sum[e] += x[t * HD + e];
  const int64_t N = v.valid_tokens();
  float* y = c.out[0].data<float>();
  for (int64_t e = 0; e < HD; ++e) y[e] = N ? static_cast<float>(sum[e] / static_cast<double>(N)) : 0.0f;
}

// inputs: dy [, lengths]; HeadMeanBackwardParams {x's shape}
std::vector<OutputSpec> infer_mean_backward(const Graph& g, const Node& n) {
  const Shape& xs = params_of<HeadMeanBackwardParams>(n).x_shape;
  PILLARS_CHECK(xs.size() == 4 && g.shape(n.inputs[0]) == (Shape{xs[2], xs[3]}), "head_mean_backward: dy ",
                shape_str(g.shape(n.inputs[0])), " does not match x ", shape_str(xs));
  check_lengths(g, n, 1, xs[0]);
  return {{xs, DType::f32}};
}

void cpu_mean_backward(const KernelContext& c) {
  const MeanView v = mean_view(c.out[0].shape(), c.in.size() > 1 ? &c.in[1] : nullptr);
  const float* dy = c.in[0].data<float>();
  float* dx = c.out[0].data<float>();
  const int64_t HD = v.H * v.D, N = v.valid_tokens();
  const float inv = N ? static_cast<float>(1.0 / static_cast<double>(N)) : 0.0f;
#pragma omp parallel for schedule(static) if (c.out[0].numel() >= kParallelGrain)
  for (int64_t t = 0; t < v.B * v.T; ++t)
    for (int64_t e = 0; e < HD; ++e) dx[t * HD + e] = v.valid(t) ? dy[e] * inv : 0.0f;
}

std::string print_mean_backward(const Node& n) { return str_cat(" x_shape=", shape_str(params_of<HeadMeanBackwardParams>(n).x_shape)); }

const OpDef kMeanBackward{.name = "head_mean_backward", .infer = infer_mean_backward, .cpu = cpu_mean_backward, .print = print_mean_backward};

std::vector<ValueId> vjp_mean(Graph& g, const Node& n, const std::vector<ValueId>& dy, const std::vector<bool>& needs) {
  std::vector<ValueId> grads(n.inputs.size(), kNoValue);
  if (!needs[0] || dy[0] == kNoValue) return grads;
  std::vector<ValueId> in{dy[0]};
  if (n.inputs.size() > 1) in.push_back(n.inputs[1]);
  grads[0] = g.add1(kMeanBackward, in, HeadMeanBackwardParams{.x_shape = g.shape(n.inputs[0])});
  return grads;
}

const OpDef kMean{.name = "head_mean", .infer = infer_mean, .cpu = cpu_mean, .vjp = vjp_mean, .workspace = workspace_mean};

// ---- gct_classification_loss ---------------------------------------------------------------------

// inputs: logits, labels [, dR]
std::vector<OutputSpec> infer_classification(const Graph& g, const Node& n) {
  const Shape& zs = g.shape(n.inputs[0]);
  PILLARS_CHECK(g.dtype(n.inputs[0]) == DType::f32 && zs.size() == 2 && zs[0] >= 1 && zs[1] >= 1, n.op->name,
                ": logits must be f32 (H, C), got ", dtype_name(g.dtype(n.inputs[0])), shape_str(zs));
  check_labels(g, n.op->name, n.inputs[1], zs[0]);
  if (n.inputs.size() == 2) return {{Shape{}, DType::f32}};
  check_scalar(g, n.op->name, n.inputs[2]);
  return {{zs, DType::f32}};
}

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

// R_i of one head: α·(lse − z_y) − β/(C−1)·Σ_{v≠y} (L_v − lse)   (formulas at the top of the file).
double classification_head_loss(const float* z, int C, int y, double alpha, double beta) {
  const double lse = log_sum_exp(z, C);
  double log_not = 0; // Σ_{v≠y} log(1 − p_v)
  for (int v = 0; v < C; ++v)
    if (v != y) log_not += log_sum_exp(z, C, v) - lse;
  return alpha * (lse - z[y]) - (C > 1 ? beta / (C - 1) * log_not : 0.0);
}

void cpu_classification(const KernelContext& c) {
  const int k = static_cast<int>(c.in[0].dim(0)), C = static_cast<int>(c.in[0].dim(1));
  const float* z = c.in[0].data<float>();
  const int32_t* y = read_labels("gct_classification_loss", c.in[1], C);
  const GctClassificationParams& p = params_of<GctClassificationParams>(c.node);
  double R = 0;
  for (int i = 0; i < k; ++i) R += classification_head_loss(z + i * C, C, y[i], p.alpha, p.beta);
  c.out[0].data<float>()[0] = static_cast<float>(R / k);
}

// dz_iu = s·[α·(p_u − [u = y]) + β·p_u − b·Σ_{v∉{y,u}} exp(z_u − L_v)], s = dR/k, b = β/(C−1).
void cpu_classification_backward(const KernelContext& c) {
  const int k = static_cast<int>(c.in[0].dim(0)), C = static_cast<int>(c.in[0].dim(1));
  const float* z = c.in[0].data<float>();
  const int32_t* y = read_labels("gct_classification_loss_backward", c.in[1], C);
  const GctClassificationParams& p = params_of<GctClassificationParams>(c.node);
  const double alpha = p.alpha, beta = C > 1 ? p.beta : 0.0, b = C > 1 ? p.beta / (C - 1) : 0.0;
  const double s = c.in[2].data<float>()[0] / static_cast<double>(k);
  float* dz = c.out[0].data<float>();
  std::vector<double> L(static_cast<size_t>(C)); // L_v, the log-sum-exp without v (v ≠ y)
  for (int i = 0; i < k; ++i) {
    const float* zi = z + i * C;
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

std::string print_classification(const Node& n) {
  const GctClassificationParams& p = params_of<GctClassificationParams>(n);
  return str_cat(" alpha=", p.alpha, " beta=", p.beta);
}

const OpDef kClassificationBackward{.name = "gct_classification_loss_backward",
                                    .infer = infer_classification,
                                    .cpu = cpu_classification_backward,
                                    .print = print_classification};

std::vector<ValueId> vjp_classification(Graph& g, const Node& n, const std::vector<ValueId>& dy, const std::vector<bool>& needs) {
  if (!needs[0] || dy[0] == kNoValue) return {kNoValue, kNoValue};
  return {g.add1(kClassificationBackward, {n.inputs[0], n.inputs[1], dy[0]}, n.params), kNoValue};
}

const OpDef kClassification{.name = "gct_classification_loss",
                            .infer = infer_classification,
                            .cpu = cpu_classification,
                            .vjp = vjp_classification,
                            .print = print_classification};

// ---- mean_pairwise_cosine ------------------------------------------------------------------------

// inputs: G [, dD]
std::vector<OutputSpec> infer_pairwise(const Graph& g, const Node& n) {
  const int64_t H = check_gram(g, n.op->name, n.inputs[0]);
  if (n.inputs.size() == 1) return {{Shape{}, DType::f32}};
  check_scalar(g, n.op->name, n.inputs[1]);
  return {{Shape{H, H}, DType::f32}};
}

void cpu_pairwise(const KernelContext& c) {
  const int64_t H = c.in[0].dim(0);
  const float* G = c.in[0].data<float>();
  double sum = 0;
  for (int64_t i = 0; i < H; ++i)
    for (int64_t j = 0; j < H; ++j)
      if (i != j) sum += clamped_cosine(G[i * H + j], G[i * H + i], G[j * H + j]);
  c.out[0].data<float>()[0] = H > 1 ? static_cast<float>(sum / static_cast<double>(H * (H - 1))) : 0.0f;
}

// The backward's workspace: the diagonal of dG (H), which collects from every pair of its row and
// column, accumulated in double.
size_t workspace_pairwise_backward(const Graph& g, const Node& n) {
  return static_cast<size_t>(g.shape(n.inputs[0])[0]) * sizeof(double);
}

void cpu_pairwise_backward(const KernelContext& c) {
  const int64_t H = c.in[0].dim(0);
  const float* G = c.in[0].data<float>();
  float* dG = c.out[0].data<float>();
  double* diag = static_cast<double*>(c.workspace);
  std::fill(diag, diag + H, 0.0);
  const double s = H > 1 ? c.in[1].data<float>()[0] / static_cast<double>(H * (H - 1)) : 0.0;
  for (int64_t i = 0; i < H; ++i)
    for (int64_t j = 0; j < H; ++j) {
      if (i == j) continue;
      const Cosine f = cosine_with_partials(G[i * H + j], G[i * H + i], G[j * H + j]);
      dG[i * H + j] = static_cast<float>(s * f.dp);
      diag[i] += s * f.dA, diag[j] += s * f.dB;
    }
  for (int64_t i = 0; i < H; ++i) dG[i * H + i] = static_cast<float>(diag[i]);
}

const OpDef kPairwiseBackward{.name = "mean_pairwise_cosine_backward",
                              .infer = infer_pairwise,
                              .cpu = cpu_pairwise_backward,
                              .workspace = workspace_pairwise_backward};

std::vector<ValueId> vjp_pairwise(Graph& g, const Node& n, const std::vector<ValueId>& dy, const std::vector<bool>& needs) {
  if (!needs[0] || dy[0] == kNoValue) return {kNoValue};
  return {g.add1(kPairwiseBackward, {n.inputs[0], dy[0]})};
}

const OpDef kPairwise{.name = "mean_pairwise_cosine", .infer = infer_pairwise, .cpu = cpu_pairwise, .vjp = vjp_pairwise};

} // namespace

ValueId huds_cluster(Graph& g, ValueId gram, int groups, uint64_t seed) {
  return g.add1(kHudsCluster, {gram}, HudsClusterParams{.groups = groups, .seed = seed});
}

GctTerms gct_metric_loss(Graph& g, ValueId gram, ValueId labels, int groups, float alpha, float beta) {
  const std::vector<ValueId> out = g.add(kMetric, {gram, labels}, GctMetricParams{.groups = groups, .alpha = alpha, .beta = beta});
  return {out[0], out[1], out[2]};
}

ValueId head_mean(Graph& g, ValueId x, ValueId lengths) {
  return g.add1(kMean, lengths == kNoValue ? std::vector<ValueId>{x} : std::vector<ValueId>{x, lengths});
}

ValueId gct_classification_loss(Graph& g, ValueId logits, ValueId labels, float alpha, float beta) {
  return g.add1(kClassification, {logits, labels}, GctClassificationParams{.alpha = alpha, .beta = beta});
}

ValueId mean_pairwise_cosine(Graph& g, ValueId gram) { return g.add1(kPairwise, {gram}); }

} // namespace pillars::ght
