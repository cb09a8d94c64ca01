// Where the training loop computes: the check that train.device and its settings can run here,
// and the two scopes train_model holds around the loop (train/trainer.h): the parameters on the
// GPU for a train.device "cuda" run, and the CPU's matmul precision for a CPU run; each undone when
// the loop ends, however it ends.
//
//   ParamsOnDevice on_device(e, params); // checks the settings first
//   CpuMatmulPrecision cpu_precision(e);
//   ... the loop ...
// And a third, per update, of a CPU bf16 run: its weights rounded to bf16 once (UpdateBf16Weights).
// Also the record of where something computed (machine_record), which a run's log and its
// evaluations keep.
#pragma once
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "engine/params.h"
#include "kernels/cpu/gemm_precision.h"
#include "train/experiment.h"

namespace pillars::train {

// Where this process computes: {"cpu": the CPU's model name, "isa": the CPU kernels' instruction
// set, "threads": OpenMP's thread count, "device": `device`}. Numbers depend on the first three
// (and on the device), speeds on all four, so a study compares runs and evaluations only where these
// agree (study/table.h); the training log's start lines add the precision, ranks and commit.
nlohmann::json machine_record(Device device);

// Throws InputError when train.device and its settings cannot run on this machine (cuda without
// a GPU, cuDNN attention without cuda, eval.precision bf16 in a cuda run).
void check_device_settings(const Experiment& e);

// train.precision on the CPU: the precision of the matmul GEMMs (kernels/cpu/gemm_precision.h) for
// the training loop, validations included; the previous one comes back when the loop ends, so what
// follows in the process (evaluation, decoding) computes as it did before, as on the GPU, whose
// parameters come back to the host. On the GPU, cuda_set_precision (ParamsOnDevice) decides.
class CpuMatmulPrecision {
 public:
  explicit CpuMatmulPrecision(const Experiment& e);
  ~CpuMatmulPrecision();
  CpuMatmulPrecision(const CpuMatmulPrecision&) = delete;
  CpuMatmulPrecision& operator=(const CpuMatmulPrecision&) = delete;

 private:
  Precision previous_;
};

// train.device = cuda: the parameters move to the GPU for the loop (so the steps, the optimizer
// state and the gradients live there; steps/steps.h) and come back when it ends, however it
// ends, so that what follows (pruning, evaluation, decoding) sees host parameters.
class ParamsOnDevice {
 public:
  ParamsOnDevice(const Experiment& e, ParamStore& params);
  ~ParamsOnDevice();
  ParamsOnDevice(const ParamsOnDevice&) = delete;
  ParamsOnDevice& operator=(const ParamsOnDevice&) = delete;

 private:
  ParamStore& params_;
  bool moved_ = false;
};

// train.precision bf16 on the CPU: within one update the weights do not change (the optimizer
// writes them after the update's last batch), yet every product rounds its operands to bf16 and
// packs them, so each weight W would be rounded and packed again by every product that reads it:
// x·Wᵀ forward, dY·W backward, in each of the update's update_freq batches. Instead a
// Bf16WeightCache (kernels/cpu/gemm_precision.h) is installed for the update's batches: W is
// rounded once per update and packed once per layout per update, the same bits as per product.
//
//   UpdateBf16Weights weights(e, enabled);
//   per update:  std::optional<cpu::ScopedBf16Weights> scope = weights.install(params);
//                ... the update's batches ...
//                scope.reset(); // before the optimizer writes the weights
class UpdateBf16Weights {
 public:
  // enabled false, or a run that is not CPU bf16: install() installs nothing (each product rounds
  // and packs its own weight; TrainOptions::bf16_weight_cache).
  UpdateBf16Weights(const Experiment& e, bool enabled);
  // active: the loop computes on the CPU at matmul precision bf16 (a benchmark's own step loop).
  explicit UpdateBf16Weights(bool active);
  // The cache emptied and allowed exactly the current parameters' 2-D fp32 data (rebuilt every
  // update: parameters are replaced between updates, e.g. when heads are pruned, and an old
  // address may since hold an activation), then installed until the returned scope ends.
  std::optional<cpu::ScopedBf16Weights> install(const ParamStore& params);

 private:
  std::unique_ptr<cpu::Bf16WeightCache> cache_; // null: nothing to install
};

} // namespace pillars::train
