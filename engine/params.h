// ParamStore: the model's named parameters, in creation order, with PyTorch/fairseq names
// ("encoder.layers.0.self_attn.q_proj.weight"). A graph refers to parameters by name; the executor
// binds them from here. Saved and loaded as safetensors (engine/io/safetensors.h).
#pragma once
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/tensor.h"

namespace pillars {

class ParamStore {
 public:
  // Creates a zero-initialized f32 parameter; the name must be new.
  Tensor& add(const std::string& name, const Shape& shape);
  bool contains(const std::string& name) const { return map_.count(name) != 0; }
  Tensor& get(const std::string& name); // throws naming the parameter if absent
  const Tensor& get(const std::string& name) const;
  const std::vector<std::string>& names() const { return order_; } // creation order
  size_t size() const { return order_.size(); }
  int64_t numel() const; // all parameters
  // Removes a parameter, or replaces its tensor (V2S pruning slices heads out of projections).
  void remove(const std::string& name);
  void replace(const std::string& name, Tensor value);

  // Moves every parameter to `device` (a copy per tensor; a no-op for those already there). Training
  // on the GPU keeps the store there; saving copies each tensor back to the host as it writes.
  void to(Device device);
  // A store with the same names whose tensors are on `device`: the very same tensors where they are
  // already there (no copy), copies otherwise (e.g. a host snapshot of GPU parameters for decoding).
  ParamStore on(Device device) const;
  Device device() const; // where the parameters are (the first one's; the CPU for an empty store)

  // Checkpoint I/O (safetensors; atomic write: a crash never leaves a partial file under `path`).
  // `load` requires every parameter of this store to be in the file with the same shape, and
  // reports missing/unexpected/mismatched tensors by name, naming the file.
  void save(const std::string& path, const std::map<std::string, std::string>& metadata = {}) const;
  void load(const std::string& path);

 private:
  std::vector<std::string> order_;
  std::unordered_map<std::string, Tensor> map_;
};

} // namespace pillars
