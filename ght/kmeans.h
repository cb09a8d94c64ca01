// HUDS — the Hidden Unit Discovery System of docs/METHOD.md §3: K-means over the heads of one
// attention module, computed from their k × k Gram matrix alone.
//
//   G[i][j] = ⟨e_i, e_j⟩, e_i = head i's feature map flattened over (batch, positions, features)
//   Clustering c = kmeans_gram(G, k, /*groups=*/2, seed);   // c.labels[i] ∈ [0, C)
//
// Every quantity K-means needs is a function of G (μ_c = mean of the members of group c):
//   ‖e_i − μ_c‖² = G_ii − 2·mean_{j∈c} G_ij + mean_{j,j'∈c} G_jj'
// so the feature maps themselves (megabytes per module) never leave the graph; only k² numbers do.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace pillars::ght {

struct Clustering {
  std::vector<int> labels; // (k) group of each head, in [0, groups); groups numbered by first member
  int groups = 0;          // C
  int iterations = 0;      // Lloyd iterations run
  double inertia = 0;      // Σ_i ‖e_i − μ_{c(i)}‖²
  double shift = 0;        // Σ_c ‖μ_c(new) − μ_c(old)‖² of the last iteration (what the stop rule read)
};

struct KMeansOptions {
  int max_iterations = 100;
  double tolerance = 1e-4; // stop when Σ_c ‖μ_c(new) − μ_c(old)‖² < tolerance
};

// K-means with C groups over k vectors given only G (k × k, row-major, symmetric). Initialization:
// k-means++ drawn from a SplitMix64 stream seeded with `seed` (deterministic); then Lloyd
// iterations (nearest center, ties to the lower group) until the squared center shift is below
// tolerance, or no group changed (a fixed point), or max_iterations. An emptied group is re-seeded
// with the head farthest from its center (taken from a group of two or more), so every one of the
// C groups has members. C must be in [1, k]. Algorithm and formulas: ght/kmeans.cpp.
Clustering kmeans_gram(const std::vector<double>& G, int k, int C, uint64_t seed, const KMeansOptions& o = {});

// The same algorithm on explicit vectors (k vectors of equal length): the test oracle, which must
// give the same labels as kmeans_gram(E Eᵀ) for the same seed.
Clustering kmeans_vectors(const std::vector<std::vector<double>>& E, int C, uint64_t seed, const KMeansOptions& o = {});

// The cosine of two vectors from their dot product and squared norms, with the product of the
// norms clamped at eps as in PyTorch's F.cosine_similarity: dot / sqrt(max(‖a‖²·‖b‖², eps²)). A zero
// vector gives 0, never NaN. The GCT ops (ght/ops.h) use the same formula and eps.
constexpr double kCosineEps = 1e-8;
inline double clamped_cosine(double dot, double norm2_a, double norm2_b, double eps = kCosineEps) {
  return dot / std::sqrt(std::max(norm2_a * norm2_b, eps * eps));
}

// Squared distances and cosines (clamped_cosine) that follow from G and a labeling (helpers the
// GCT loss, the V2S vote and the metrics share). Groups without members get NaN.
std::vector<double> distance_to_centroids(const std::vector<double>& G, int k, const std::vector<int>& labels,
                                          int C); // (k, C)
std::vector<double> cosine_to_centroids(const std::vector<double>& G, int k, const std::vector<int>& labels,
                                        int C); // (k, C)

// Compactness of a clustering (the paper's Fig. 2), from G: the Dunn index (smallest distance
// between members of different groups / largest distance within a group; higher = better
// separated; +inf when no group has two members apart; NaN with a single group) and the mean
// Silhouette coefficient in [−1, 1], s(i) = (b_i − a_i) / max(a_i, b_i) averaged over the k heads,
// b_i = the smallest mean Euclidean distance from i to the members of another group, in two
// conventions that differ in a_i (n = |group of i|, Σ = distances to the other members):
//   silhouette      a_i = Σ / (n − 1), a member alone in its group scores 0 (Rousseeuw 1987,
//                   scikit-learn's silhouette_score);
//   silhouette_ght  a_i = Σ / n, so a member alone has a_i = 0 and scores 1 (the authors' Fig. 2
//                   script, fairseq/criterions/head_cluster_loss_prune_clustermetric_calculation.py
//                   in their repository); never below silhouette, head by head.
// Both are NaN with fewer than two non-empty groups, and s(i) = 0 where a_i = b_i = 0. Labels
// are any integers >= 0 (groups numbered up to the largest).
double dunn_index(const std::vector<double>& G, int k, const std::vector<int>& labels);
double silhouette(const std::vector<double>& G, int k, const std::vector<int>& labels);
double silhouette_ght(const std::vector<double>& G, int k, const std::vector<int>& labels);

} // namespace pillars::ght
