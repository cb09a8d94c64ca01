// The GHT graph ops (docs/METHOD.md §2, §4, §6), each with its fused backward op: shape rules,
// VJPs and the adapters that unpack tensors for the CPU kernels (kernels/cpu/gct.h, which run the
// loops in double). Sizes: k = H heads, C groups.
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
#include <vector>

#include "engine/ops/common.h"
#include "engine/ops/elementwise.h"
#include "ght/kmeans.h"
#include "kernels/cpu/gct.h"

namespace pillars::ght {
namespace {

// ---- shared checks -----------------------------------------------------------------------------

int64_t check_gram(const Graph& g, const char* op, ValueId gram) {
  const Shape& s = g.shape(gram);
  PILLARS_CHECK(g.dtype(gram) == DType::f32 && s.size() == 2 && s[0] == s[1] && s[0] >= 1, op,
                ": G must be f32 (H, H), got ", dtype_name(g.dtype(gram)), shape_str(s));
  return s[0];
}

void check_labels(const Graph& g, const char* op, ValueId labels, int64_t H) {
  PILLARS_CHECK(g.dtype(labels) == DType::i32 && g.shape(labels) == Shape{H}, op, ": labels must be i32 of shape [", H,
                "], got ", dtype_name(g.dtype(labels)), shape_str(g.shape(labels)));
}

void check_scalar(const Graph& g, const char* op, ValueId v) {
  PILLARS_CHECK(g.dtype(v) == DType::f32 && g.shape(v).empty(), op, ": expects an f32 scalar gradient, got ",
                dtype_name(g.dtype(v)), shape_str(g.shape(v)));
}

// Labels of a kernel's input, each checked to lie in [0, C).
const int32_t* read_labels(const char* op, const Tensor& t, int C) {
  const int32_t* labels = t.data<int32_t>();
  cpu::gct_check_labels({.op = op, .n = t.numel(), .C = C}, labels);
  return labels;
}

// ---- huds_cluster --------------------------------------------------------------------------------

std::vector<OutputSpec> infer_huds(const Graph& g, const Node& n) {
  const int64_t H = check_gram(g, "huds_cluster", n.inputs[0]);
  const int64_t groups = params_of<HudsClusterParams>(n).groups;
  PILLARS_CHECK(groups >= 1 && groups <= H, "huds_cluster: ", groups, " groups over ", H,
                " heads (want 1 <= groups <= heads)");
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
  return cpu::gct_metric_workspace(g.shape(n.inputs[0])[0], metric_groups(n));
}

// The kernel's arguments: G (k, k), labels (k) checked to lie in [0, C), α, β, the workspace.
cpu::GctMetricArgs metric_args(const KernelContext& c, const char* op) {
  const GctMetricParams& p = params_of<GctMetricParams>(c.node);
  const int C = static_cast<int>(p.groups);
  return {.k = static_cast<int>(c.in[0].dim(0)),
          .C = C,
          .alpha = p.alpha,
          .beta = p.beta,
          .eps = kCosineEps,
          .G = c.in[0].data<float>(),
          .labels = read_labels(op, c.in[1], C),
          .workspace = c.workspace};
}

void cpu_metric(const KernelContext& c) {
  cpu::gct_metric_loss(metric_args(c, "gct_metric_loss"), c.out[0].data<float>(), c.out[1].data<float>(),
                       c.out[2].data<float>());
}

// inputs: G, labels, dR, dhom, ddiv
void cpu_metric_backward(const KernelContext& c) {
  cpu::gct_metric_loss_backward(metric_args(c, "gct_metric_loss_backward"), c.in[2].data<float>()[0],
                                c.in[3].data<float>()[0], c.in[4].data<float>()[0], c.out[0].data<float>());
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
std::vector<ValueId> vjp_metric(Graph& g, const Node& n, const std::vector<ValueId>& dy,
                                const std::vector<bool>& needs) {
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

// (B, T, H, D) of x and its lengths, each checked to lie in [0, T].
cpu::HeadMeanArgs mean_args(const Shape& xs, const Tensor* lengths) {
  const cpu::HeadMeanArgs a{
      .B = xs[0], .T = xs[1], .H = xs[2], .D = xs[3], .lengths = lengths ? lengths->data<int32_t>() : nullptr};
  cpu::head_mean_check_lengths(a);
  return a;
}

void check_lengths(const Graph& g, const Node& n, size_t index, int64_t B) {
  if (n.inputs.size() <= index) return;
  const ValueId len = n.inputs[index];
  PILLARS_CHECK(g.dtype(len) == DType::i32 && g.shape(len) == Shape{B}, n.op->name, ": lengths must be i32 of shape [",
                B, "]");
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
  return cpu::head_mean_workspace(xs[2], xs[3]);
}

void cpu_mean(const KernelContext& c) {
  cpu::head_mean(mean_args(c.in[0].shape(), c.in.size() > 1 ? &c.in[1] : nullptr), c.in[0].data<float>(),
                 c.out[0].data<float>(), c.workspace);
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
  cpu::head_mean_backward(mean_args(c.out[0].shape(), c.in.size() > 1 ? &c.in[1] : nullptr), c.in[0].data<float>(),
                          c.out[0].data<float>());
}

std::string print_mean_backward(const Node& n) {
  return str_cat(" x_shape=", shape_str(params_of<HeadMeanBackwardParams>(n).x_shape));
}

const OpDef kMeanBackward{
    .name = "head_mean_backward", .infer = infer_mean_backward, .cpu = cpu_mean_backward, .print = print_mean_backward};

std::vector<ValueId> vjp_mean(Graph& g, const Node& n, const std::vector<ValueId>& dy, const std::vector<bool>& needs) {
  std::vector<ValueId> grads(n.inputs.size(), kNoValue);
  if (!needs[0] || dy[0] == kNoValue) return grads;
  std::vector<ValueId> in{dy[0]};
  if (n.inputs.size() > 1) in.push_back(n.inputs[1]);
  grads[0] = g.add1(kMeanBackward, in, HeadMeanBackwardParams{.x_shape = g.shape(n.inputs[0])});
  return grads;
}

const OpDef kMean{
    .name = "head_mean", .infer = infer_mean, .cpu = cpu_mean, .vjp = vjp_mean, .workspace = workspace_mean};

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

// The kernel's arguments: logits (k, C), labels (k) checked to lie in [0, C), α, β.
cpu::GctClassificationArgs classification_args(const KernelContext& c, const char* op) {
  const GctClassificationParams& p = params_of<GctClassificationParams>(c.node);
  const int C = static_cast<int>(c.in[0].dim(1));
  return {.k = static_cast<int>(c.in[0].dim(0)),
          .C = C,
          .alpha = p.alpha,
          .beta = p.beta,
          .logits = c.in[0].data<float>(),
          .labels = read_labels(op, c.in[1], C)};
}

void cpu_classification(const KernelContext& c) {
  cpu::gct_classification_loss(classification_args(c, "gct_classification_loss"), c.out[0].data<float>());
}

// inputs: logits, labels, dR
void cpu_classification_backward(const KernelContext& c) {
  cpu::gct_classification_loss_backward(classification_args(c, "gct_classification_loss_backward"),
                                        c.in[2].data<float>()[0], c.out[0].data<float>());
}

std::string print_classification(const Node& n) {
  const GctClassificationParams& p = params_of<GctClassificationParams>(n);
  return str_cat(" alpha=", p.alpha, " beta=", p.beta);
}

const OpDef kClassificationBackward{.name = "gct_classification_loss_backward",
                                    .infer = infer_classification,
                                    .cpu = cpu_classification_backward,
                                    .print = print_classification};

std::vector<ValueId> vjp_classification(Graph& g, const Node& n, const std::vector<ValueId>& dy,
                                        const std::vector<bool>& needs) {
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

cpu::PairwiseCosineArgs pairwise_args(const KernelContext& c) {
  return {.H = c.in[0].dim(0), .eps = kCosineEps, .G = c.in[0].data<float>(), .workspace = c.workspace};
}

void cpu_pairwise(const KernelContext& c) { cpu::mean_pairwise_cosine(pairwise_args(c), c.out[0].data<float>()); }

// The backward's workspace: the diagonal of dG (H), which collects from every pair of its row and
// column, accumulated in double.
size_t workspace_pairwise_backward(const Graph& g, const Node& n) {
  return static_cast<size_t>(g.shape(n.inputs[0])[0]) * sizeof(double);
}

// inputs: G, dD
void cpu_pairwise_backward(const KernelContext& c) {
  cpu::mean_pairwise_cosine_backward(pairwise_args(c), c.in[1].data<float>()[0], c.out[0].data<float>());
}

const OpDef kPairwiseBackward{.name = "mean_pairwise_cosine_backward",
                              .infer = infer_pairwise,
                              .cpu = cpu_pairwise_backward,
                              .workspace = workspace_pairwise_backward};

std::vector<ValueId> vjp_pairwise(Graph& g, const Node& n, const std::vector<ValueId>& dy,
                                  const std::vector<bool>& needs) {
  if (!needs[0] || dy[0] == kNoValue) return {kNoValue};
  return {g.add1(kPairwiseBackward, {n.inputs[0], dy[0]})};
}

const OpDef kPairwise{
    .name = "mean_pairwise_cosine", .infer = infer_pairwise, .cpu = cpu_pairwise, .vjp = vjp_pairwise};

} // namespace

ValueId huds_cluster(Graph& g, ValueId gram, int groups, uint64_t seed) {
  return g.add1(kHudsCluster, {gram}, HudsClusterParams{.groups = groups, .seed = seed});
}

GctTerms gct_metric_loss(Graph& g, ValueId gram, ValueId labels, int groups, float alpha, float beta) {
  const std::vector<ValueId> out =
      g.add(kMetric, {gram, labels}, GctMetricParams{.groups = groups, .alpha = alpha, .beta = beta});
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
