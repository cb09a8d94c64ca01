// The pieces of data-parallel training that run inside one process (the whole job is
// tests/cli_data_parallel.sh, under mpirun):
//
//  * The steps' GradientObserver (steps/steps.h): every parameter's gradient is reported exactly
//    once per training run, in the steps' slot order of names; what is reported at that moment is
//    already the final gradient (bit for bit what slots() holds after the run), and the first
//    gradients arrive while most of the backward has still to run (else no sum could overlap it).
//  * GradientBuckets' layout (train/gradient_buckets.h): every parameter in exactly one bucket, the
//    accumulators of the parameters' shapes.
//    Their sums in one process (all collectives the identity): Σ tokens_j · ∇L_j over two batches,
//    equal to a float64 sum of the two gradients the steps computed separately (to f32 rounding).
//  * ZeRO-1 ownership with a world of 3 (a communicator that only reports its rank and size):
//    the ranks' owned parameters partition the parameters, and every rank owns some.
//  * How an update's batches are dealt to the ranks (train/data_parallel.h): by tokens, worked
//    through by hand.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "engine/dist/communicator.h"
#include "models/transformer.h"
#include "steps/steps.h"
#include "train/pass_list.h"
#include "tests/test_env.h"
#include "train/data_parallel.h"
#include "train/gradient_buckets.h"

using namespace pillars;

namespace {

// The plain step with label smoothing 0.1.
train::StepContext smoothed() {
  train::StepContext c;
  c.label_smoothing = 0.1f;
  return c;
}

using pillars::testing::random_sentences;

const std::vector<std::vector<int32_t>> kSrc = random_sentences({7, 3, 5, 6, 2, 4}, 32, 1);
const std::vector<std::vector<int32_t>> kTgt = random_sentences({4, 6, 2, 5, 7, 3}, 32, 2);
constexpr int32_t kPad = 1, kEos = 2;

struct Model {
  TransformerConfig cfg = transformer_config("tiny"); // 2+2 layers, d 16, vocab 32
  ParamStore params;
  Model() { init_transformer_params(cfg, params, 3); }
};

steps::Seq2SeqBatch batch_of(std::vector<int64_t> rows) {
  steps::Batch b;
  b.indices = std::move(rows);
  b.Ts = 8, b.Tt = 8;
  return steps::make_seq2seq_batch(kSrc, kTgt, b, kPad, kEos);
}

// Copies each gradient when it is reported, and counts the nodes run so far.
class Recorder final : public steps::GradientObserver {
 public:
  void begin(const std::vector<std::string>& names, int64_t tokens) override {
    names_ = names, tokens_ = tokens, nodes_ = 0;
    at_node_.assign(names.size(), -1);
    copies_.assign(names.size(), Tensor());
  }
  void ready(size_t slot, const Tensor& grad) override {
    REQUIRE(slot < names_.size());
    CHECK_MESSAGE(at_node_[slot] == -1, names_[slot], " reported twice");
    at_node_[slot] = nodes_;
    if (grad.defined()) copies_[slot] = grad.clone();
  }
  void after_node() override { ++nodes_; }

  std::vector<std::string> names_;
  int64_t tokens_ = 0, nodes_ = 0;
  std::vector<int64_t> at_node_;
  std::vector<Tensor> copies_;
};

// A world of `size` processes as seen by `rank`: enough for the layout and the owners (the
// collectives are never called by them).
class PretendWorld final : public dist::Communicator {
 public:
  PretendWorld(int rank, int size) : rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string describe() const override { return "pretend"; }
  void all_reduce_sum(float*, int64_t) override { FAIL("not expected"); }
  void all_reduce_sum(double*, int64_t) override { FAIL("not expected"); }
  void all_reduce_sum(int64_t*, int64_t) override { FAIL("not expected"); }
  void all_reduce_max(int64_t*, int64_t) override { FAIL("not expected"); }
  void broadcast(void*, int64_t, int) override { FAIL("not expected"); }
  void barrier() override {}
  int64_t start_sum(float*, int64_t, int) override { return 0; }
  bool test(int64_t) override { return true; }
  void wait(int64_t) override {}
  std::vector<std::string> gather(const std::string& mine, int) override { return {mine}; }
  [[noreturn]] void abort(int code) override { std::exit(code); }

 private:
  int rank_, size_;
};

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.numel() == b.numel() && std::equal(a.data<float>(), a.data<float>() + a.numel(), b.data<float>());
}

} // namespace

TEST_CASE("the steps report every gradient once, already final, while the backward still runs") {
  Model m;
  steps::Seq2SeqSteps steps(m.cfg, m.params, train::step_recipes(smoothed()));
  Recorder r;
  steps.set_gradient_observer(&r);
  const steps::Seq2SeqBatch b = batch_of({0, 1, 2});
  for (int run = 0; run < 2; ++run) { // the second run reuses the compiled step
    steps.train(b, 7 + run);
    const auto& slots = steps.slots();
    REQUIRE(r.names_.size() == slots.size());
    CHECK(r.tokens_ == b.target_tokens);
    int64_t earliest = r.nodes_;
    for (size_t i = 0; i < slots.size(); ++i) {
      CHECK(r.names_[i] == slots[i].name);
      REQUIRE_MESSAGE(r.at_node_[i] >= 0, slots[i].name, " was never reported");
      earliest = std::min(earliest, r.at_node_[i]);
      if (!slots[i].grad.defined()) continue;
      REQUIRE(r.copies_[i].defined());
      CHECK_MESSAGE(same_bits(r.copies_[i], slots[i].grad), slots[i].name, " changed after it was reported");
    }
    // The forward is about half the nodes: the first gradient is final long before the end.
    CHECK(earliest < r.nodes_ * 3 / 4);
  }
}

