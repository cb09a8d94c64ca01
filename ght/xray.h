// Head-diversity metrics of one attention module: the four metrics of "X-Raying Multi-head
// Attention" (M. Saad Asad, 2024; docs/METHOD.md §7), raw and normalized, and the per-head Gram
// matrices of the GHT feature maps (§1), from the module's tensors of one batch, on the host.
//
//   ModuleTensors t{q, v, out, probs, query_lengths, key_lengths, causal};   // from one forward pass
//   XrayMetrics m = xray(t);          // m.orthogonality (H×H), m.attention_variance (H), ...
//   std::vector<double> G = feature_gram(t, FeatureMap::V);                   // (H×H)
//
// Padding is left out everywhere. With Lq, Lk the query / key lengths of batch row b:
//   valid query tokens   n = (b, t) with t < Lq[b]; N of them
//   valid keys of (b, t) j < Lk[b], and j ≤ t + Tk − Tq when the module is causal (the attention
//                        op's bottom-right alignment): the keys the query can actually see
// Q_i (N × D) is head i's queries at the valid query tokens; C_i (N × D) its context vectors
// c = Σ_j a_j v_j, which is exactly the attention op's output `out` (before out_proj) in evaluation
// mode; o_i(n) = row n of C_i (the head's output). Then, per pair of heads (i, j):
//
//   (1) orthogonality          ortho_ij   = Σ_{d,e} |(Q_iᵀ Q_j)_de|               high = low diversity
//       normalized             ortho_ij / (D · ‖Q_i‖_F · ‖Q_j‖_F)  ∈ [0, 1]
//       (a D×D matrix has ‖M‖_1 ≤ D‖M‖_F, and ‖Q_iᵀQ_j‖_F ≤ ‖Q_i‖_F‖Q_j‖_F: 1 is reached by heads
//       whose queries all point one way with equal-magnitude coordinates, ~0 by uncorrelated
//       heads; the form is free of the token count, the activation scale and the head width)
//   (2) context non-orthogonality ctx_ij  = ‖C_iᵀ C_j‖_F                         high = low diversity
//       normalized             ctx_ij / (‖C_i‖_F · ‖C_j‖_F)  ∈ [0, 1]
//   (3) output dissimilarity   dis_ij     = −(1/N) Σ_n cos(o_i(n), o_j(n))  ∈ [−1, 1]   high = diverse
//       with cos(x, y) = x·y / sqrt(max(‖x‖²‖y‖², ε²)), ε = 1e−8 (PyTorch's F.cosine_similarity);
//       already scale-free, so it has no second form
//   (4) attention variance     var_i = mean over valid query rows r of the population variance
//       of a_r over the row's valid keys K_r:  (1/|K_r|) Σ_{j∈K_r} (a_rj − ā_r)², ā_r = mean_{K_r} a_r
//       0 for uniform attention, up to (|K_r|−1)/|K_r|² for attention on one key;   high = focused
// A normalized form is 0 when one of the two heads is all zero. The matrices are symmetric and keep
// their diagonal (a head with itself: dis_ii = −1); the module's scalar for (1)–(3) is the mean over
// pairs i < j (NaN for a module with one head), and for (4) the mean over heads.
//
// Where this departs from the article's notebook (github.com/MSaadAsad/transformers): the notebook
// summed over every token (its data had no padding), took its "head outputs" from slices of the
// output *after* out_proj, and took torch.var over the query axis (unbiased) instead of the spread
// of each row's weights that the article describes; its causal mask was inverted and its scores
// scaled by √E instead of √D. Here q, out and probs come from our own graph, so the last two cannot
// happen.
//
// Feature-map Gram (for HUDS, the similarity heat map and the GCT terms, docs/METHOD.md §2):
//   G_ij = ⟨e_i, e_j⟩, e_h = head h's feature map flattened over its valid positions:
//   V: values at the valid keys (t < Lk[b]);  O: outputs at the valid query tokens;
//   A: attention weights of the valid query rows at their valid keys.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/tensor.h"
#include "ght/feature_maps.h"

namespace pillars::ght {

// The GHT feature map of a head (docs/METHOD.md §2): its values, attention weights, or outputs.
// FeatureMap and its names: ght/settings.h.

// One attention module's tensors from a forward pass (f32, host, row-major).
struct ModuleTensors {
  Tensor q;                                        // (B, Tq, H, D) per-head queries
  Tensor v;                                        // (B, Tk, H, D) per-head values
  Tensor out;                                      // (B, Tq, H, D) per-head outputs A·V (before out_proj)
  Tensor probs;                                    // (B, H, Tq, Tk) attention weights (before dropout)
  std::vector<int32_t> query_lengths, key_lengths; // (B) each: valid rows are t < length
  bool causal = false;
};

struct XrayMetrics {
  int64_t heads = 0;
  // H × H, row-major, symmetric, diagonal included.
  std::vector<double> orthogonality, orthogonality_norm;     // (1)
  std::vector<double> context_nonorth, context_nonorth_norm; // (2)
  std::vector<double> output_dissimilarity;                  // (3)
  std::vector<double> attention_variance;                    // (4), (H)
  // The module's scalars: means over pairs i < j; attention_variance_mean over heads.
  double orthogonality_mean = 0, orthogonality_norm_mean = 0, context_nonorth_mean = 0, context_nonorth_norm_mean = 0,
         output_dissimilarity_mean = 0, attention_variance_mean = 0;
};

// All four metrics (accumulated in double). Throws Error when the shapes do not fit together.
XrayMetrics xray(const ModuleTensors& t);

// The H × H Gram matrix (row-major) of one feature map over its valid positions, in double.
std::vector<double> feature_gram(const ModuleTensors& t, FeatureMap f);
// Cosines from a Gram matrix: G_ij / sqrt(max(G_ii G_jj, ε²)), ε = 1e−8 (H × H).
std::vector<double> cosine_from_gram(const std::vector<double>& G, int64_t H);
// Mean of the entries above the diagonal of an H × H matrix (NaN when H < 2).
double mean_over_pairs(const std::vector<double>& M, int64_t H);

} // namespace pillars::ght
