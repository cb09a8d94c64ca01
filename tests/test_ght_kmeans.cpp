// HUDS K-means from the Gram matrix (ght/kmeans.h), held against the same algorithm on explicit
// vectors and against direct float64 computations written here (centroids as means of member
// vectors, distances and cosines from the vectors, Dunn and Silhouette by their definitions).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "base/error.h"
#include "ght/kmeans.h"

using namespace pillars;
using namespace pillars::ght;

namespace {

using Vectors = std::vector<std::vector<double>>;
constexpr double kInf = std::numeric_limits<double>::infinity();

Vectors random_vectors(int k, int dim, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> n(0.0, 1.0);
  Vectors E(static_cast<size_t>(k), std::vector<double>(static_cast<size_t>(dim)));
  for (auto& e : E)
    for (double& x : e) x = n(rng);
  return E;
}

// k vectors in C clusters: center c is `separation` times a random normal vector, members add
// noise of standard deviation `noise`; truth[i] is head i's cluster, assigned in a scrambled order.
Vectors clustered_vectors(int k, int C, int dim, uint32_t seed, double separation, double noise,
                          std::vector<int>& truth) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> n(0.0, 1.0);
  truth.resize(static_cast<size_t>(k));
  for (int i = 0; i < k; ++i) truth[static_cast<size_t>(i)] = i % C;
  std::shuffle(truth.begin(), truth.end(), rng);
  Vectors centers(static_cast<size_t>(C), std::vector<double>(static_cast<size_t>(dim)));
  for (auto& c : centers)
    for (double& x : c) x = separation * n(rng);
  Vectors E;
  for (int i = 0; i < k; ++i) {
    std::vector<double> e = centers[static_cast<size_t>(truth[static_cast<size_t>(i)])];
    for (double& x : e) x += noise * n(rng);
    E.push_back(e);
  }
  return E;
}

std::vector<double> gram_of(const Vectors& E) {
  const size_t k = E.size();
  std::vector<double> G(k * k);
  for (size_t i = 0; i < k; ++i)
    for (size_t j = 0; j < k; ++j) G[i * k + j] = std::inner_product(E[i].begin(), E[i].end(), E[j].begin(), 0.0);
  return G;
}

double distance(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t d = 0; d < a.size(); ++d) s += (a[d] - b[d]) * (a[d] - b[d]);
  return std::sqrt(s);
}

// The mean of the members of group c (empty when it has none).
std::vector<double> centroid(const Vectors& E, const std::vector<int>& labels, int c) {
  std::vector<double> mu(E[0].size(), 0.0);
  int n = 0;
  for (size_t i = 0; i < E.size(); ++i)
    if (labels[i] == c) {
      ++n;
      for (size_t d = 0; d < mu.size(); ++d) mu[d] += E[i][d];
    }
  if (n == 0) return {};
  for (double& x : mu) x /= n;
  return mu;
}

// Groups renumbered by first member (what kmeans returns).
std::vector<int> canonical(const std::vector<int>& labels) {
  std::vector<int> map(labels.size() + 1, -1), out;
  int next = 0;
  for (int c : labels) {
    if (map[static_cast<size_t>(c)] < 0) map[static_cast<size_t>(c)] = next++;
    out.push_back(map[static_cast<size_t>(c)]);
  }
  return out;
}

// Every group in [0, C) has members, and the labels are canonical.
void check_valid(const Clustering& r, int k, int C) {
  REQUIRE(r.labels.size() == static_cast<size_t>(k));
  CHECK(r.groups == C);
  CHECK(r.labels == canonical(r.labels));
  CHECK(std::set<int>(r.labels.begin(), r.labels.end()).size() == static_cast<size_t>(C));
  CHECK(*std::max_element(r.labels.begin(), r.labels.end()) == C - 1);
}

bool close(double a, double b, double rel, double abs) { return std::fabs(a - b) <= abs + rel * std::fabs(b); }