TEST_CASE("gradient buckets in one process hold the token-weighted sum of the batches' gradients") {
  Model m;
  const steps::Seq2SeqBatch b1 = batch_of({0, 1, 2}), b2 = batch_of({3, 4, 5});
  // The two batches' gradients, separately.
  std::map<std::string, std::vector<double>> expected;
  {
    steps::Seq2SeqSteps steps(m.cfg, m.params, train::step_recipes(smoothed()));
    for (const auto* b : {&b1, &b2}) {
      steps.train(*b, b == &b1 ? 11 : 12);
      for (const auto& s : steps.slots()) {
        auto& e = expected[s.name];
        e.resize(static_cast<size_t>(s.value.numel()), 0.0);
        if (!s.grad.defined()) continue;
        for (int64_t k = 0; k < s.grad.numel(); ++k)
          e[static_cast<size_t>(k)] += static_cast<double>(b->target_tokens) * s.grad.data<float>()[k];
      }
    }
  }
  steps::Seq2SeqSteps steps(m.cfg, m.params, train::step_recipes(smoothed()));
  train::GradientBuckets buckets(dist::single_process(), m.params, /*bucket_mb=*/0.002, 0, true);
  steps.set_gradient_observer(&buckets);
  buckets.next_batch(true, false);
  steps.train(b1, 11);
  buckets.next_batch(false, true);
  steps.train(b2, 12);
  const auto& slots = buckets.finish();
  CHECK(buckets.bucket_count() > 1); // 2 KB buckets: the layout really splits
  REQUIRE(slots.size() == expected.size());
  for (const auto& s : slots) {
    const auto& e = expected.at(s.name);
    CHECK(s.grad.shape() == s.value.shape());
    double worst = 0, scale = 1e-30;
    for (int64_t k = 0; k < s.grad.numel(); ++k) {
      worst = std::max(worst, std::abs(s.grad.data<float>()[k] - e[static_cast<size_t>(k)]));
      scale = std::max(scale, std::abs(e[static_cast<size_t>(k)]));
    }
    CHECK_MESSAGE(worst <= 1e-6 * scale, s.name, ": ", worst, " against ", scale);
  }
}

TEST_CASE("gradient bucket layout: whole parameters, and ZeRO-1 owners that share the work") {
  Model m;
  steps::Seq2SeqSteps steps(m.cfg, m.params, train::step_recipes(smoothed()));
  const steps::Seq2SeqBatch b = batch_of({0, 1, 2});
  constexpr double kMb = 0.004; // ~4 KB: a few parameters per bucket, the embeddings alone
  std::vector<std::set<std::string>> owned(3);
  int64_t buckets = 0;
  for (int rank = 0; rank < 3; ++rank) {
    PretendWorld world(rank, 3);
    train::GradientBuckets g(world, m.params, kMb, 1, true);
    steps.set_gradient_observer(&g);
    g.next_batch(true, true);
    steps.train(b, 5);
    const auto& slots = g.finish();
    buckets = g.bucket_count();
    int64_t total = 0;
    for (const auto& s : slots) total += s.value.numel();
    CHECK(g.bytes() == total * 4); // every parameter in exactly one bucket
    for (const auto& s : g.owned()) owned[static_cast<size_t>(rank)].insert(s.name);
    for (const auto& s : slots) CHECK(s.grad.shape() == s.value.shape());
    steps.set_gradient_observer(nullptr);
  }
  CHECK(buckets > 3);
  std::set<std::string> all;
  size_t sum = 0;
  for (const auto& o : owned) all.insert(o.begin(), o.end()), sum += o.size();
  CHECK(sum == all.size());                      // no parameter owned twice
  CHECK(all.size() == m.params.names().size());  // and none left out
  for (const auto& o : owned) CHECK(!o.empty()); // every rank has a share
}

TEST_CASE("an update's batches are dealt to the ranks by tokens, the largest first") {
  // Sizes 10, 50, 30, 30, 5 on 2 ranks: 50 → rank 0; 30 → rank 1; 30 → rank 1 (30 < 50); 10 → rank 0
  // (50 < 60); 5 → rank 0 (a tie of 60 and 60 goes to the lower rank). Loads 65 and 60.
  const std::vector<int64_t> tokens = {10, 50, 30, 30, 5};
  CHECK(train::batches_of_rank(tokens, 0, 2) == std::vector<int64_t>{0, 1, 4});
  CHECK(train::batches_of_rank(tokens, 1, 2) == std::vector<int64_t>{2, 3});
  // Equal sizes: round-robin, as j ≡ rank (mod size); more ranks than batches: some get none.
  CHECK(train::batches_of_rank({8, 8, 8, 8, 8}, 1, 3) == std::vector<int64_t>{1, 4});
  CHECK(train::batches_of_rank({8, 8}, 2, 3).empty());
  // One process trains them all, in order.
  CHECK(train::batches_of_rank(tokens, 0, 1) == std::vector<int64_t>{0, 1, 2, 3, 4});
}
