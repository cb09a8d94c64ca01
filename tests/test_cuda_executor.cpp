// The GPU executor on a whole training step of the tiny transformer: loss and every parameter
// gradient against the CPU executor (fp32 mode), fresh dropout masks per run seed, CUDA graph
// capture that replays the same step, and a shared device arena. Skipped without a GPU.
#include <doctest/doctest.h>

#include "skip.h"

#include <cmath>

#include "base/error.h"
#include "engine/executor.h"
#include "engine/ops.h"
#include "engine/passes/autodiff.h"
#include "ght/ops.h"
#include "runtime/cuda_device.h"
#include "models/transformer.h"

using namespace pillars;
using pillars::testing::no_gpu;

namespace {

struct TinyStep {
  TransformerConfig cfg = transformer_config("tiny");
  ParamStore params;
  Seq2SeqGraph m;
  std::vector<ValueId> grads;
  explicit TinyStep(float dropout_and_smoothing = 0.1f) {
    init_transformer_params(cfg, params, 7);
    m = build_seq2seq_training_graph(cfg, 3, 6, 5, dropout_and_smoothing, 99, /*train=*/true);
    grads = autodiff(m.graph, m.loss, m.graph.params());
    m.graph.mark_output(m.loss);
  }
  void bind(Executor& ex) {
    ex.bind_params(params);
    ex.bind("src_tokens", Tensor::from_i32({3, 6}, {4, 5, 6, 7, 8, 9, 10, 11, 12, 2, 1, 1, 13, 14, 15, 16, 17, 2}));
    ex.bind("src_lengths", Tensor::from_i32({3}, {6, 4, 6}));
    ex.bind("prev_output_tokens", Tensor::from_i32({3, 5}, {2, 4, 5, 6, 7, 2, 8, 9, 1, 1, 2, 10, 11, 12, 13}));
    ex.bind("target", Tensor::from_i32({15}, {4, 5, 6, 7, 2, 8, 9, 2, 1, 1, 10, 11, 12, 13, 2}));
  }
};

double distance(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
  return std::isfinite(d) ? std::sqrt(d) : INFINITY;
}
double norm(const std::vector<float>& a) { return distance(a, std::vector<float>(a.size(), 0.0f)); }

double relative_error(const std::vector<float>& got, const std::vector<float>& want) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    diff += (static_cast<double>(got[i]) - want[i]) * (static_cast<double>(got[i]) - want[i]);
    norm += static_cast<double>(want[i]) * want[i];
  }
  return norm == 0 ? std::sqrt(diff) : std::sqrt(diff / norm);
}

} // namespace

TEST_CASE("cuda executor: a tiny transformer training step matches the CPU in fp32 mode") {
  if (no_gpu()) return;
  cuda_set_precision(Precision::fp32);
  TinyStep s;
  Executor cpu(s.m.graph), gpu(s.m.graph, Device::cuda);
  s.bind(cpu);
  s.bind(gpu);
  cpu.set_seed(3);
  gpu.set_seed(3); // same dropout masks: the Philox stream is shared by both backends
  cpu.run();
  gpu.run();
  CHECK(gpu.host_fallback_ops().empty());
  const float loss_cpu = cpu.value(s.m.loss).to_vector()[0], loss_gpu = gpu.fetch(s.m.loss).to_vector()[0];
  CHECK(loss_gpu == doctest::Approx(loss_cpu).epsilon(1e-5));
  // Every parameter's gradient within 1e-4 of the CPU's, relative to its norm (fp32 sums in a
  // different order through ~30 ops), plus 1e-6 absolute: the key projections' bias gradients are
  // zero in exact arithmetic (softmax ignores a shift shared by all keys), so both devices give
  // rounding noise of ~1e-8 there and only an absolute bound is meaningful.
  for (size_t i = 0; i < s.grads.size(); ++i) {
    if (s.grads[i] == kNoValue) continue;
    CAPTURE(s.m.graph.producer(s.m.graph.params()[i]).name);
    CHECK(distance(gpu.fetch(s.grads[i]).to_vector(), cpu.value(s.grads[i]).to_vector()) <=
          1e-4 * norm(cpu.value(s.grads[i]).to_vector()) + 1e-6);
  }
}

TEST_CASE("cuda executor: CUDA graph replay gives the eager results and reads each run's seed") {
  if (no_gpu()) return;
  cuda_set_precision(Precision::fp32);
  TinyStep s;
  Executor eager(s.m.graph, Device::cuda), captured(s.m.graph, Device::cuda);
  captured.enable_graph_capture(true);
  s.bind(eager);
  s.bind(captured);
  float previous = NAN;
  for (uint64_t seed : {1u, 2u, 3u, 4u}) { // run 1 warms up, run 2 captures, runs 3-4 replay
    eager.set_seed(seed);
    captured.set_seed(seed);
    eager.run();
    captured.run();
    const float le = eager.fetch(s.m.loss).to_vector()[0], lc = captured.fetch(s.m.loss).to_vector()[0];
    CAPTURE(seed);
    CHECK(lc == le);       // the same kernels in the same order: the forward is bit-identical
    CHECK(le != previous); // a new seed draws new dropout masks, also inside the replayed graph
    previous = le;
    // The embedding gradient adds rows with atomics (summation order varies run to run), so the
    // gradients agree to rounding, not bit for bit.
    for (ValueId gv : s.grads)
      if (gv != kNoValue) REQUIRE(relative_error(captured.fetch(gv).to_vector(), eager.fetch(gv).to_vector()) <= 1e-6);
  }
  CHECK(captured.replaying_graph());
}

