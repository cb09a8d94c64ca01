// The GHT losses on the CPU: the loops under the ops of ght/ops.h (adapters: ght/ops.cpp, which
// has the formulas and their derivations). Sizes: k = H heads, C groups; everything of size k or C
// is tiny, so these work in double and serially (head_mean, which reads a whole feature map, is
// the exception). cos(x, y) = ⟨x, y⟩ / sqrt(max(‖x‖²‖y‖², eps²)) throughout.
//
//   gct_metric_loss        G (k, k) f32, labels (k) i32 in [0, C) → R = −α·hom + β·div, hom, div
//   gct_metric_loss_backward   ... and dR, dhom, ddiv → dG (k, k), labels fixed
//   head_mean              x (B, T, H, D), lengths (B) or null → y (H, D), the mean over valid tokens
//   head_mean_backward     dy (H, D) → dx (B, T, H, D): dy / N on valid tokens, 0 on padding
//   gct_classification_loss    logits z (k, C), labels (k) → R = (1/k) Σ_i [α·CE_i − β/(C−1)·Σ_{v≠y} log(1 − p_v)]
//   gct_classification_loss_backward   ... and dR → dz (k, C)
//   mean_pairwise_cosine   G (H, H) → D = mean over pairs i ≠ j of cos_ij (0 when H = 1)
//   mean_pairwise_cosine_backward      ... and dD → dG (H, H)
//   gct_check_labels       labels (n) → throws unless each is in [0, C)
//   head_mean_check_lengths    lengths (B) → throws unless each is in [0, T]
#pragma once
#include <cstddef>
#include <cstdint>

namespace pillars::cpu {

struct GctLabelsArgs {
  const char* op = ""; // the op's name, for the error
  int64_t n = 0;       // labels
  int C = 0;           // groups
};
// Throws pillars::Error naming the first labels[i] outside [0, C).
//   labels: (n)
void gct_check_labels(const GctLabelsArgs& a, const int32_t* labels);

struct GctMetricArgs {
  int k = 0, C = 0;                // heads, groups
  double alpha = 1, beta = 1;      // α, β
  double eps = 1e-8;               // the cosine's clamp
  const float* G = nullptr;        // (k, k)
  const int32_t* labels = nullptr; // (k), each in [0, C) (the caller checks)
  void* workspace = nullptr;       // gct_metric_workspace(k, C) bytes
};
size_t gct_metric_workspace(int64_t k, int64_t C);
void gct_metric_loss(const GctMetricArgs& a, float* R, float* hom, float* div);
void gct_metric_loss_backward(const GctMetricArgs& a, double dR, double dhom, double ddiv, float* dG);

struct HeadMeanArgs {
  int64_t B = 0, T = 0, H = 0, D = 0;
  const int32_t* lengths = nullptr; // (B), each in [0, T] (the caller checks); null: every token
};
size_t head_mean_workspace(int64_t H, int64_t D);
void head_mean(const HeadMeanArgs& a, const float* x, float* y, void* workspace);
void head_mean_backward(const HeadMeanArgs& a, const float* dy, float* dx);
// Throws pillars::Error naming the first lengths[b] outside [0, T]; nothing to check without lengths.
void head_mean_check_lengths(const HeadMeanArgs& a);

struct GctClassificationArgs {
  int k = 0, C = 0;                // heads, groups
  double alpha = 1, beta = 1;      // α, β
  const float* logits = nullptr;   // (k, C)
  const int32_t* labels = nullptr; // (k), each in [0, C) (the caller checks)
};
void gct_classification_loss(const GctClassificationArgs& a, float* R);
void gct_classification_loss_backward(const GctClassificationArgs& a, double dR, float* dz);

struct PairwiseCosineArgs {
  int64_t H = 0;
  double eps = 1e-8;         // the cosine's clamp
  const float* G = nullptr;  // (H, H)
  void* workspace = nullptr; // backward: H doubles (the diagonal of dG)
};
void mean_pairwise_cosine(const PairwiseCosineArgs& a, float* D);
void mean_pairwise_cosine_backward(const PairwiseCosineArgs& a, double dD, float* dG);

} // namespace pillars::cpu
