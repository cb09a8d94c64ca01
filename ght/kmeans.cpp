// K-means over the heads of one module (HUDS, docs/METHOD.md §3), from their Gram matrix or from
// explicit vectors, and the compactness measures of a clustering.
//
// A center is always the mean of a set of heads (its members): k-means++ starts from single heads,
// every Lloyd step replaces each center by the mean of the heads assigned to it. So every distance
// the algorithm needs is a function of G = E Eᵀ (k × k) and the member sets, with
// μ_S = (1/|S|) Σ_{j∈S} e_j:
//   ⟨e_i, μ_S⟩   = (1/|S|)       Σ_{j∈S}        G_ij
//   ⟨μ_S, μ_T⟩   = (1/(|S||T|))  Σ_{j∈S, j'∈T}  G_jj'
//   ‖e_i − μ_S‖² = G_ii − 2 ⟨e_i, μ_S⟩ + ⟨μ_S, μ_S⟩              (distance of a head to a center)
//   ‖μ_S − μ_T‖² = ⟨μ_S, μ_S⟩ − 2 ⟨μ_S, μ_T⟩ + ⟨μ_T, μ_T⟩        (shift of a center)
// The control flow (lloyd() below) is written once, over a "space" that measures these two
// distances: GramSpace from G, VectorSpace from the vectors themselves (the test oracle). Both
// take the same decisions, so they give the same labels up to ties closer than rounding. The loops
// over heads, members and features are the kernels of kernels/cpu/kmeans.h.
//
// The algorithm, for C groups over k heads:
//   1. k-means++ (Arthur & Vassilvitskii 2007) from a SplitMix64 stream seeded with `seed`: the
//      first center is a uniformly drawn head; each next one is head i with probability
//      D(i)² / Σ D², D(i) = distance to the nearest center chosen so far. (If every D(i) is 0 —
//      fewer distinct heads than C — the first head not yet a center is taken.)
//   2. Lloyd iteration: assign each head to its nearest center (ties: the lower group); re-seed
//      every emptied group with the head farthest from its center among groups of two or more;
//      replace each center by the mean of its members; stop when Σ_c ‖μ_c(new) − μ_c(old)‖² <
//      tolerance, when no member set changed (a fixed point), or after max_iterations.
//   3. Renumber the groups by first member: head 0 is in group 0, the first head not in group 0
//      starts group 1, and so on (labels are then canonical, independent of the draw order).
#include "ght/kmeans.h"

#include <algorithm>
#include <limits>

#include "base/error.h"
#include "base/splitmix64.h"
#include "kernels/cpu/kmeans.h"

namespace pillars::ght {
namespace {

using Members = std::vector<int>; // the heads of one group, in increasing order

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Member sets as the kernels take them: set c is members[offsets[c] .. offsets[c + 1]).
struct Groups {
  std::vector<int32_t> offsets{0}, members;
  explicit Groups(const std::vector<Members>& sets) {
    for (const Members& m : sets) {
      members.insert(members.end(), m.begin(), m.end());
      offsets.push_back(static_cast<int32_t>(members.size()));
    }
  }
};

// ---- the two spaces ------------------------------------------------------------------------------

// Distances from the Gram matrix G (k × k, row-major). A center is its member set plus its squared
// norm ⟨μ, μ⟩. The differences of large dot products can come out a few ulps below 0 where the
// true distance is 0 (a head and a center made of itself): the kernels clamp them at 0.
class GramSpace {
 public:
  struct Center {
    Members members;
    double norm2 = 0; // ⟨μ, μ⟩
  };
  GramSpace(const std::vector<double>& G, int k) : G_(G), k_(k) {}
  int size() const { return k_; }
  Center center(const Members& m) const {
    Center c{m};
    const Groups g({m});
    cpu::kmeans_gram_norms({.k = k_, .C = 1}, G_.data(), g.offsets.data(), g.members.data(), &c.norm2);
    return c;
  }
  // D (k, C): D[i, c] = ‖e_i − μ_c‖².
  void distances(const std::vector<Center>& centers, double* D) const {
    std::vector<Members> sets;
    std::vector<double> norm2;
    for (const Center& c : centers) sets.push_back(c.members), norm2.push_back(c.norm2);
    const Groups g(sets);
    cpu::kmeans_gram_distances({.k = k_, .C = static_cast<int>(centers.size())}, G_.data(), g.offsets.data(),
                               g.members.data(), norm2.data(), D);
  }
  double shift2(const Center& a, const Center& b) const {
    double s2 = 0;
    cpu::kmeans_gram_shift({.k = k_,
                            .n_a = static_cast<int>(a.members.size()),
                            .n_b = static_cast<int>(b.members.size()),
                            .norm2_a = a.norm2,
                            .norm2_b = b.norm2},
                           G_.data(), a.members.data(), b.members.data(), &s2);
    return s2;
  }

