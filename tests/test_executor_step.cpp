// The executor on a real training step: no allocation once shapes repeat, memory reuse, and
// fresh dropout masks per run seed.
#include <doctest/doctest.h>

#include "engine/error.h"
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
  ex.bind(s.m.src_tokens, src); // new tensors: views of them are re-pointed without allocating
  ex.bind(s.m.prev_output_tokens, prev); // (by id: a long name would allocate a std::string here)
  ex.run();
  const long allocations = counter.stop();
  if (!counter.active()) {
    MESSAGE("operator new is replaced elsewhere (or by a sanitizer); allocation check skipped");
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
