// ParamStore: see params.h.
#include "engine/params.h"

#include <algorithm>

#include "base/error.h"
#include "engine/io/safetensors.h"

namespace pillars {

Tensor& ParamStore::add(const std::string& name, const Shape& shape) {
  PILLARS_CHECK(!name.empty(), "ParamStore::add: empty parameter name");
  PILLARS_CHECK(!contains(name), "ParamStore::add: parameter \"", name, "\" already exists");
  Tensor& t = map_[name]; // unordered_map nodes are stable: the reference survives later inserts
  t = Tensor::zeros(shape, DType::f32);
  order_.push_back(name);
  return t;
}

Tensor& ParamStore::get(const std::string& name) {
  const auto it = map_.find(name);
  PILLARS_CHECK(it != map_.end(), "ParamStore: no parameter named \"", name, "\" (the store has ", size(),
                " parameters)");
  return it->second;
}

const Tensor& ParamStore::get(const std::string& name) const { return const_cast<ParamStore*>(this)->get(name); }

int64_t ParamStore::numel() const {
  int64_t total = 0;
  for (const auto& [name, t] : map_) total += t.numel();
  return total;
}

void ParamStore::to(Device device) {
  for (const std::string& name : order_) map_[name] = map_[name].to(device);
}

Device ParamStore::device() const { return order_.empty() ? Device::cpu : map_.at(order_.front()).device(); }

ParamStore ParamStore::on(Device device) const {
  ParamStore copy;
  copy.order_ = order_;
  for (const std::string& name : order_) copy.map_[name] = map_.at(name).to(device);
  return copy;
}

void ParamStore::remove(const std::string& name) {
  PILLARS_CHECK(contains(name), "ParamStore::remove: no parameter named \"", name, "\"");
  map_.erase(name);
  order_.erase(std::find(order_.begin(), order_.end(), name));
}

void ParamStore::replace(const std::string& name, Tensor value) {
  PILLARS_CHECK(value.defined(), "ParamStore::replace: undefined tensor for \"", name, "\"");
  get(name) = std::move(value); // get() names the parameter if it is absent
}

// ---- checkpoint I/O ---------------------------------------------------------------------------

void ParamStore::save(const std::string& path, const std::map<std::string, std::string>& metadata) const {
  std::vector<io::NamedTensor> tensors;
  tensors.reserve(order_.size());
  for (const std::string& name : order_) tensors.push_back({name, map_.at(name)});
  // Our names are PyTorch's, so mark the file as a PyTorch state dict unless told otherwise
  // (transformers refuses safetensors files whose "format" is something else).
  std::map<std::string, std::string> meta = metadata;
  meta.emplace("format", "pt");
  io::save_safetensors(path, tensors, meta);
}

namespace {

// Collects the problems with a checkpoint, a few names per kind, for one readable message.
class Mismatches {
 public:
  void add(const std::string& kind, const std::string& item) {
    auto& list = kinds_[kind];
    if (list.shown.size() < kMaxShown) list.shown.push_back(item);
    ++list.count;
  }
  bool empty() const { return kinds_.empty(); }
  std::string str() const {
    std::string out;
    for (const auto& [kind, list] : kinds_) {
      out += str_cat("\n  ", kind, " (", list.count, "): ");
      for (size_t i = 0; i < list.shown.size(); ++i) out += (i ? ", " : "") + list.shown[i];
      if (list.count > list.shown.size()) out += str_cat(", ... and ", list.count - list.shown.size(), " more");
    }
    return out;
  }

 private:
  static constexpr size_t kMaxShown = 8;
  struct List {
    std::vector<std::string> shown;
    size_t count = 0;
  };
  std::map<std::string, List> kinds_;
};

std::string describe(const Tensor& t) { return str_cat(dtype_name(t.dtype()), " ", shape_str(t.shape())); }

} // namespace

void ParamStore::load(const std::string& path) {
  io::SafetensorsContents contents = io::load_safetensors(path);
  std::unordered_map<std::string, Tensor*> in_file;
  for (io::NamedTensor& t : contents.tensors) in_file[t.name] = &t.tensor;

  // Check everything first, so that a bad checkpoint leaves the store unchanged.
  Mismatches problems;
  for (const std::string& name : order_) {
    const auto it = in_file.find(name);
    const Tensor& mine = map_.at(name);
    PILLARS_CHECK(mine.device() == Device::cpu, path, ": cannot load into parameter \"", name, "\" on ",
                  device_name(mine.device()), "; load on the CPU, then move the parameters");
    if (it == in_file.end())
      problems.add("missing from the file", str_cat("\"", name, "\""));
    else if (it->second->shape() != mine.shape() || it->second->dtype() != mine.dtype())
      problems.add("shape or dtype mismatch",
                   str_cat("\"", name, "\" (file ", describe(*it->second), ", model ", describe(mine), ")"));
  }
  for (const io::NamedTensor& t : contents.tensors)
    if (!contains(t.name)) problems.add("unexpected tensors in the file", str_cat("\"", t.name, "\""));
  if (!problems.empty())
    throw InputError(str_cat(path, ": checkpoint does not match the model's parameters:", problems.str()));

  // Copy into the existing tensors, so that views and bindings of the parameters stay valid.
  for (const std::string& name : order_) map_.at(name).copy_from(*in_file.at(name));
}

} // namespace pillars