 private:
  const std::vector<double>& G_;
  int k_;
};

// Distances from the vectors themselves (x: (n, d) row-major): a center is the mean vector of its
// members.
class VectorSpace {
 public:
  using Center = std::vector<double>; // (d)
  explicit VectorSpace(const std::vector<std::vector<double>>& E)
      : n_(static_cast<int>(E.size())), d_(static_cast<int>(E[0].size())) {
    for (const auto& e : E) x_.insert(x_.end(), e.begin(), e.end());
  }
  int size() const { return n_; }
  Center center(const Members& m) const {
    Center mu(static_cast<size_t>(d_));
    const Groups g({m});
    cpu::kmeans_vector_means({.n = n_, .C = 1, .d = d_}, x_.data(), g.offsets.data(), g.members.data(), mu.data());
    return mu;
  }
  // D (n, C): D[i, c] = ‖x_i − μ_c‖².
  void distances(const std::vector<Center>& centers, double* D) const {
    std::vector<double> mu; // (C, d)
    for (const Center& c : centers) mu.insert(mu.end(), c.begin(), c.end());
    cpu::kmeans_vector_distances({.n = n_, .C = static_cast<int>(centers.size()), .d = d_}, x_.data(), mu.data(), D);
  }
  double shift2(const Center& a, const Center& b) const {
    double s2 = 0;
    cpu::kmeans_squared_distance({.d = d_}, a.data(), b.data(), &s2);
    return s2;
  }

