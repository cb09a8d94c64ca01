// Where the training loop computes: the check that train.device and its settings can run here,
// and the two scopes train_model holds around the loop (train/trainer.h): the parameters on the
// GPU for a train.device "cuda" run, and the CPU's matmul precision for a CPU run; each undone when
// the loop ends, however it ends.
//
//   ParamsOnDevice on_device(e, params); // checks the settings first
//   CpuMatmulPrecision cpu_precision(e);
//   ... the loop ...
#pragma once
#include "engine/params.h"
#include "train/experiment.h"

namespace pillars::train {

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

} // namespace pillars::train
