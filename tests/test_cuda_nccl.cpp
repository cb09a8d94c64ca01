// Data-parallel pieces on the GPU that one GPU can check (a job of several GPUs needs a machine with
// several; tests/cli_data_parallel.sh checks the CPU job):
//
//  * NCCL with one rank (engine/dist/device_sums.h): the bootstrap (unique id, broadcast by the
//    job's communicator, ncclCommInitRank) works, and a sum over one rank and a broadcast from it
//    leave a device buffer as it was, queued on the backend's stream.
//  * Gradient buckets on the GPU (train/gradient_buckets.h) in one process: the token-weighted sum
//    of two batches' gradients, accumulated in device buckets and summed by NCCL over one rank,
//    equals the same buckets on the CPU to 1e-5 relative over the whole gradient (the GPU's fp32
//    step against the CPU's; not tensor by tensor, see the case).
//  * The overlap on the GPU: with parallel.overlap on, the last batch is queued node by node and
//    each full bucket's sum runs on NCCL's communication stream beside the rest of the backward;
//    the buckets must hold exactly (bit for bit) what the sums queued after the step give, but for
//    the token tables (their backward adds rows with atomics, in an order of its own: 1e-6).
//
// Without a GPU, or in a build without NCCL, every case prints why it is skipped.
#include <doctest/doctest.h>

#include "skip.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "engine/dist/communicator.h"
#include "engine/dist/device_sums.h"
#include "runtime/cuda_device.h"
#include "runtime/nccl.h"
#include "models/transformer.h"
#include "steps/steps.h"
#include "train/pass_list.h"
#include "tests/grad_check.h"
#include "tests/test_env.h"
#include "train/gradient_buckets.h"

using namespace pillars;

namespace {

bool cannot_run() {
  if (pillars::testing::no_gpu()) return true;
  if (!nccl_available()) {
    SKIP_TEST("this build has no NCCL");
    return true;
  }
  return false;
}

std::vector<float> host_values(const Tensor& t) {
  const Tensor h = t.to(Device::cpu);
  return {h.data<float>(), h.data<float>() + h.numel()};
}

// The token-weighted sums of two batches' gradients, accumulated in buckets where `params` are.
std::map<std::string, std::vector<float>> bucket_sums(ParamStore& params, const TransformerConfig& cfg,
                                                      dist::DeviceSums* sums, bool overlap = true) {
  using pillars::testing::random_sentences;
  const auto src = random_sentences({7, 3, 5, 6, 2, 4}, 32, 1), tgt = random_sentences({4, 6, 2, 5, 7, 3}, 32, 2);
  train::StepContext context;
  context.label_smoothing = 0.1f;
  steps::Seq2SeqSteps steps(cfg, params, train::step_recipes(context));
  train::GradientBuckets buckets(dist::single_process(), params, 0.002, 0, overlap, sums);
  steps.set_gradient_observer(&buckets);
  for (int k = 0; k < 2; ++k) {
    steps::Batch b;
    b.indices = k == 0 ? std::vector<int64_t>{0, 1, 2} : std::vector<int64_t>{3, 4, 5};
    b.Ts = 8, b.Tt = 8;
    buckets.next_batch(k == 0, k == 1);
    steps.train(steps::make_seq2seq_batch(src, tgt, b, 1, 2), 21 + k);
  }
  std::map<std::string, std::vector<float>> out;
  for (const auto& s : buckets.finish()) out[s.name] = host_values(s.grad);
  steps.set_gradient_observer(nullptr);
  return out;
}

} // namespace

TEST_CASE("NCCL with one rank: the bootstrap works, and a sum or a broadcast leaves the buffer as it was") {
  if (cannot_run()) return;
  dist::DeviceSums sums(dist::single_process());
  std::vector<float> x(1000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.5f * static_cast<float>(i) - 7.0f;
  Tensor d = Tensor::from({1000}, x).to(Device::cuda);
  sums.sum(d.data<float>(), d.numel(), dist::Communicator::kEveryRank);
  sums.sum(d.data<float>(), d.numel(), 0);
  sums.broadcast(d.data<float>(), d.numel(), 0);
  CHECK(host_values(d) == x);
}

TEST_CASE("gradient buckets on the GPU hold the token-weighted sum the CPU's buckets hold") {
  if (cannot_run()) return;
  TransformerConfig cfg = transformer_config("tiny");
  cfg.dropout = cfg.attention_dropout = cfg.activation_dropout = 0; // the GPU's dropout masks are its own
  ParamStore cpu_params;
  init_transformer_params(cfg, cpu_params, 3);
  const auto on_cpu = bucket_sums(cpu_params, cfg, nullptr);
  ParamStore gpu_params;
  init_transformer_params(cfg, gpu_params, 3);
  gpu_params.to(Device::cuda);
  dist::DeviceSums sums(dist::single_process());
  const auto on_gpu = bucket_sums(gpu_params, cfg, &sums);
  REQUIRE(on_cpu.size() == on_gpu.size());
  // Over the whole gradient, ‖GPU − CPU‖ / ‖CPU‖, not tensor by tensor: the key projections'
  // biases have a zero gradient in exact arithmetic (softmax ignores a shift shared by a query's
  // scores), so theirs is rounding noise (~1e-7 here) that another summation order rounds apart.
  double diff2 = 0, norm2 = 0;
  for (const auto& [name, c] : on_cpu) {
    const std::vector<float>& g = on_gpu.at(name);
    REQUIRE(g.size() == c.size());
    for (size_t i = 0; i < c.size(); ++i) diff2 += double(g[i] - c[i]) * (g[i] - c[i]), norm2 += double(c[i]) * c[i];
  }
  REQUIRE(norm2 > 0);
  CHECK_MESSAGE(std::sqrt(diff2 / norm2) <= 1e-5, "GPU against CPU: ", std::sqrt(diff2 / norm2), " relative");
}

TEST_CASE("gradient buckets on the GPU: sums beside the backward hold what sums after it hold") {
  if (cannot_run()) return;
  TransformerConfig cfg = transformer_config("tiny");
  cfg.dropout = cfg.attention_dropout = cfg.activation_dropout = 0;
  ParamStore params;
  init_transformer_params(cfg, params, 3);
  params.to(Device::cuda);
  dist::DeviceSums sums(dist::single_process());
  const auto after = bucket_sums(params, cfg, &sums, false), beside = bucket_sums(params, cfg, &sums, true);
  REQUIRE(after.size() == beside.size());
  // Bit for bit, except the token tables: the embedding backward adds rows with atomicAdd
  // (kernels/cuda/embedding.cu), whose order differs from run to run (the decoder's table is also
  // the output projection here: tied). (With one rank a sum leaves the buffer as it is, so this proves the
  // overlapped path runs and accumulates; a missing wait between the streams shows with two GPUs.)
  for (const auto& [name, g] : after) {
    INFO(name);
    if (name.ends_with("embed_tokens.weight"))
      CHECK(testing::max_relative_difference(beside.at(name), g) <= 1e-6);
    else
      CHECK(beside.at(name) == g);
  }
}