 private:
  int n_, d_;
  std::vector<double> x_; // (n, d)
};

// ---- the algorithm, written once -----------------------------------------------------------------

std::vector<Members> members_of(const std::vector<int>& labels, int C) {
  std::vector<Members> m(static_cast<size_t>(C));
  for (int i = 0; i < static_cast<int>(labels.size()); ++i)
    m[static_cast<size_t>(labels[static_cast<size_t>(i)])].push_back(i);
  return m;
}

// Step 1: the C initial heads, by k-means++.
template <class Space>
std::vector<Members> kmeans_plus_plus(const Space& s, int C, uint64_t seed) {
  const int k = s.size();
  SplitMix64 rng(seed);
  std::vector<int> chosen{std::min(k - 1, static_cast<int>(rng.uniform() * k))};
  std::vector<double> d2(static_cast<size_t>(k), kInf); // D(i)²: to the nearest chosen head
  std::vector<double> to_last(static_cast<size_t>(k));  // to the head chosen last
  while (static_cast<int>(chosen.size()) < C) {
    s.distances({s.center({chosen.back()})}, to_last.data());
    double total = 0;
    cpu::kmeans_nearest_update({.k = k, .C = 1}, to_last.data(), d2.data(), &total);
    int next = -1;
    if (total > 0) {
      const double target = rng.uniform() * total;
      double cumulative = 0;
      for (int i = 0; i < k && next < 0; ++i) {
        cumulative += d2[static_cast<size_t>(i)];
        if (d2[static_cast<size_t>(i)] > 0 && cumulative > target) next = i;
      }
      // Rounding can leave target ≥ the last partial sum: take the last head that can be drawn.
      for (int i = k - 1; next < 0; --i)
        if (d2[static_cast<size_t>(i)] > 0) next = i;
    } else {
      for (int i = 0; next < 0; ++i)
        if (std::find(chosen.begin(), chosen.end(), i) == chosen.end()) next = i;
    }
    chosen.push_back(next);
  }
  std::vector<Members> m;
  for (int j : chosen) m.push_back({j});
  return m;
}

// Step 2a: each head to its nearest center (ties: the lower group). Also gives each head's
// squared distance to the center it was given.
template <class Space>
void assign(const Space& s, const std::vector<typename Space::Center>& centers, std::vector<int>& labels,
            std::vector<double>& d2) {
  const int k = s.size(), C = static_cast<int>(centers.size());
  std::vector<double> D(static_cast<size_t>(k) * static_cast<size_t>(C)); // (k, C)
  s.distances(centers, D.data());
  cpu::kmeans_assign({.k = k, .C = C}, D.data(), labels.data(), d2.data());
}

// Step 2b: an emptied group takes the head farthest from its center among the groups that have two
// or more members (ties: the lower head), so no other group empties. Groups in increasing order.
void reseed_empty_groups(std::vector<int>& labels, std::vector<double>& d2, int C) {
  std::vector<int> count(static_cast<size_t>(C), 0);
  for (int c : labels) ++count[static_cast<size_t>(c)];
  for (int c = 0; c < C; ++c) {
    if (count[static_cast<size_t>(c)] > 0) continue;
    int far = -1;
    for (int i = 0; i < static_cast<int>(labels.size()); ++i)
      if (count[static_cast<size_t>(labels[static_cast<size_t>(i)])] > 1 &&
          (far < 0 || d2[static_cast<size_t>(i)] > d2[static_cast<size_t>(far)]))
        far = i;
    --count[static_cast<size_t>(labels[static_cast<size_t>(far)])];
    labels[static_cast<size_t>(far)] = c, count[static_cast<size_t>(c)] = 1, d2[static_cast<size_t>(far)] = 0;
  }
}

// Step 3: groups renumbered in the order of their first member.
std::vector<int> renumber_by_first_member(const std::vector<int>& labels, int C) {
  std::vector<int> to(static_cast<size_t>(C), -1), out;
  int next = 0;
  for (int c : labels) {
    if (to[static_cast<size_t>(c)] < 0) to[static_cast<size_t>(c)] = next++;
    out.push_back(to[static_cast<size_t>(c)]);
  }
  return out;
}

template <class Space>
Clustering lloyd(const Space& s, int C, uint64_t seed, const KMeansOptions& o) {
  const int k = s.size();
  PILLARS_CHECK(k >= 1 && C >= 1 && C <= k, "kmeans: ", C, " groups over ", k, " heads (want 1 <= groups <= heads)");
  PILLARS_CHECK(o.max_iterations >= 1, "kmeans: max_iterations must be >= 1, got ", o.max_iterations);
  using Center = typename Space::Center;

  std::vector<Members> members = kmeans_plus_plus(s, C, seed);
  std::vector<Center> centers;
  for (const Members& m : members) centers.push_back(s.center(m));

  Clustering r;
  r.groups = C;
  std::vector<double> d2(static_cast<size_t>(k));
  r.labels.resize(static_cast<size_t>(k));
  while (r.iterations < o.max_iterations) {
    ++r.iterations;
    assign(s, centers, r.labels, d2);
    reseed_empty_groups(r.labels, d2, C);
    const std::vector<Members> next = members_of(r.labels, C);
    double shift = 0;
    for (int c = 0; c < C; ++c) {
      const size_t cc = static_cast<size_t>(c);
      if (next[cc] == members[cc]) continue; // same members, same center: exactly 0
      Center moved = s.center(next[cc]);
      shift += s.shift2(centers[cc], moved);
      centers[cc] = std::move(moved);
    }
    const bool fixed_point = next == members;
    members = next;
    r.shift = shift;
    if (fixed_point || shift < o.tolerance) break;
  }
  std::vector<double> D(static_cast<size_t>(k) * static_cast<size_t>(C)); // (k, C)
  s.distances(centers, D.data());
  cpu::kmeans_inertia({.k = k, .C = C}, D.data(), r.labels.data(), &r.inertia);
  r.labels = renumber_by_first_member(r.labels, C);
  return r;
}

// ---- helpers on G --------------------------------------------------------------------------------

int check_labels(const char* what, const std::vector<double>& G, int k, const std::vector<int>& labels, int C) {
  PILLARS_CHECK(k >= 1 && G.size() == static_cast<size_t>(k) * static_cast<size_t>(k), what, ": G has ", G.size(),
                " entries, want ", k, " x ", k);
  PILLARS_CHECK(labels.size() == static_cast<size_t>(k), what, ": ", labels.size(), " labels for ", k, " heads");
  int groups = C;
  for (int c : labels) {
    PILLARS_CHECK(c >= 0 && (C < 0 || c < C), what, ": label ", c, " outside [0, ", C, ")");
    groups = std::max(groups, c + 1);
  }
  return groups;
}

// Euclidean distances between heads (k × k), from G.
std::vector<double> pairwise_distances(const std::vector<double>& G, int k) {
  std::vector<double> d(G.size());
  cpu::kmeans_pairwise_distances({.k = k}, G.data(), d.data());
  return d;
}

} // namespace

Clustering kmeans_gram(const std::vector<double>& G, int k, int C, uint64_t seed, const KMeansOptions& o) {
  PILLARS_CHECK(k >= 1 && G.size() == static_cast<size_t>(k) * static_cast<size_t>(k), "kmeans_gram: G has ", G.size(),
                " entries, want ", k, " x ", k);
  return lloyd(GramSpace(G, k), C, seed, o);
}

Clustering kmeans_vectors(const std::vector<std::vector<double>>& E, int C, uint64_t seed, const KMeansOptions& o) {
  PILLARS_CHECK(!E.empty(), "kmeans_vectors: no vectors");
  for (const auto& e : E) PILLARS_CHECK(e.size() == E[0].size(), "kmeans_vectors: vectors of different lengths");
  return lloyd(VectorSpace(E), C, seed, o);
}

std::vector<double> distance_to_centroids(const std::vector<double>& G, int k, const std::vector<int>& labels, int C) {
  check_labels("distance_to_centroids", G, k, labels, C);
  const Groups g(members_of(labels, C));
  std::vector<double> norm2(static_cast<size_t>(C)), d(static_cast<size_t>(k * C));
  cpu::kmeans_gram_norms({.k = k, .C = C}, G.data(), g.offsets.data(), g.members.data(), norm2.data());
  cpu::kmeans_gram_distances({.k = k, .C = C}, G.data(), g.offsets.data(), g.members.data(), norm2.data(), d.data());
  return d;
}

std::vector<double> cosine_to_centroids(const std::vector<double>& G, int k, const std::vector<int>& labels, int C) {
  check_labels("cosine_to_centroids", G, k, labels, C);
  const Groups g(members_of(labels, C));
  std::vector<double> norm2(static_cast<size_t>(C)), cos(static_cast<size_t>(k * C));
  cpu::kmeans_gram_norms({.k = k, .C = C}, G.data(), g.offsets.data(), g.members.data(), norm2.data());
  cpu::kmeans_gram_cosines({.k = k, .C = C, .eps = kCosineEps}, G.data(), g.offsets.data(), g.members.data(),
                           norm2.data(), cos.data()); // clamped_cosine of ⟨e_i, μ_c⟩, G_ii, ⟨μ_c, μ_c⟩
  return cos;
}

// Dunn = min_{c(i) ≠ c(j)} d(i, j) / max_{c(i) = c(j)} d(i, j), d the Euclidean distance.
double dunn_index(const std::vector<double>& G, int k, const std::vector<int>& labels) {
  check_labels("dunn_index", G, k, labels, -1);
  const std::vector<double> d = pairwise_distances(G, k);
  double separation = kInf, diameter = 0;
  cpu::kmeans_dunn_extremes({.k = k}, d.data(), labels.data(), &separation, &diameter);
  if (separation == kInf) return kNaN; // one group: no separation to measure
  return diameter > 0 ? separation / diameter : kInf;
}

namespace {

// The mean of s(i) = (b − a) / max(a, b) over the k heads, b = the smallest mean distance to the
// members of another group, a = the distance sum to the other members of i's group divided by
//   |own| − 1 (standard: the mean over the others; a member alone in its group scores 0), or
//   |own|     (authors: i itself counted; a member alone has a = 0 and scores 1).
// s(i) = 0 where a = b = 0 (scikit-learn's nan_to_num; the authors' script would divide by zero).
// NaN with fewer than two non-empty groups (b is undefined).
double mean_silhouette(const char* name, const std::vector<double>& G, int k, const std::vector<int>& labels,
                       bool authors) {
  const int C = check_labels(name, G, k, labels, -1);
  const std::vector<double> d = pairwise_distances(G, k);
  const std::vector<Members> members = members_of(labels, C);
  int nonempty = 0;
  for (const Members& m : members) nonempty += m.empty() ? 0 : 1;
  if (nonempty < 2) return kNaN; // b is undefined
  const Groups g(members);
  double mean = kNaN;
  cpu::kmeans_mean_silhouette({.k = k, .C = C, .authors = authors}, d.data(), labels.data(), g.offsets.data(),
                              g.members.data(), &mean);
  return mean;
}

} // namespace

double silhouette(const std::vector<double>& G, int k, const std::vector<int>& labels) {
  return mean_silhouette("silhouette", G, k, labels, false);
}

double silhouette_ght(const std::vector<double>& G, int k, const std::vector<int>& labels) {
  return mean_silhouette("silhouette_ght", G, k, labels, true);
}

} // namespace pillars::ght
