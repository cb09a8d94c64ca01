// Where the training loop computes; see device_scope.h.
#include "train/device_scope.h"

#include <string>
#include <vector>

#include <omp.h>

#include "base/build_info.h"
#include "base/enum_names.h"
#include "base/error.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/gemm_precision.h"
#include "runtime/cuda_device.h"

namespace pillars::train {

nlohmann::json machine_record(Device device) {
  return {{"cpu", cpu_model_name()},
          {"isa", cpu::isa_name(cpu::active_isa())},
          {"threads", omp_get_max_threads()},
          {"device", enum_name(device)}};
}

void check_device_settings(const Experiment& e) {
  if (e.train.device != Device::cuda) { // train.precision bf16 runs on any CPU (gemm_bf16's portable path)
    if (e.train.attention_backend == AttentionBackend::cudnn)
      throw InputError("train.attention_backend \"cudnn\" (cuDNN's fused attention) needs train.device \"cuda\"");
    return;
  }
  if (e.eval.precision == Precision::bf16) // a GPU run evaluates its test split on the GPU
    throw InputError(
        "eval.precision \"bf16\" decodes on the CPU; a train.device \"cuda\" run evaluates on the GPU, at "
        "train.precision");
  if (cuda_device_count() == 0) throw InputError("train.device is \"cuda\" but " + cuda_unavailable_reason());
}

CpuMatmulPrecision::CpuMatmulPrecision(const Experiment& e) : previous_(cpu::matmul_precision()) {
  if (e.train.device == Device::cpu) cpu::set_matmul_precision(e.train.precision);
}

CpuMatmulPrecision::~CpuMatmulPrecision() { cpu::set_matmul_precision(previous_); }

UpdateBf16Weights::UpdateBf16Weights(const Experiment& e, bool enabled)
    : UpdateBf16Weights(enabled && e.train.device == Device::cpu && e.train.precision == Precision::bf16) {}

UpdateBf16Weights::UpdateBf16Weights(bool active) {
  if (active) cache_ = std::make_unique<cpu::Bf16WeightCache>();
}

std::optional<cpu::ScopedBf16Weights> UpdateBf16Weights::install(const ParamStore& params) {
  if (cache_ == nullptr) return std::nullopt;
  std::vector<const float*> weights;
  for (const std::string& name : params.names()) {
    const Tensor& t = params.get(name);
    if (t.dtype() == DType::f32 && t.shape().size() == 2) weights.push_back(t.data<float>());
  }
  cache_->reset(weights);
  return std::optional<cpu::ScopedBf16Weights>(std::in_place, cache_.get());
}

ParamsOnDevice::ParamsOnDevice(const Experiment& e, ParamStore& params) : params_(params) {
  check_device_settings(e);
  if (e.train.device != Device::cuda) return;
  cuda_set_precision(e.train.precision);
  params_.to(Device::cuda);
  moved_ = true;
}

ParamsOnDevice::~ParamsOnDevice() {
  if (!moved_) return;
  try {
    params_.to(Device::cpu);
  } catch (...) { // a destructor must not throw; the run already failed if the device did
  }
}

} // namespace pillars::train
