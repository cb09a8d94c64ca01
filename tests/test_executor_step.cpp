// The executor on a real training step: no allocation once shapes repeat, memory reuse, and
// fresh dropout masks per run seed.
#include <doctest/doctest.h>

#include "base/error.h"
#include "engine/executor.h"
#include "engine/passes/autodiff.h"
#include "models/transformer.h"
#include "tests/alloc_counter.h"

using namespace pillars;

namespace {

struct TinyStep {
  TransformerConfig cfg = transformer_config("tiny");
  ParamStore params;
  Seq2SeqGraph m;
  std::vector<ValueId> grads;
  TinyStep() {
    init_transformer_params(cfg, params, 7);
    m = build_seq2seq_training_graph(cfg, 3, 6, 5, 0.1f, 99, /*train=*/true);
    grads = autodiff(m.graph, m.loss, m.graph.params());
    m.graph.mark_output(m.loss);
  }
  void bind(Executor& ex) {
    ex.bind_params(params);
    Tensor src = Tensor::from_i32({3, 6}, {4, 5, 6, 7, 8, 9, 10, 11, 12, 2, 1, 1, 13, 14, 15, 16, 17, 2});
    ex.bind("src_tokens", src);
    ex.bind("src_lengths", Tensor::from_i32({3}, {6, 4, 6}));
    ex.bind("prev_output_tokens", Tensor::from_i32({3, 5}, {2, 4, 5, 6, 7, 2, 8, 9, 1, 1, 2, 10, 11, 12, 13}));
    ex.bind("target", Tensor::from_i32({15}, {4, 5, 6, 7, 2, 8, 9, 2, 1, 1, 10, 11, 12, 13, 2}));
  }
};

} // namespace

TEST_CASE("executor: a repeated training step of the tiny transformer allocates nothing") {
  TinyStep s;
  Executor ex(s.m.graph);
  s.bind(ex);
  ex.run(); // first run: kernels may grow their scratch once
  ex.run();
  // A training loop binds a new batch every step: make the next batches before counting.
  const Tensor src = Tensor::from_i32({3, 6}, {4, 5, 6, 7, 8, 9, 10, 11, 12, 2, 1, 1, 13, 14, 15, 16, 17, 2});
  const Tensor prev = Tensor::from_i32({3, 5}, {2, 4, 5, 6, 7, 2, 8, 9, 1, 1, 2, 10, 11, 12, 13});
  pillars::testing::AllocationCounter counter;
  ex.set_seed(5);
  ex.run();
  ex.bind(s.m.src_tokens, src);          // new tensors: views of them are re-pointed without allocating
  ex.bind(s.m.prev_output_tokens, prev); // (by id: a long name would allocate a std::string here)
  ex.run();
  const long allocations = counter.stop();
  if (!counter.active()) {
    MESSAGE("not checked here: the allocation count (operator new is replaced elsewhere, or by a sanitizer)");
    return;
  }
  CHECK(allocations == 0);
}

TEST_CASE("executor: refuses a graph that grew after it was built, and non-CPU tensors") {
  TinyStep s;
  Executor ex(s.m.graph);
  s.bind(ex);
  ex.run();
  int32_t lengths[3] = {6, 4, 6};
  const Tensor on_gpu = Tensor::view_of(lengths, {3}, DType::i32, Device::cuda); // only the device tag matters here
  CHECK_THROWS_WITH_AS(ex.bind("src_lengths", on_gpu), doctest::Contains("cuda tensor"), Error);
  autodiff(s.m.graph, s.m.loss, s.m.graph.params()); // grows the graph under the executor
  CHECK_THROWS_WITH_AS(ex.run(), doctest::Contains("grew"), Error);
}

TEST_CASE("executor: the run seed changes dropout masks, the same seed repeats them exactly") {
  TinyStep s;
  Executor ex(s.m.graph);
  s.bind(ex);
  auto loss_with = [&](uint64_t seed) {
    ex.set_seed(seed);
    ex.run();
    return ex.value(s.m.loss).data<float>()[0];
  };
  const float a = loss_with(1), b = loss_with(2), a2 = loss_with(1);
  CHECK(a == a2);
  CHECK(a != b);
}

TEST_CASE("plan_memory: a transformer training step reuses most of its memory") {
  TinyStep s;
  const MemoryPlan plan = plan_memory(s.m.graph);
  MESSAGE("arena ", plan.arena_bytes, " bytes vs ", plan.naive_bytes, " with one buffer per value");
  CHECK(plan.arena_bytes * 2 < plan.naive_bytes);
}

TEST_CASE("executor: executors sharing one arena give the results of executors with their own") {
  // Two batch shapes, as a bucketed training loop has: the second graph is larger, so building its
  // executor grows the shared arena under the first one, which must re-point its views.
  TinyStep a;
  TransformerConfig cfg = a.cfg;
  Seq2SeqGraph big = build_seq2seq_training_graph(cfg, 4, 9, 8, 0.1f, 99, /*train=*/true);
  autodiff(big.graph, big.loss, big.graph.params());
  auto bind_big = [&](Executor& ex) {
    ex.bind_params(a.params);
    std::vector<int32_t> src(36), prev(32), tgt(32);
    for (size_t i = 0; i < src.size(); ++i) src[i] = 4 + static_cast<int32_t>(i % 20);
    for (size_t i = 0; i < prev.size(); ++i)
      prev[i] = 4 + static_cast<int32_t>((i * 7) % 20), tgt[i] = 4 + static_cast<int32_t>((i * 3) % 20);
    ex.bind("src_tokens", Tensor::from_i32({4, 9}, src));
    ex.bind("src_lengths", Tensor::from_i32({4}, {9, 5, 9, 7}));
    ex.bind("prev_output_tokens", Tensor::from_i32({4, 8}, prev));
    ex.bind("target", Tensor::from_i32({32}, tgt));
  };
  auto loss_of = [](Executor& ex, ValueId loss) {
    ex.run();
    return ex.value(loss).data<float>()[0];
  };

  Executor own_small(a.m.graph), own_big(big.graph);
  a.bind(own_small);
  bind_big(own_big);
  const float small_ref = loss_of(own_small, a.m.loss), big_ref = loss_of(own_big, big.loss);

  auto shared = std::make_shared<SharedArena>();
  Executor small(a.m.graph, shared);
  a.bind(small);
  CHECK(loss_of(small, a.m.loss) == small_ref);
  const uint64_t generation = shared->generation;
  Executor large(big.graph, shared);      // grows the arena
  CHECK(shared->generation > generation); // (grown by at least a quarter: the larger graph needs more than that here)
  bind_big(large);
  CHECK(loss_of(large, big.loss) == big_ref);
  CHECK(loss_of(small, a.m.loss) == small_ref); // after the growth
  CHECK(loss_of(large, big.loss) == big_ref);
  CHECK(shared->arena->bytes >= std::max(small.plan().arena_bytes, large.plan().arena_bytes));
}
