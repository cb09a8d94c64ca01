// The loops of HUDS's K-means (ght/kmeans.cpp, which has the algorithm and its formulas) and of
// the compactness measures of a clustering. Sizes: k heads (n vectors), C groups or centers, d
// features; all tiny, so these work in double and serially, in a fixed order (every sum from 0, in
// increasing index), which the callers' results depend on bit for bit.
//
// A set of groups is passed as CSR: group c's heads are members[offsets[c] .. offsets[c + 1]),
// offsets (C + 1) with offsets[0] = 0, members (offsets[C]), each in [0, k) (the caller checks).
// From the Gram matrix G = E Eᵀ, with μ_c the mean of group c's members e_j:
//   ⟨e_i, μ_c⟩ = (1/n_c) Σ_{j∈c} G_ij,   ⟨μ_a, μ_b⟩ = (1/(n_a n_b)) Σ_{j∈a, j'∈b} G_jj'
//
//   kmeans_gram_norms      G (k, k), groups → norm2 (C) = ⟨μ_c, μ_c⟩
//   kmeans_gram_distances  G, groups, norm2 → D (k, C) = ‖e_i − μ_c‖²
//   kmeans_gram_cosines    G, groups, norm2 → cos (k, C) = cos(e_i, μ_c)
//   kmeans_gram_shift      G, two member sets → ‖μ_a − μ_b‖²
//   kmeans_vector_means    x (n, d), groups → mu (C, d)
//   kmeans_vector_distances    x (n, d), mu (C, d) → D (n, C) = ‖x_i − mu_c‖²
//   kmeans_squared_distance    x (d), y (d) → ‖x − y‖²
//   kmeans_nearest_update  D (k) → d2 (k) = min(d2, D), and Σ d2
//   kmeans_assign          D (k, C) → labels (k) = the nearest center, d2 (k) its distance
//   kmeans_inertia         D (k, C), labels (k) → Σ_i D[i, labels[i]]
//   kmeans_pairwise_distances  G (k, k) → dist (k, k) = ‖e_i − e_j‖
//   kmeans_dunn_extremes   dist (k, k), labels (k) → the smallest distance across groups, the largest within
//   kmeans_mean_silhouette dist (k, k), labels (k), groups → the mean Silhouette coefficient
//   kmeans_mean_at_labels  M (k, C), labels (k) → (1/k) Σ_i M[i, labels[i]]
//   kmeans_mean_centroid_cosine    G (k, k), labels (k) → the mean cos(μ_a, μ_b) over pairs of groups
#pragma once
#include <cstdint>

