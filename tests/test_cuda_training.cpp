// Training on the GPU (`train.device: cuda`) against the same run on the CPU: 100 updates of a
// small transformer on Multi30k in fp32 mode, the same seed (so the same batches and, through the
// shared Philox stream, the same dropout masks). The GPU run's loss at every update must follow
// the CPU run's. Skipped without a GPU or without Multi30k in $PILLARS_DATA.
//
// Tolerance: the two devices add in different orders (cuBLAS vs our SGEMM, reductions, atomics
// in the embedding gradient), so the runs drift apart by rounding that training amplifies. We
// require |loss_gpu − loss_cpu| ≤ 1e-3 · loss_cpu over the first 10 updates (before the drift has
// grown) and ≤ 2e-2 · loss_cpu over all 100; the test prints the largest deviations seen.
#include <doctest/doctest.h>

#include "skip.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/cuda_device.h"
#include "train/experiment.h"
#include "train/prepare.h"
#include "train/setup.h"
#include "train/device_scope.h"
#include "train/trainer.h"
#include "tests/test_env.h"
#include "tests/test_small_run.h"

using namespace pillars;
using namespace pillars::train;
namespace fs = std::filesystem;

namespace {

Experiment experiment_on(const std::string& device) {
  nlohmann::json j = testing::small_multi30k_json(5);
  j["train"] = {
      {"max_updates", 100}, {"valid_bleu", false}, {"keep_best", 1}, {"device", device}, {"precision", "fp32"}};
  return parse_experiment(j, "test_cuda_training.json");
}

std::vector<double> train_on(const std::string& device, const fs::path& dir) {
  const Experiment e = experiment_on(device);
  PreparedSeq2Seq p = prepare_seq2seq(e, dir.string(), false);
  const TransformerConfig cfg = model_config(e, static_cast<int64_t>(p.pipeline.dictionary().size()));
  ParamStore params;
  init_transformer_params(cfg, params, static_cast<uint64_t>(e.seed));
  TrainOptions o;
  o.run_dir = dir.string(), o.quiet = true;
  const TrainerOutcome out = train_seq2seq(e, cfg, params, p.data, o);
  CHECK(params.device() == Device::cpu); // the parameters come back to the host when training ends
  return std::vector<double>(out.losses.begin(), out.losses.end());
}

} // namespace

TEST_CASE("cuda training: 100 fp32 updates on Multi30k follow the CPU run's losses") {
  if (pillars::testing::no_gpu()) return;
  if (!testing::have_dataset("multi30k-de-en")) {
    SKIP_TEST("PILLARS_DATA does not hold multi30k-de-en");
    return;
  }
  testing::ScratchDir tmp("pillars_cuda_training_");
  const std::vector<double> cpu = train_on("cpu", tmp.path / "cpu");
  const std::vector<double> gpu = train_on("cuda", tmp.path / "cuda");
  REQUIRE(cpu.size() == 100);
  REQUIRE(gpu.size() == 100);
  double first10 = 0, all = 0;
  for (size_t u = 0; u < cpu.size(); ++u) {
    const double rel = std::fabs(gpu[u] - cpu[u]) / cpu[u];
    if (u < 10) first10 = std::max(first10, rel);
    all = std::max(all, rel);
  }
  MESSAGE("largest relative loss deviation: ", first10, " over updates 1-10, ", all, " over 1-100 (CPU ", cpu.front(),
          " → ", cpu.back(), ", GPU ", gpu.front(), " → ", gpu.back(), ")");
  CHECK(first10 <= 1e-3);
  CHECK(all <= 2e-2);
  CHECK(gpu.back() < gpu.front() - 1.0); // and it learns
}

TEST_CASE("cuda training: train.device cuda without a GPU is a clear error, and bf16 on the CPU is accepted") {
  Experiment bf16_on_cpu = experiment_on("cpu");
  bf16_on_cpu.train.precision = Precision::bf16;
  CHECK_NOTHROW(check_device_settings(bf16_on_cpu)); // the CPU's bf16 GEMM has a portable path
  if (cuda_device_count() > 0) {
    check_device_settings(experiment_on("cuda")); // fine where there is a GPU
    Experiment accumulate = experiment_on("cuda");
    accumulate.train.update_freq = 2;
    check_device_settings(accumulate); // gradient accumulation runs on the device too
    return;
  }
  try {
    check_device_settings(experiment_on("cuda"));
    FAIL("train.device cuda accepted without a GPU");
  } catch (const InputError& err) {
    CHECK(std::string(err.what()).find("train.device is \"cuda\"") != std::string::npos);
  }
}
