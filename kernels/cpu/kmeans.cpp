// See kmeans.h; the algorithm and its formulas are written out in ght/kmeans.cpp.
#include "kernels/cpu/kmeans.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

namespace pillars::cpu {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

size_t at(int i, int j, int cols) {
  return static_cast<size_t>(i) * static_cast<size_t>(cols) + static_cast<size_t>(j);
}

// ⟨e_i, μ_S⟩ = (1/|S|) Σ_{j∈S} G_ij, S = s[0 .. n).
double mean_row(const double* G, int k, int i, const int32_t* s, int n) {
  double sum = 0;
  for (int p = 0; p < n; ++p) sum += G[at(i, s[p], k)];
  return sum / static_cast<double>(n);
}

// ⟨μ_S, μ_T⟩ = (1/(|S||T|)) Σ_{j∈S, j'∈T} G_jj'.
double mean_block(const double* G, int k, const int32_t* s, int n_s, const int32_t* t, int n_t) {
  double sum = 0;
  for (int p = 0; p < n_s; ++p)
    for (int q = 0; q < n_t; ++q) sum += G[at(s[p], t[q], k)];
  return sum / (static_cast<double>(n_s) * static_cast<double>(n_t));
}

} // namespace

void kmeans_gram_norms(const KmeansGramArgs& a, const double* G, const int32_t* offsets, const int32_t* members,
                       double* norm2) {
  for (int c = 0; c < a.C; ++c) {
    const int32_t* m = members + offsets[c];
    const int n = offsets[c + 1] - offsets[c];
    norm2[c] = n > 0 ? mean_block(G, a.k, m, n, m, n) : kNaN;
  }
}

void kmeans_gram_distances(const KmeansGramArgs& a, const double* G, const int32_t* offsets, const int32_t* members,
                           const double* norm2, double* D) {
  for (int i = 0; i < a.k; ++i)
    for (int c = 0; c < a.C; ++c) {
      const int n = offsets[c + 1] - offsets[c];
      D[at(i, c, a.C)] =
          n > 0 ? std::max(0.0, G[at(i, i, a.k)] - 2 * mean_row(G, a.k, i, members + offsets[c], n) + norm2[c]) : kNaN;
    }
}

void kmeans_gram_cosines(const KmeansGramCosineArgs& a, const double* G, const int32_t* offsets, const int32_t* members,
                         const double* norm2, double* cos) {
  for (int i = 0; i < a.k; ++i)
    for (int c = 0; c < a.C; ++c) {
      const int n = offsets[c + 1] - offsets[c];
      if (n == 0) {
        cos[at(i, c, a.C)] = kNaN;
        continue;
      }
      const double dot = mean_row(G, a.k, i, members + offsets[c], n);
      cos[at(i, c, a.C)] = dot / std::sqrt(std::max(G[at(i, i, a.k)] * norm2[c], a.eps * a.eps));
    }
}

void kmeans_gram_shift(const KmeansGramShiftArgs& a, const double* G, const int32_t* members_a,
                       const int32_t* members_b, double* shift2) {
  *shift2 = std::max(0.0, a.norm2_a - 2 * mean_block(G, a.k, members_a, a.n_a, members_b, a.n_b) + a.norm2_b);
}

void kmeans_vector_means(const KmeansVectorArgs& a, const double* x, const int32_t* offsets, const int32_t* members,
                         double* mu) {
  for (int c = 0; c < a.C; ++c) {
    double* m = mu + at(c, 0, a.d);
    std::fill(m, m + a.d, 0.0);
    for (int p = offsets[c]; p < offsets[c + 1]; ++p)
      for (int f = 0; f < a.d; ++f) m[f] += x[at(members[p], f, a.d)];
    for (int f = 0; f < a.d; ++f) m[f] /= static_cast<double>(offsets[c + 1] - offsets[c]);
  }
}

void kmeans_vector_distances(const KmeansVectorArgs& a, const double* x, const double* mu, double* D) {
  for (int i = 0; i < a.n; ++i)
    for (int c = 0; c < a.C; ++c)
      kmeans_squared_distance({.d = a.d}, x + at(i, 0, a.d), mu + at(c, 0, a.d), D + at(i, c, a.C));
}

void kmeans_squared_distance(const KmeansSquaredDistanceArgs& a, const double* x, const double* y, double* d2) {
  double s = 0;
  for (int f = 0; f < a.d; ++f) s += (x[f] - y[f]) * (x[f] - y[f]);
  *d2 = s;
}

