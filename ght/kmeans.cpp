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
// take the same decisions, so they give the same labels up to ties closer than rounding.
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
#include <cmath>
#include <limits>

#include "base/splitmix64.h"
#include "base/error.h"

namespace pillars::ght {
namespace {

using Members = std::vector<int>; // the heads of one group, in increasing order

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// ---- the two spaces ------------------------------------------------------------------------------

// Distances from the Gram matrix G (k × k, row-major). A center is its member set plus its squared
// norm ⟨μ, μ⟩. The differences of large dot products can come out a few ulps below 0 where the
// true distance is 0 (a head and a center made of itself): they are clamped at 0.
class GramSpace {
 public:
  struct Center {
    Members members;
    double norm2 = 0; // ⟨μ, μ⟩
  };
  GramSpace(const std::vector<double>& G, int k) : G_(G), k_(k) {}
  int size() const { return k_; }
  Center center(const Members& m) const { return {m, mean_block(m, m)}; }
  double distance2(int i, const Center& c) const {
    return std::max(0.0, at(i, i) - 2 * mean_row(i, c.members) + c.norm2);
  }
  double shift2(const Center& a, const Center& b) const {
    return std::max(0.0, a.norm2 - 2 * mean_block(a.members, b.members) + b.norm2);
  }

 private:
  double at(int i, int j) const {
    return G_[static_cast<size_t>(i) * static_cast<size_t>(k_) + static_cast<size_t>(j)];
  }
  double mean_row(int i, const Members& s) const { // ⟨e_i, μ_S⟩
    double sum = 0;
    for (int j : s) sum += at(i, j);
    return sum / static_cast<double>(s.size());
  }
  double mean_block(const Members& s, const Members& t) const { // ⟨μ_S, μ_T⟩
    double sum = 0;
    for (int j : s)
      for (int j2 : t) sum += at(j, j2);
    return sum / (static_cast<double>(s.size()) * static_cast<double>(t.size()));
  }
  const std::vector<double>& G_;
  int k_;
};

// Distances from the vectors themselves: a center is the mean vector of its members.
class VectorSpace {
 public:
  using Center = std::vector<double>;
  explicit VectorSpace(const std::vector<std::vector<double>>& E) : E_(E) {}
  int size() const { return static_cast<int>(E_.size()); }
  Center center(const Members& m) const {
    Center mu(E_[0].size(), 0.0);
    for (int j : m)
      for (size_t d = 0; d < mu.size(); ++d) mu[d] += E_[static_cast<size_t>(j)][d];
    for (double& x : mu) x /= static_cast<double>(m.size());
    return mu;
  }
  double distance2(int i, const Center& c) const { return squared_distance(E_[static_cast<size_t>(i)], c); }
  double shift2(const Center& a, const Center& b) const { return squared_distance(a, b); }

