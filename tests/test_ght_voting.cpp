// The V2S vote of one batch (ght/voting.h): which member of each group gets the vote, on Gram
// matrices built here from explicit 2-d head vectors whose distances are worked out by hand.
#include <doctest/doctest.h>

#include <cmath>
#include <numeric>
#include <vector>

#include "ght/kmeans.h"
#include "ght/voting.h"

using namespace pillars;
using namespace pillars::ght;

namespace {

using Vectors = std::vector<std::vector<double>>;

// G = E Eᵀ (k × k), rounded to f32 when `f32` (as the graph's head_gram delivers it).
std::vector<double> gram_of(const Vectors& E, bool f32 = false) {
  const size_t k = E.size();
  std::vector<double> G(k * k);
  for (size_t i = 0; i < k; ++i)
    for (size_t j = 0; j < k; ++j) {
      const double dot = std::inner_product(E[i].begin(), E[i].end(), E[j].begin(), 0.0);
      G[i * k + j] = f32 ? static_cast<double>(static_cast<float>(dot)) : dot;
    }
  return G;
}

} // namespace

TEST_CASE("ght voting: a group of two ties on distance, so the higher cosine, then the lower index, takes the vote") {
  // Group 0 = {0, 1}: centroid (10.5, 0), both at squared distance 1.5² + 0.5² = 2.5 from it.
  // cos with the centroid: head 0 9/√81.25 = 0.99846, head 1 12/√144.25 = 0.99913 → head 1.
  // Group 1 = {2, 3}: mirror images, equal norms, so equal cosines too → the lower index, head 2.
  const Vectors E{{9.0, 0.5}, {12.0, -0.5}, {0.5, 10.0}, {-0.5, 10.0}};
  const std::vector<int> labels{0, 0, 1, 1};
  for (const bool f32 : {false, true}) {
    CAPTURE(f32);
    const std::vector<double> G = gram_of(E, f32);
    const std::vector<double> d = distance_to_centroids(G, 4, labels, 2); // (4, 2)
    CHECK(d[0 * 2 + 0] == doctest::Approx(2.5).epsilon(1e-6));
    CHECK(d[1 * 2 + 0] == doctest::Approx(2.5).epsilon(1e-6));
    CHECK(group_votes(G, 4, labels, 2) == std::vector<int>{1, 2});
  }
  // The same heads in another order: the vote follows the head, not its index.
  const Vectors swapped{{12.0, -0.5}, {9.0, 0.5}, {-0.5, 10.0}, {0.5, 10.0}};
  CHECK(group_votes(gram_of(swapped), 4, labels, 2) == std::vector<int>{0, 2});
  // A whole batch's tally (K-means finds these two groups): one vote each for heads 1 and 2.
  VoteTally v(VoteSettings{.groups = 2});
  ModuleVotes m;
  m.heads = 4, m.votes.assign(4, 0), m.score.assign(4, 0.0), m.co_assigned.assign(16, 0);
  v.tally(m, gram_of(E, true), 3);
  CHECK(m.votes == std::vector<int64_t>{0, 1, 1, 0});
}

TEST_CASE("ght voting: distances that differ decide before the cosine") {
  // Group 0 = {0, 1, 2}, centroid (12, −1/3): squared distances 7.36, 8.69, 16.11; cosines 0.9844,
  // 0.9765, 0.9996. The nearest (head 0) gets the vote although head 2 points closer to the centroid.
  // Head 3 is alone in group 1 and gets its vote.
  const Vectors E{{10.0, 1.5}, {10.0, -2.5}, {16.0, 0.0}, {-10.0, 0.0}};
  const std::vector<int> labels{0, 0, 0, 1};
  const std::vector<double> G = gram_of(E);
  const std::vector<double> cos = cosine_to_centroids(G, 4, labels, 2);
  REQUIRE(cos[2 * 2 + 0] > cos[0 * 2 + 0]);
  CHECK(group_votes(G, 4, labels, 2) == std::vector<int>{0, 3});
  // An empty group has no vote.
  CHECK(group_votes(G, 4, {0, 0, 0, 0}, 2) == std::vector<int>{0, -1});
}