// The Dunn index on explicit vectors: min distance across groups / max distance within a group.
double dunn_direct(const Vectors& E, const std::vector<int>& labels) {
  double across = kInf, within = 0;
  for (size_t i = 0; i < E.size(); ++i)
    for (size_t j = 0; j < E.size(); ++j) {
      if (i == j) continue;
      if (labels[i] == labels[j])
        within = std::max(within, distance(E[i], E[j]));
      else
        across = std::min(across, distance(E[i], E[j]));
    }
  return across / within;
}

// scikit-learn's silhouette_samples, averaged: a = mean distance to the other members of the own
// group, b = min over other non-empty groups of the mean distance to their members,
// s = (b − a) / max(a, b), 0 for a singleton.
double silhouette_direct(const Vectors& E, const std::vector<int>& labels) {
  const int C = *std::max_element(labels.begin(), labels.end()) + 1;
  double total = 0;
  for (size_t i = 0; i < E.size(); ++i) {
    std::vector<double> sum(static_cast<size_t>(C), 0.0);
    std::vector<int> count(static_cast<size_t>(C), 0);
    for (size_t j = 0; j < E.size(); ++j) {
      if (j == i) continue;
      sum[static_cast<size_t>(labels[j])] += distance(E[i], E[j]);
      ++count[static_cast<size_t>(labels[j])];
    }
    const int own = labels[i];
    if (count[static_cast<size_t>(own)] == 0) continue; // singleton: 0
    const double a = sum[static_cast<size_t>(own)] / count[static_cast<size_t>(own)];
    double b = kInf;
    for (int c = 0; c < C; ++c)
      if (c != own && count[static_cast<size_t>(c)] > 0)
        b = std::min(b, sum[static_cast<size_t>(c)] / count[static_cast<size_t>(c)]);
    total += (b - a) / std::max(a, b);
  }
  return total / static_cast<double>(E.size());
}

// The authors' Fig. 2 script, transcribed: for each head, a = (Σ of its distances to the other
// members of its group) / (the group's size, itself included), b as above, s = (b − a)/max(a, b);
// a head alone in its group has a = 0 and so s = 1. The mean over all heads.
double silhouette_ght_direct(const Vectors& E, const std::vector<int>& labels) {
  const int C = *std::max_element(labels.begin(), labels.end()) + 1;
  double total = 0;
  for (size_t i = 0; i < E.size(); ++i) {
    std::vector<double> sum(static_cast<size_t>(C), 0.0);
    std::vector<int> size(static_cast<size_t>(C), 0);
    for (size_t j = 0; j < E.size(); ++j) {
      if (j != i) sum[static_cast<size_t>(labels[j])] += distance(E[i], E[j]);
      ++size[static_cast<size_t>(labels[j])];
    }
    const int own = labels[i];
    const double a = sum[static_cast<size_t>(own)] / size[static_cast<size_t>(own)];
    double b = kInf;
    for (int c = 0; c < C; ++c)
      if (c != own && size[static_cast<size_t>(c)] > 0)
        b = std::min(b, sum[static_cast<size_t>(c)] / size[static_cast<size_t>(c)]);
    total += (b - a) / std::max(a, b);
  }
  return total / static_cast<double>(E.size());
}

} // namespace

