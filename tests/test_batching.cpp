// Batching invariants: every sentence once per epoch, the token budget, few shapes, seeded order,
// and the teacher-forcing layout of a batch.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <set>
#include <tuple>

#include "base/error.h"
#include "steps/batching.h"

using namespace pillars;

namespace {

struct Lengths {
  std::vector<int64_t> src, tgt;
  explicit Lengths(int n, uint32_t seed) {
    std::mt19937 rng(seed);
    for (int i = 0; i < n; ++i) {
      src.push_back(1 + static_cast<int64_t>(rng() % 60));
      tgt.push_back(1 + static_cast<int64_t>(rng() % 70));
    }
  }
};

} // namespace

TEST_CASE("batching: an epoch holds every sentence exactly once, within the token budget") {
  const Lengths L(5000, 1);
  const steps::BatchingOptions o{.max_tokens = 1000, .length_multiple = 8};
  const steps::Bucketing b(L.src, L.tgt, o);
  const auto batches = b.epoch(7, 1);
  std::vector<int> seen(L.src.size(), 0);
  std::set<std::tuple<size_t, int64_t, int64_t>> shapes;
  for (const steps::Batch& batch : batches) {
    CHECK(batch.Ts % 8 == 0);
    CHECK(batch.Tt % 8 == 0);
    CHECK(static_cast<int64_t>(batch.indices.size()) * std::max(batch.Ts, batch.Tt) <= o.max_tokens);
    for (int64_t i : batch.indices) {
      ++seen[static_cast<size_t>(i)];
      CHECK(L.src[static_cast<size_t>(i)] <= batch.Ts);
      CHECK(L.tgt[static_cast<size_t>(i)] <= batch.Tt);
      CHECK(L.src[static_cast<size_t>(i)] > batch.Ts - 8); // in its own bucket: no more than 7 pads
      CHECK(L.tgt[static_cast<size_t>(i)] > batch.Tt - 8);
    }
    shapes.insert({batch.indices.size(), batch.Ts, batch.Tt});
  }
  CHECK(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
  // 8 source × 9 target buckets, each with at most two batch sizes (full ones and the remainder).
  CHECK(shapes.size() <= 2 * 8 * 9);
}

TEST_CASE("batching: the order is a function of seed and epoch") {
  const Lengths L(2000, 2);
  const steps::Bucketing b(L.src, L.tgt, {.max_tokens = 512});
  auto order = [](const std::vector<steps::Batch>& bs) {
    std::vector<int64_t> all;
    for (const steps::Batch& x : bs) all.insert(all.end(), x.indices.begin(), x.indices.end());
    return all;
  };
  CHECK(order(b.epoch(1, 1)) == order(b.epoch(1, 1)));
  CHECK(order(b.epoch(1, 1)) != order(b.epoch(1, 2)));
  CHECK(order(b.epoch(1, 1)) != order(b.epoch(2, 1)));
  CHECK(order(b.in_order()) == order(b.in_order()));
}

TEST_CASE("batching: a sentence longer than the budget is an input error") {
  CHECK_THROWS_AS(steps::Bucketing({10, 300}, {10, 10}, {.max_tokens = 256}), InputError);
}

TEST_CASE("batching: a batch shifts the target right behind eos and pads on the right") {
  const std::vector<std::vector<int32_t>> src = {{5, 6, 2}, {7, 2}};
  const std::vector<std::vector<int32_t>> tgt = {{8, 9, 10, 2}, {11, 2}};
  steps::Batch batch;
  batch.indices = {1, 0};
  batch.Ts = 4, batch.Tt = 4;
  const steps::Seq2SeqBatch t = steps::make_seq2seq_batch(src, tgt, batch, /*pad=*/1, /*eos=*/2);
  CHECK(t.src_tokens == std::vector<int32_t>{7, 2, 1, 1, 5, 6, 2, 1});
  CHECK(t.src_lengths == std::vector<int32_t>{2, 3});
  CHECK(t.prev_output_tokens == std::vector<int32_t>{2, 11, 1, 1, 2, 8, 9, 10});
  CHECK(t.target == std::vector<int32_t>{11, 2, 1, 1, 8, 9, 10, 2});
  CHECK(t.target_tokens == 6);
}