TEST_CASE("cuda executor: executors sharing a device arena, and rebinding inputs") {
  if (no_gpu()) return;
  cuda_set_precision(Precision::fp32);
  TinyStep a, b(0.0f);
  auto arena = std::make_shared<SharedArena>();
  arena->device = Device::cuda;
  Executor ea(a.m.graph, Device::cuda, arena), eb(b.m.graph, Device::cuda, arena);
  a.bind(ea);
  b.bind(eb);
  ea.run();
  const float first = ea.fetch(a.m.loss).to_vector()[0];
  eb.run();
  ea.run();
  CHECK(ea.fetch(a.m.loss).to_vector()[0] == first);
  // A CPU executor refuses a device arena.
  CHECK_THROWS_AS(Executor(a.m.graph, Device::cpu, arena), Error);
}

// GHT's step on the GPU: head_gram runs on the device, huds_cluster and the GCT loss through the
// host fallback. The fallback is stream-ordered (pinned copies and a host function), so the step
// is still captured as a CUDA graph; the host kernels must see each run's seed (huds_cluster's
// k-means seeding draws from it) and their results must match the CPU executor's exactly.
TEST_CASE("cuda executor: host-fallback ops (HUDS, GCT) are captured into the CUDA graph and follow the CPU") {
  if (no_gpu()) return;
  cuda_set_precision(Precision::fp32);
  Graph g;
  const ValueId x = g.input("x", {2, 40, 6, 8}); // (B, T, H, D) a feature map
  const ValueId lengths = g.input("lengths", {2}, DType::i32);
  const ValueId G = ops::head_gram(g, x, lengths);                           // (H, H) on the GPU
  const ValueId labels = ght::huds_cluster(g, G, 3, /*seed=*/17);            // host fallback, reads the run seed
  const ght::GctTerms r = ght::gct_metric_loss(g, G, labels, 3, 1.0f, 1.0f); // host fallback
  const ValueId dx = autodiff(g, r.loss, {x})[0];
  for (ValueId v : {labels, r.loss, dx}) g.mark_output(v);

  Tensor xv = Tensor::empty({2, 40, 6, 8});
  for (int64_t i = 0; i < xv.numel(); ++i)
    xv.data<float>()[i] = std::sin(0.37f * static_cast<float>(i)) + 0.1f * static_cast<float>(i % 6);
  const Tensor lv = Tensor::from_i32({2}, {40, 23});
  Executor cpu(g), gpu(g, Device::cuda);
  gpu.enable_graph_capture(true);
  CHECK(!gpu.host_fallback_ops().empty());
  for (Executor* ex : {&cpu, &gpu}) {
    ex->bind(x, xv);
    ex->bind(lengths, lv);
  }
  for (uint64_t seed : {1u, 2u, 3u, 4u, 5u}) { // run 1 warms up, run 2 captures, runs 3-5 replay
    cpu.set_seed(seed);
    gpu.set_seed(seed);
    cpu.run();
    gpu.run();
    CAPTURE(seed);
    CHECK(gpu.fetch(labels).to_vector() == cpu.value(labels).to_vector());
    CHECK(gpu.fetch(r.loss).to_vector()[0] == doctest::Approx(cpu.value(r.loss).to_vector()[0]).epsilon(1e-5));
    CHECK(relative_error(gpu.fetch(dx).to_vector(), cpu.value(dx).to_vector()) <= 1e-5);
  }
  CHECK(gpu.replaying_graph());
}

TEST_CASE("cuda executor: an error inside a host-fallback kernel surfaces at the next fetch") {
  if (no_gpu()) return;
  Graph g;
  const ValueId G = g.input("G", {4, 4});
  const ValueId labels = g.input("labels", {4}, DType::i32);
  const ValueId loss = ght::gct_metric_loss(g, G, labels, 2, 1.0f, 1.0f).loss; // host fallback
  g.mark_output(loss);
  Executor gpu(g, Device::cuda);
  Tensor Gv = Tensor::empty({4, 4});
  for (int64_t i = 0; i < 16; ++i) Gv.data<float>()[i] = static_cast<float>(i % 5);
  gpu.bind(G, Gv);
  gpu.bind(labels, Tensor::from_i32({4}, {0, 1, 7, 0})); // 7 is not a group of 2
  gpu.run();                                             // queued: the CPU kernel runs later, on the stream's thread
  CHECK_THROWS_WITH_AS(gpu.fetch(loss), doctest::Contains("labels[2] = 7"), Error);
  gpu.bind(labels, Tensor::from_i32({4}, {0, 1, 1, 0}));
  gpu.run();
  CHECK(std::isfinite(gpu.fetch(loss).to_vector()[0])); // and the executor goes on working
}