TEST_CASE("ght kmeans: from the Gram matrix equals K-means on the explicit vectors, for many seeds and shapes") {
  int runs = 0, multi_iteration = 0;
  for (int k : {4, 8, 16})
    for (int C : {1, 2, 3, k})
      for (int dim : {1, 3, 40})
        for (uint32_t seed = 0; seed < 20; ++seed)
          for (bool clustered : {false, true}) {
            std::vector<int> truth;
            const uint32_t data_seed = seed * 7919u + static_cast<uint32_t>(k * 131 + C * 17 + dim);
            const Vectors E = clustered ? clustered_vectors(k, std::min(C + 1, k), dim, data_seed, 3.0, 1.0, truth)
                                        : random_vectors(k, dim, data_seed);
            const Clustering from_gram = kmeans_gram(gram_of(E), k, C, seed);
            const Clustering from_vectors = kmeans_vectors(E, C, seed);
            INFO("k ", k, ", C ", C, ", dim ", dim, ", seed ", seed, clustered ? ", clustered" : ", random");
            CHECK(from_gram.labels == from_vectors.labels);
            CHECK(from_gram.iterations == from_vectors.iterations);
            CHECK(close(from_gram.inertia, from_vectors.inertia, 1e-9, 1e-9));
            CHECK(close(from_gram.shift, from_vectors.shift, 1e-9, 1e-9));
            check_valid(from_gram, k, C);
            // The inertia is Σ_i ‖e_i − μ_c(i)‖² of the returned labels (means of the members).
            double inertia = 0;
            for (int i = 0; i < k; ++i) {
              const double d = distance(E[static_cast<size_t>(i)],
                                        centroid(E, from_vectors.labels, from_vectors.labels[static_cast<size_t>(i)]));
              inertia += d * d;
            }
            CHECK(close(from_vectors.inertia, inertia, 1e-9, 1e-12));
            ++runs;
            multi_iteration += from_gram.iterations > 2 ? 1 : 0;
          }
  CHECK(runs == 3 * 4 * 3 * 20 * 2);
  CHECK(multi_iteration > runs / 20); // the comparison covers real Lloyd iterations, not only the start
}

TEST_CASE("ght kmeans: one seed gives one clustering, different seeds explore different starts") {
  const Vectors E = random_vectors(16, 2, 3);
  const std::vector<double> G = gram_of(E);
  std::set<std::vector<int>> distinct;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    const Clustering a = kmeans_gram(G, 16, 4, seed), b = kmeans_gram(G, 16, 4, seed);
    CHECK(a.labels == b.labels);
    CHECK(a.iterations == b.iterations);
    CHECK(a.inertia == b.inertia);
    CHECK(a.labels[0] == 0); // canonical: head 0 opens group 0
    distinct.insert(a.labels);
  }
  CHECK(distinct.size() >= 2); // uniform 2-D points have several local optima
  // Large seeds (the run seed is added to the op's) work the same.
  CHECK(kmeans_gram(G, 16, 4, ~0ull).labels == kmeans_vectors(E, 4, ~0ull).labels);
}

TEST_CASE("ght kmeans: well-separated clusters are recovered exactly, from every seed") {
  for (auto [k, C] : {std::pair{12, 3}, std::pair{8, 2}, std::pair{16, 4}, std::pair{16, 8}}) {
    std::vector<int> truth;
    const Vectors E = clustered_vectors(k, C, 20, static_cast<uint32_t>(k + C), 10.0, 0.1, truth);
    const std::vector<double> G = gram_of(E);
    double inertia = 0; // of the true partition
    for (int i = 0; i < k; ++i) {
      const double d = distance(E[static_cast<size_t>(i)], centroid(E, truth, truth[static_cast<size_t>(i)]));
      inertia += d * d;
    }
    for (uint64_t seed = 0; seed < 50; ++seed) {
      INFO("k ", k, ", C ", C, ", seed ", seed);
      const Clustering r = kmeans_gram(G, k, C, seed);
      CHECK(r.labels == canonical(truth));
      CHECK(close(r.inertia, inertia, 1e-9, 1e-12));
    }
  }
  // C = k: every head is its own group.
  const Vectors E = random_vectors(8, 5, 11);
  std::vector<int> identity(8);
  std::iota(identity.begin(), identity.end(), 0);
  for (uint64_t seed = 0; seed < 10; ++seed) {
    const Clustering r = kmeans_gram(gram_of(E), 8, 8, seed);
    CHECK(r.labels == identity);
    CHECK(r.inertia == 0.0);
  }
}