void kmeans_nearest_update(const KmeansAssignArgs& a, const double* D, double* d2, double* total) {
  double sum = 0;
  for (int i = 0; i < a.k; ++i) {
    d2[i] = std::min(d2[i], D[i]);
    sum += d2[i];
  }
  *total = sum;
}

void kmeans_assign(const KmeansAssignArgs& a, const double* D, int32_t* labels, double* d2) {
  for (int i = 0; i < a.k; ++i) {
    double best = kInf;
    labels[i] = 0;
    for (int c = 0; c < a.C; ++c) {
      const double d = D[at(i, c, a.C)];
      if (d < best) best = d, labels[i] = c;
    }
    d2[i] = best;
  }
}

void kmeans_inertia(const KmeansAssignArgs& a, const double* D, const int32_t* labels, double* inertia) {
  double sum = 0;
  for (int i = 0; i < a.k; ++i) sum += D[at(i, labels[i], a.C)];
  *inertia = sum;
}

void kmeans_pairwise_distances(const KmeansPairwiseArgs& a, const double* G, double* dist) {
  for (int i = 0; i < a.k; ++i)
    for (int j = 0; j < a.k; ++j)
      dist[at(i, j, a.k)] = std::sqrt(std::max(0.0, G[at(i, i, a.k)] - 2 * G[at(i, j, a.k)] + G[at(j, j, a.k)]));
}

void kmeans_dunn_extremes(const KmeansPairwiseArgs& a, const double* dist, const int32_t* labels, double* separation,
                          double* diameter) {
  double s = kInf, d = 0;
  for (int i = 0; i < a.k; ++i)
    for (int j = i + 1; j < a.k; ++j) {
      const double dij = dist[at(i, j, a.k)];
      if (labels[i] == labels[j])
        d = std::max(d, dij);
      else
        s = std::min(s, dij);
    }
  *separation = s, *diameter = d;
}

void kmeans_mean_silhouette(const KmeansSilhouetteArgs& a, const double* dist, const int32_t* labels,
                            const int32_t* offsets, const int32_t* members, double* mean) {
  double total = 0;
  for (int i = 0; i < a.k; ++i) {
    const int own = labels[i];
    const int n_own = offsets[own + 1] - offsets[own];
    if (n_own == 1 && !a.authors) continue; // s(i) = 0
    const auto distance_sum = [&](int c) {
      double sum = 0;
      for (int p = offsets[c]; p < offsets[c + 1]; ++p) sum += dist[at(i, members[p], a.k)];
      return sum;
    };
    // dist[i, i] = 0 is in the sum either way; only the count differs.
    const double a_i = distance_sum(own) / static_cast<double>(a.authors ? n_own : n_own - 1);
    double b_i = kInf;
    for (int c = 0; c < a.C; ++c) {
      const int n = offsets[c + 1] - offsets[c];
      if (n > 0 && c != own) b_i = std::min(b_i, distance_sum(c) / static_cast<double>(n));
    }
    const double denominator = std::max(a_i, b_i);
    if (denominator > 0) total += (b_i - a_i) / denominator;
  }
  *mean = total / a.k;
}

void kmeans_mean_at_labels(const KmeansAssignArgs& a, const double* M, const int32_t* labels, double* mean) {
  double sum = 0;
  for (int i = 0; i < a.k; ++i) sum += M[at(i, labels[i], a.C)];
  *mean = sum / a.k;
}

void kmeans_mean_centroid_cosine(const KmeansGramArgs& a, const double* G, const int32_t* labels, double* mean) {
  const int k = a.k, C = a.C;
  std::vector<double> S(static_cast<size_t>(C) * static_cast<size_t>(C), 0.0); // (C, C) S_ab
  std::vector<int> size(static_cast<size_t>(C), 0);                            // (C) n_a
  for (int i = 0; i < k; ++i) {
    ++size[static_cast<size_t>(labels[i])];
    for (int j = 0; j < k; ++j) S[at(labels[i], labels[j], C)] += G[at(i, j, k)];
  }
  double sum = 0;
  int pairs = 0;
  for (int p = 0; p < C; ++p)
    for (int q = p + 1; q < C; ++q) {
      if (size[static_cast<size_t>(p)] == 0 || size[static_cast<size_t>(q)] == 0) continue;
      const double norms = S[at(p, p, C)] * S[at(q, q, C)];
      sum += S[at(p, q, C)] / std::sqrt(std::max(norms, 1e-300));
      ++pairs;
    }
  *mean = pairs > 0 ? sum / pairs : 0.0;
}

} // namespace pillars::cpu
