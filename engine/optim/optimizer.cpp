// Optimizer: per-parameter state, created lazily and saved/restored by name. See optimizer.h.
#include "engine/optim/optimizer.h"

#include <cmath>

#include "base/error.h"

namespace pillars::optim {
namespace {

Tensor count_tensor(int64_t value) {
  Tensor t = Tensor::empty({1}, DType::i64);
  t.data<int64_t>()[0] = value;
  return t;
}

// A count saved as a 1-element i64 tensor (an f32 holding a whole number is accepted too: torch
// keeps its step counts as float tensors).
int64_t read_count(const std::string& name, const Tensor& t) {
  const auto bad = [&] {
    return InputError(str_cat("optimizer state entry '", name,
                              "' must be a non-negative count in a 1-element i64 tensor, got ", dtype_name(t.dtype()),
                              " ", shape_str(t.shape())));
  };
  if (!t.defined() || t.numel() != 1 || t.device() != Device::cpu) throw bad();
  if (t.dtype() == DType::i64) {
    const int64_t value = t.data<int64_t>()[0];
    if (value < 0) throw bad();
    return value;
  }
  if (t.dtype() == DType::f32) {
    const float value = t.data<float>()[0];
    if (!(value >= 0) || value != std::floor(value)) throw bad();
    return static_cast<int64_t>(value);
  }
  throw bad();
}

} // namespace

Optimizer::Optimizer(std::vector<std::string> buffer_names) : buffer_names_(std::move(buffer_names)) {}

Optimizer::~Optimizer() = default;

Optimizer::ParamState& Optimizer::state_for(const ParamSlot& slot) {
  const Tensor& p = slot.value;
  const Tensor& g = slot.grad;
  PILLARS_CHECK(p.defined() && p.dtype() == DType::f32, "optimizer: parameter '", slot.name, "' must be an f32 tensor");
  PILLARS_CHECK(g.defined() && g.dtype() == DType::f32 && g.device() == p.device() && g.shape() == p.shape(),
                "optimizer: the gradient of '", slot.name, "' must be an f32 ", device_name(p.device()),
                " tensor of shape ", shape_str(p.shape()), ", got ", dtype_name(g.dtype()), " ", shape_str(g.shape()),
                " on ", device_name(g.device()));

  auto it = params_.find(slot.name);
  if (it == params_.end()) {
    ParamState fresh;
    for (size_t k = 0; k < buffer_names_.size(); ++k) fresh.buffers.push_back(Tensor::zeros(p.shape()).to(p.device()));
    return params_.emplace(slot.name, std::move(fresh)).first->second;
  }
  for (size_t k = 0; k < buffer_names_.size(); ++k) {
    Tensor& b = it->second.buffers[k];
    if (b.device() != p.device()) b = b.to(p.device()); // state loaded on the host, parameters on the GPU: move once
    if (b.shape() != p.shape())
      throw InputError(str_cat("optimizer state '", slot.name, ".", buffer_names_[k], "' has shape ",
                               shape_str(b.shape()), " but parameter '", slot.name, "' has shape ",
                               shape_str(p.shape())));
  }
  return it->second;
}

NamedTensors Optimizer::state() const {
  NamedTensors out;
  out.emplace_back("step", count_tensor(steps_));
  for (const auto& [name, s] : params_) {
    out.emplace_back(name + ".step", count_tensor(s.step));
    for (size_t k = 0; k < buffer_names_.size(); ++k) out.emplace_back(name + "." + buffer_names_[k], s.buffers[k]);
  }
  return out;
}

void Optimizer::load_state(const NamedTensors& entries) {
  constexpr int64_t kUnset = -1;
  int64_t steps = kUnset;
  std::map<std::string, ParamState> loaded;
  const auto param_state = [&](const std::string& param) -> ParamState& {
    auto it = loaded.find(param);
    if (it != loaded.end()) return it->second;
    ParamState s;
    s.step = kUnset;
    s.buffers.resize(buffer_names_.size());
    return loaded.emplace(param, std::move(s)).first->second;
  };
  const auto duplicate = [](const std::string& name) {
    return InputError(str_cat("optimizer state entry '", name, "' appears twice"));
  };

  // 1. Sort every entry into its slot.
  for (const auto& [name, t] : entries) {
    if (name == "step") {
      if (steps != kUnset) throw duplicate(name);
      steps = read_count(name, t);
      continue;
    }
    const size_t dot = name.rfind('.');
    const std::string field = dot == std::string::npos ? name : name.substr(dot + 1);
    if (dot == std::string::npos || dot == 0)
      throw InputError(str_cat("unexpected optimizer state entry '", name, "'"));
    ParamState& s = param_state(name.substr(0, dot));
    if (field == "step") {
      if (s.step != kUnset) throw duplicate(name);
      s.step = read_count(name, t);
      continue;
    }
    size_t k = 0;
    while (k < buffer_names_.size() && buffer_names_[k] != field) ++k;
    if (k == buffer_names_.size()) throw InputError(str_cat("unexpected optimizer state entry '", name, "'"));
    if (s.buffers[k].defined()) throw duplicate(name);
    if (!t.defined() || t.dtype() != DType::f32 || t.device() != Device::cpu)
      throw InputError(str_cat("optimizer state entry '", name, "' must be an f32 CPU tensor, got ",
                               t.defined() ? dtype_name(t.dtype()) : "nothing"));
    s.buffers[k] = t.clone();
  }

  // 2. Everything present and consistent?
  if (steps == kUnset) throw InputError("optimizer state: missing entry 'step'");
  for (const auto& [param, s] : loaded) {
    if (s.step == kUnset) throw InputError(str_cat("optimizer state: missing entry '", param, ".step'"));
    for (size_t k = 0; k < buffer_names_.size(); ++k) {
      const std::string entry = param + "." + buffer_names_[k];
      if (!s.buffers[k].defined()) throw InputError(str_cat("optimizer state: missing entry '", entry, "'"));
      if (s.buffers[k].shape() != s.buffers[0].shape())
        throw InputError(str_cat("optimizer state entry '", entry, "' has shape ", shape_str(s.buffers[k].shape()),
                                 " but '", param, ".", buffer_names_[0], "' has shape ",
                                 shape_str(s.buffers[0].shape())));
    }
  }

  // 3. Commit.
  steps_ = steps;
  params_ = std::move(loaded);
}

} // namespace pillars::optim