TEST_CASE("ght kmeans: tolerance and max_iterations stop the Lloyd iterations where they should") {
  // Data and seed that need several iterations.
  const int k = 16, C = 4;
  const Vectors E = random_vectors(k, 2, 5);
  const std::vector<double> G = gram_of(E);
  uint64_t seed = 0;
  Clustering full;
  for (; seed < 100; ++seed) {
    full = kmeans_gram(G, k, C, seed, {.max_iterations = 100, .tolerance = 0.0});
    if (full.iterations >= 4) break;
  }
  REQUIRE(full.iterations >= 4);
  REQUIRE(full.iterations < 100); // tolerance 0 ends at a fixed point
  CHECK(full.shift == 0.0);

  // A fixed point: every head is nearest (among the means of the final groups) to its own group's.
  std::vector<std::vector<double>> means;
  for (int c = 0; c < C; ++c) means.push_back(centroid(E, full.labels, c));
  for (int i = 0; i < k; ++i)
    for (int c = 0; c < C; ++c)
      CHECK(distance(E[static_cast<size_t>(i)], means[static_cast<size_t>(full.labels[static_cast<size_t>(i)])]) <=
            distance(E[static_cast<size_t>(i)], means[static_cast<size_t>(c)]) + 1e-12);

  // max_iterations = n runs the first n iterations of the same sequence; record each one's shift.
  std::vector<Clustering> prefix(1);
  for (int n = 1; n <= full.iterations + 2; ++n) {
    prefix.push_back(kmeans_gram(G, k, C, seed, {.max_iterations = n, .tolerance = 0.0}));
    CHECK(prefix[static_cast<size_t>(n)].iterations == std::min(n, full.iterations));
    CHECK(kmeans_vectors(E, C, seed, {.max_iterations = n, .tolerance = 0.0}).labels ==
          prefix[static_cast<size_t>(n)].labels);
  }
  CHECK(prefix[static_cast<size_t>(full.iterations)].labels == full.labels);
  // The shifts of the sequence are not all 0 before the end (the stop rule has something to cut).
  CHECK(prefix[1].shift > 0.0);

  // Tolerance t stops at the first iteration whose shift is < t (or at the fixed point).
  std::vector<double> tolerances{1e-4, 1e300, 0.5, 1e-12};
  for (int n = 1; n <= full.iterations; ++n) {
    tolerances.push_back(prefix[static_cast<size_t>(n)].shift);
    tolerances.push_back(std::nextafter(prefix[static_cast<size_t>(n)].shift, kInf));
  }
  for (double t : tolerances) {
    int expected = full.iterations;
    for (int n = 1; n <= full.iterations; ++n)
      if (prefix[static_cast<size_t>(n)].shift < t) {
        expected = n;
        break;
      }
    const Clustering r = kmeans_gram(G, k, C, seed, {.max_iterations = 100, .tolerance = t});
    INFO("tolerance ", t);
    CHECK(r.iterations == expected);
    CHECK(r.labels == prefix[static_cast<size_t>(expected)].labels);
    CHECK(r.shift == prefix[static_cast<size_t>(expected)].shift);
  }
  CHECK(kmeans_gram(G, k, C, seed, {.max_iterations = 100, .tolerance = 1e300}).iterations == 1);
  CHECK_THROWS_AS(kmeans_gram(G, k, C, seed, {.max_iterations = 0, .tolerance = 1e-4}), Error);
}

TEST_CASE("ght kmeans: degenerate inputs give valid groups, bad arguments are errors") {
  // All heads zero (fully padded maps): every distance is 0, so every head goes to group 0 (ties go
  // to the lower group) and each emptied group takes the lowest head of a group of two or more
  // (ties among the farthest go to the lower head): heads 0, 1, ... open groups 1, 2, ...
  const std::vector<double> zeros(64, 0.0);
  const std::vector<std::vector<int>> expected{
      {0, 0, 0, 0, 0, 0, 0, 0}, {0, 1, 2, 2, 2, 2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7}};
  for (int C : {1, 3, 8})
    for (uint64_t seed = 0; seed < 10; ++seed) {
      const Clustering r = kmeans_gram(zeros, 8, C, seed);
      check_valid(r, 8, C);
      CHECK(r.labels == expected[C == 1 ? 0 : C == 3 ? 1 : 2]);
      CHECK(r.inertia == 0.0);
    }
  // Two distinct vectors A (heads 0, 2, 3, 5) and B (heads 1, 4), three groups: k-means++ puts a
  // center on each and the third on a duplicate; the heads of the duplicated vector tie and all join
  // the lower of its two groups, and the emptied one is re-seeded with head 0, the lowest of the
  // (all equally far) heads: {0}, the B heads, the other A heads.
  Vectors E(6, std::vector<double>{1.0, 2.0});
  E[1] = E[4] = {-3.0, 0.5};
  for (uint64_t seed = 0; seed < 10; ++seed) {
    CHECK(kmeans_gram(gram_of(E), 6, 3, seed).labels == std::vector<int>{0, 1, 2, 2, 1, 2});
    CHECK(kmeans_vectors(E, 3, seed).labels == std::vector<int>{0, 1, 2, 2, 1, 2});
  }
  CHECK_THROWS_AS(kmeans_gram(zeros, 8, 0, 1), Error);
  CHECK_THROWS_AS(kmeans_gram(zeros, 8, 9, 1), Error);
  CHECK_THROWS_AS(kmeans_gram(zeros, 7, 2, 1), Error); // 64 entries are not 7 x 7
}