 private:
  static double squared_distance(const std::vector<double>& a, const std::vector<double>& b) {
    double s = 0;
    for (size_t d = 0; d < a.size(); ++d) s += (a[d] - b[d]) * (a[d] - b[d]);
    return s;
  }
  const std::vector<std::vector<double>>& E_;
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
  while (static_cast<int>(chosen.size()) < C) {
    const auto last = s.center({chosen.back()});
    double total = 0;
    for (int i = 0; i < k; ++i) {
      double& d = d2[static_cast<size_t>(i)];
      d = std::min(d, s.distance2(i, last));
      total += d;
    }
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

// Step 2a: each head to its nearest center (ties: the lower group). Also returns each head's
// squared distance to the center it was given.
template <class Space>
std::vector<int> assign(const Space& s, const std::vector<typename Space::Center>& centers, std::vector<double>& d2) {
  std::vector<int> labels(static_cast<size_t>(s.size()));
  for (int i = 0; i < s.size(); ++i) {
    double best = kInf;
    for (int c = 0; c < static_cast<int>(centers.size()); ++c) {
      const double d = s.distance2(i, centers[static_cast<size_t>(c)]);
      if (d < best) best = d, labels[static_cast<size_t>(i)] = c;
    }
    d2[static_cast<size_t>(i)] = best;
  }
  return labels;
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
  while (r.iterations < o.max_iterations) {
    ++r.iterations;
    r.labels = assign(s, centers, d2);
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
  for (int i = 0; i < k; ++i)
    r.inertia += s.distance2(i, centers[static_cast<size_t>(r.labels[static_cast<size_t>(i)])]);
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
  const auto at = [&](int i, int j) { return G[static_cast<size_t>(i * k + j)]; };
  for (int i = 0; i < k; ++i)
    for (int j = 0; j < k; ++j)
      d[static_cast<size_t>(i * k + j)] = std::sqrt(std::max(0.0, at(i, i) - 2 * at(i, j) + at(j, j)));
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
  const GramSpace s(G, k);
  const std::vector<Members> members = members_of(labels, C);
  std::vector<double> d(static_cast<size_t>(k * C), kNaN);
  for (int c = 0; c < C; ++c) {
    if (members[static_cast<size_t>(c)].empty()) continue;
    const GramSpace::Center mu = s.center(members[static_cast<size_t>(c)]);
    for (int i = 0; i < k; ++i) d[static_cast<size_t>(i * C + c)] = s.distance2(i, mu);
  }
  return d;
}

std::vector<double> cosine_to_centroids(const std::vector<double>& G, int k, const std::vector<int>& labels, int C) {
  check_labels("cosine_to_centroids", G, k, labels, C);
  const std::vector<Members> members = members_of(labels, C);
  std::vector<double> cos(static_cast<size_t>(k * C), kNaN);
  for (int c = 0; c < C; ++c) {
    const Members& m = members[static_cast<size_t>(c)];
    if (m.empty()) continue;
    double norm2 = 0; // ⟨μ_c, μ_c⟩
    for (int j : m)
      for (int j2 : m) norm2 += G[static_cast<size_t>(j * k + j2)];
    norm2 /= static_cast<double>(m.size() * m.size());
    for (int i = 0; i < k; ++i) {
      double dot = 0; // ⟨e_i, μ_c⟩
      for (int j : m) dot += G[static_cast<size_t>(i * k + j)];
      dot /= static_cast<double>(m.size());
      cos[static_cast<size_t>(i * C + c)] = clamped_cosine(dot, G[static_cast<size_t>(i * k + i)], norm2);
    }
  }
  return cos;
}

// Dunn = min_{c(i) ≠ c(j)} d(i, j) / max_{c(i) = c(j)} d(i, j), d the Euclidean distance.
double dunn_index(const std::vector<double>& G, int k, const std::vector<int>& labels) {
  check_labels("dunn_index", G, k, labels, -1);
  const std::vector<double> d = pairwise_distances(G, k);
  double separation = kInf, diameter = 0;
  for (int i = 0; i < k; ++i)
    for (int j = i + 1; j < k; ++j) {
      const double dij = d[static_cast<size_t>(i * k + j)];
      if (labels[static_cast<size_t>(i)] == labels[static_cast<size_t>(j)])
        diameter = std::max(diameter, dij);
      else
        separation = std::min(separation, dij);
    }
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
  double total = 0;
  for (int i = 0; i < k; ++i) {
    const Members& own = members[static_cast<size_t>(labels[static_cast<size_t>(i)])];
    if (own.size() == 1 && !authors) continue; // s(i) = 0
    const auto distance_sum = [&](const Members& m) {
      double sum = 0;
      for (int j : m) sum += d[static_cast<size_t>(i * k + j)];
      return sum;
    };
    // d(i, i) = 0 is in the sum either way; only the count differs.
    const double a = distance_sum(own) / static_cast<double>(authors ? own.size() : own.size() - 1);
    double b = kInf;
    for (const Members& m : members)
      if (!m.empty() && &m != &own) b = std::min(b, distance_sum(m) / static_cast<double>(m.size()));
    const double denominator = std::max(a, b);
    if (denominator > 0) total += (b - a) / denominator;
  }
  return total / k;
}

} // namespace

double silhouette(const std::vector<double>& G, int k, const std::vector<int>& labels) {
  return mean_silhouette("silhouette", G, k, labels, false);
}

double silhouette_ght(const std::vector<double>& G, int k, const std::vector<int>& labels) {
  return mean_silhouette("silhouette_ght", G, k, labels, true);
}

} // namespace pillars::ght