namespace pillars::cpu {

// ---- from the Gram matrix ----

struct KmeansGramArgs {
  int k = 0, C = 0; // heads, groups
};
// norm2[c] = ⟨μ_c, μ_c⟩ = (1/n_c²) Σ_{j,j'∈c} G_jj'; NaN for a group without members.
//   G: (k, k) row-major; offsets: (C + 1); members: (offsets[C]); norm2: (C)
void kmeans_gram_norms(const KmeansGramArgs& a, const double* G, const int32_t* offsets, const int32_t* members,
                       double* norm2);
// D[i, c] = max(0, G_ii − 2 ⟨e_i, μ_c⟩ + norm2[c]) = ‖e_i − μ_c‖², clamped at 0 (the difference of
// large dot products can come out a few ulps below 0 where the true distance is 0); NaN for a group
// without members.
//   G: (k, k) row-major; offsets: (C + 1); members: (offsets[C]); norm2: (C); D: (k, C) row-major
void kmeans_gram_distances(const KmeansGramArgs& a, const double* G, const int32_t* offsets, const int32_t* members,
                           const double* norm2, double* D);

struct KmeansGramCosineArgs {
  int k = 0, C = 0;  // heads, groups
  double eps = 1e-8; // the cosine's clamp
};
// cos[i, c] = ⟨e_i, μ_c⟩ / sqrt(max(G_ii · norm2[c], eps²)); NaN for a group without members.
//   G: (k, k) row-major; offsets: (C + 1); members: (offsets[C]); norm2: (C); cos: (k, C) row-major
void kmeans_gram_cosines(const KmeansGramCosineArgs& a, const double* G, const int32_t* offsets, const int32_t* members,
                         const double* norm2, double* cos);

struct KmeansGramShiftArgs {
  int k = 0;                       // heads
  int n_a = 0, n_b = 0;            // members of the two sets, both >= 1
  double norm2_a = 0, norm2_b = 0; // ⟨μ_a, μ_a⟩, ⟨μ_b, μ_b⟩
};
// shift2 = max(0, norm2_a − 2 ⟨μ_a, μ_b⟩ + norm2_b) = ‖μ_a − μ_b‖², clamped at 0.
//   G: (k, k) row-major; members_a: (n_a); members_b: (n_b); shift2: (1)
void kmeans_gram_shift(const KmeansGramShiftArgs& a, const double* G, const int32_t* members_a,
                       const int32_t* members_b, double* shift2);

// ---- from the vectors ----

struct KmeansVectorArgs {
  int n = 0, C = 0, d = 0; // vectors, groups (centers), features
};
// mu[c, :] = (1/n_c) Σ_{j∈c} x[j, :], summed in member order; NaN for a group without members.
//   x: (n, d) row-major; offsets: (C + 1); members: (offsets[C]); mu: (C, d) row-major
void kmeans_vector_means(const KmeansVectorArgs& a, const double* x, const int32_t* offsets, const int32_t* members,
                         double* mu);
// D[i, c] = Σ_f (x[i, f] − mu[c, f])².
//   x: (n, d) row-major; mu: (C, d) row-major; D: (n, C) row-major
void kmeans_vector_distances(const KmeansVectorArgs& a, const double* x, const double* mu, double* D);

struct KmeansSquaredDistanceArgs {
  int d = 0; // features
};
// d2 = Σ_f (x_f − y_f)².
//   x: (d); y: (d); d2: (1)
void kmeans_squared_distance(const KmeansSquaredDistanceArgs& a, const double* x, const double* y, double* d2);

// ---- on distances, either way ----

struct KmeansAssignArgs {
  int k = 0, C = 0; // heads, centers
};
// d2[i] = min(d2[i], D[i]) for every head, then total = Σ_i d2[i] (k-means++: D(i)² after one
// more center).
//   D: (k) (C = 1); d2: (k), read and written; total: (1)
void kmeans_nearest_update(const KmeansAssignArgs& a, const double* D, double* d2, double* total);
// labels[i] = argmin_c D[i, c] (ties: the lower c; 0 when no D[i, c] is below +inf),
// d2[i] = D[i, labels[i]] (+inf in that case).
//   D: (k, C) row-major; labels: (k); d2: (k)
void kmeans_assign(const KmeansAssignArgs& a, const double* D, int32_t* labels, double* d2);
// inertia = Σ_i D[i, labels[i]].
//   D: (k, C) row-major; labels: (k), each in [0, C); inertia: (1)
void kmeans_inertia(const KmeansAssignArgs& a, const double* D, const int32_t* labels, double* inertia);

struct KmeansPairwiseArgs {
  int k = 0; // heads
};
// dist[i, j] = sqrt(max(0, G_ii − 2 G_ij + G_jj)) = ‖e_i − e_j‖.
//   G: (k, k) row-major; dist: (k, k) row-major
void kmeans_pairwise_distances(const KmeansPairwiseArgs& a, const double* G, double* dist);
// Over the pairs i < j: separation = min dist[i, j] with labels[i] ≠ labels[j] (+inf if none),
// diameter = max dist[i, j] with labels[i] = labels[j] (0 if none). The Dunn index is their ratio.
//   dist: (k, k) row-major; labels: (k); separation, diameter: (1)
void kmeans_dunn_extremes(const KmeansPairwiseArgs& a, const double* dist, const int32_t* labels, double* separation,
                          double* diameter);

struct KmeansSilhouetteArgs {
  int k = 0, C = 0;     // heads, groups (at least two of them with members)
  bool authors = false; // a_i divides by |own| (the authors' script), not |own| − 1
};
// mean = (1/k) Σ_i s(i), s(i) = (b_i − a_i) / max(a_i, b_i) (0 where both are 0), with
// Σ_i(c) = Σ_{j∈c} dist[i, j], a_i = Σ_i(own) / (|own| − 1) or / |own| (authors), b_i = min over the
// other groups with members of Σ_i(c) / n_c. Standard: s(i) = 0 for a member alone in its group.
//   dist: (k, k) row-major; labels: (k), each in [0, C); offsets: (C + 1); members: (offsets[C]);
//   mean: (1)
void kmeans_mean_silhouette(const KmeansSilhouetteArgs& a, const double* dist, const int32_t* labels,
                            const int32_t* offsets, const int32_t* members, double* mean);

// mean = (1/k) Σ_i M[i, labels[i]] (with M = cos(e_i, μ_c): the homogenization of head metrics).
//   M: (k, C) row-major; labels: (k), each in [0, C); mean: (1)
void kmeans_mean_at_labels(const KmeansAssignArgs& a, const double* M, const int32_t* labels, double* mean);
// mean = the mean over the pairs a < b of groups with members of cos(μ_a, μ_b) = S_ab / sqrt(max(S_aa S_bb,
// 1e-300)), S_ab = Σ_{i∈a, j∈b} G_ij (the sizes cancel); 0 with fewer than two such groups.
//   G: (k, k) row-major; labels: (k), each in [0, C); mean: (1)
void kmeans_mean_centroid_cosine(const KmeansGramArgs& a, const double* G, const int32_t* labels, double* mean);

} // namespace pillars::cpu