TEST_CASE("ght kmeans: distance and cosine to centroids from G equal the direct computation") {
  Vectors E = random_vectors(9, 7, 21);
  E[4].assign(7, 0.0); // a zero head: cosine 0, not NaN
  const std::vector<double> G = gram_of(E);
  const std::vector<int> labels{0, 2, 2, 0, 3, 0, 2, 3, 3}; // group 1 has no members
  const int C = 4;
  const std::vector<double> d2 = distance_to_centroids(G, 9, labels, C), cos = cosine_to_centroids(G, 9, labels, C);
  for (int c = 0; c < C; ++c) {
    const std::vector<double> mu = centroid(E, labels, c);
    for (size_t i = 0; i < 9; ++i) {
      const size_t at = i * C + static_cast<size_t>(c);
      INFO("head ", i, ", group ", c);
      if (mu.empty()) {
        CHECK(std::isnan(d2[at]));
        CHECK(std::isnan(cos[at]));
        continue;
      }
      const double d = distance(E[i], mu);
      CHECK(close(d2[at], d * d, 1e-9, 1e-12));
      const double dot = std::inner_product(E[i].begin(), E[i].end(), mu.begin(), 0.0);
      const double ni = std::sqrt(std::inner_product(E[i].begin(), E[i].end(), E[i].begin(), 0.0));
      const double nm = std::sqrt(std::inner_product(mu.begin(), mu.end(), mu.begin(), 0.0));
      CHECK(close(cos[at], ni > 0 ? dot / (ni * nm) : 0.0, 1e-9, 1e-12));
    }
  }
  CHECK(cos[4 * C + 0] == 0.0);
  CHECK(clamped_cosine(0.0, 0.0, 0.0) == 0.0);
  CHECK(clamped_cosine(2.0, 4.0, 1.0) == 1.0);
}

TEST_CASE("ght kmeans: Dunn index and Silhouette, both conventions, equal a direct float64 computation") {
  // By hand, 1-D points 0, 1, 10, 11 in groups {0, 1} and {10, 11}:
  //   Dunn = 9 / 1; s = (10.5 − 1)/10.5 for 0 and 11, (9.5 − 1)/9.5 for 1 and 10.
  const Vectors line{{0.0}, {1.0}, {10.0}, {11.0}};
  CHECK(dunn_index(gram_of(line), 4, {0, 0, 1, 1}) == doctest::Approx(9.0).epsilon(1e-12));
  CHECK(silhouette(gram_of(line), 4, {0, 0, 1, 1}) == doctest::Approx((9.5 / 10.5 + 8.5 / 9.5) / 2).epsilon(1e-12));
  // A singleton scores 0: groups {0}, {1, 10, 11}: s(1) = (1 − 9.5)/9.5, s(10) = (10 − 5)/10, s(11) = (11 − 5.5)/11.
  CHECK(silhouette(gram_of(line), 4, {0, 1, 1, 1}) ==
        doctest::Approx((-8.5 / 9.5 + 5.0 / 10 + 5.5 / 11) / 4).epsilon(1e-12));
  // The authors' convention divides a by the group's size: groups {0, 1}, {10, 11}: a = 1/2 for
  // every head; s = (10.5 − 0.5)/10.5 for 0 and 11, (9.5 − 0.5)/9.5 for 1 and 10.
  CHECK(silhouette_ght(gram_of(line), 4, {0, 0, 1, 1}) ==
        doctest::Approx((10.0 / 10.5 + 9.0 / 9.5) / 2).epsilon(1e-12));
  // Groups {0}, {1, 10, 11}: the singleton 0 has a = 0 → s = 1; s(1): a = (9 + 10)/3, b = 1 →
  // (1 − 19/3)/(19/3) = −16/19; s(10): a = (9 + 1)/3, b = 10 → 2/3; s(11): a = (10 + 1)/3, b = 11 → 2/3.
  CHECK(silhouette_ght(gram_of(line), 4, {0, 1, 1, 1}) ==
        doctest::Approx((1.0 - 16.0 / 19 + 2.0 / 3 + 2.0 / 3) / 4).epsilon(1e-12));

  // Random vectors and labellings (with singletons and empty label values).
  std::mt19937 rng(99);
  int checked = 0;
  for (int k : {4, 8, 16})
    for (int trial = 0; trial < 60; ++trial) {
      const Vectors E = random_vectors(k, 1 + trial % 6, static_cast<uint32_t>(1000 + trial * 31 + k));
      const int C = 2 + trial % (k - 1);
      std::vector<int> labels(static_cast<size_t>(k));
      for (int& c : labels) c = std::uniform_int_distribution<int>(0, C - 1)(rng);
      if (std::set<int>(labels.begin(), labels.end()).size() < 2) continue;
      const std::vector<double> G = gram_of(E);
      INFO("k ", k, ", trial ", trial);
      const double dunn = dunn_direct(E, labels), sil = silhouette_direct(E, labels);
      if (std::isinf(dunn))
        CHECK(std::isinf(dunn_index(G, k, labels)));
      else
        CHECK(close(dunn_index(G, k, labels), dunn, 1e-9, 1e-12));
      CHECK(close(silhouette(G, k, labels), sil, 1e-9, 1e-12));
      CHECK(close(silhouette_ght(G, k, labels), silhouette_ght_direct(E, labels), 1e-9, 1e-12));
      CHECK(silhouette_ght(G, k, labels) >= silhouette(G, k, labels) - 1e-12); // a smaller a, head by head
      ++checked;
    }
  CHECK(checked > 150);

  // On a K-means result of clustered data, as the metrics see it.
  std::vector<int> truth;
  const Vectors E = clustered_vectors(12, 3, 10, 4, 4.0, 1.0, truth);
  const Clustering r = kmeans_gram(gram_of(E), 12, 3, 0);
  CHECK(close(dunn_index(gram_of(E), 12, r.labels), dunn_direct(E, r.labels), 1e-9, 1e-12));
  CHECK(close(silhouette(gram_of(E), 12, r.labels), silhouette_direct(E, r.labels), 1e-9, 1e-12));
  CHECK(close(silhouette_ght(gram_of(E), 12, r.labels), silhouette_ght_direct(E, r.labels), 1e-9, 1e-12));

  // Edge cases: all singletons (Dunn +inf, Silhouette 0, the authors' 1), one group (all undefined: NaN).
  const Vectors few = random_vectors(5, 3, 8);
  CHECK(dunn_index(gram_of(few), 5, {0, 1, 2, 3, 4}) == kInf);
  CHECK(silhouette(gram_of(few), 5, {0, 1, 2, 3, 4}) == 0.0);
  CHECK(silhouette_ght(gram_of(few), 5, {0, 1, 2, 3, 4}) == 1.0);
  CHECK(std::isnan(dunn_index(gram_of(few), 5, {0, 0, 0, 0, 0})));
  CHECK(std::isnan(silhouette(gram_of(few), 5, {2, 2, 2, 2, 2})));
  CHECK(std::isnan(silhouette_ght(gram_of(few), 5, {2, 2, 2, 2, 2})));
  CHECK_THROWS_AS(silhouette(gram_of(few), 5, {0, 1, -1, 0, 1}), Error);
  CHECK_THROWS_AS(silhouette_ght(gram_of(few), 5, {0, 1, -1, 0, 1}), Error);
}
