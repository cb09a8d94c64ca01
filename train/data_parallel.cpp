// See data_parallel.h.
#include "train/data_parallel.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "base/error.h"

namespace pillars::train {

std::vector<int64_t> batches_of_rank(const std::vector<int64_t>& tokens, int rank, int size) {
  std::vector<int64_t> order(tokens.size());
  for (size_t j = 0; j < order.size(); ++j) order[j] = static_cast<int64_t>(j);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return tokens[static_cast<size_t>(a)] > tokens[static_cast<size_t>(b)];
  });
  std::vector<int64_t> load(static_cast<size_t>(size), 0), mine;
  for (const int64_t j : order) {
    const size_t r = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    load[r] += tokens[static_cast<size_t>(j)];
    if (static_cast<int>(r) == rank) mine.push_back(j);
  }
  std::sort(mine.begin(), mine.end());
  return mine;
}

namespace {

// The entries as bytes, each: name length (u32), name, dtype (u8), rank (u8), the extents (i64
// each), the elements. Only between the ranks of one job, so no byte-order concerns.
template <typename T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

std::string serialize(const optim::NamedTensors& entries) {
  std::string out;
  for (const auto& [name, t] : entries) {
    put(out, static_cast<uint32_t>(name.size()));
    out += name;
    put(out, static_cast<uint8_t>(t.dtype()));
    put(out, static_cast<uint8_t>(t.shape().size()));
    for (const int64_t d : t.shape()) put(out, d);
    out.append(static_cast<const char*>(t.raw()), t.nbytes());
  }
  return out;
}

optim::NamedTensors deserialize(const std::string& in) {
  optim::NamedTensors entries;
  size_t at = 0;
  const auto take = [&](void* to, size_t n) {
    PILLARS_CHECK(at + n <= in.size(), "optimizer state from another rank is cut short");
    std::memcpy(to, in.data() + at, n);
    at += n;
  };
  while (at < in.size()) {
    uint32_t length = 0;
    take(&length, sizeof length);
    std::string name(length, '\0');
    take(name.data(), length);
    uint8_t dtype = 0, rank = 0;
    take(&dtype, 1), take(&rank, 1);
    Shape shape(rank);
    for (int64_t& d : shape) take(&d, sizeof d);
    Tensor t = Tensor::empty(shape, static_cast<DType>(dtype));
    take(t.raw(), t.nbytes());
    entries.emplace_back(std::move(name), std::move(t));
  }
  return entries;
}

} // namespace

void gather_optimizer_state(dist::Communicator& comm, const optim::Optimizer& mine,
                            const std::function<bool(const std::string& param)>& owns, optim::Optimizer& whole) {
  optim::NamedTensors kept;              // "step" (rank 0's, the same everywhere) and the owned parameters' entries
  for (auto& [name, t] : mine.state()) { // on the host (a GPU run keeps its state on the device)
    const size_t dot = name.rfind('.');
    if (name == "step" ? comm.is_root() : dot != std::string::npos && owns(name.substr(0, dot)))
      kept.emplace_back(name, t.device() == Device::cpu ? t : t.to(Device::cpu));
  }
  const std::vector<std::string> parts = comm.gather(comm.is_root() ? std::string() : serialize(kept), 0);
  if (!comm.is_root()) return;
  for (size_t r = 1; r < parts.size(); ++r)
    for (auto& entry : deserialize(parts[r])) kept.push_back(std::move(entry));
  whole.load_state(kept);
}

void share_state(dist::Communicator& comm, TrainerState& state) {
  if (comm.size() == 1) return;
  std::string text = comm.is_root() ? to_json(state).dump() : std::string();
  int64_t bytes = static_cast<int64_t>(text.size());
  comm.broadcast(&bytes, sizeof bytes, 0);
  text.resize(static_cast<size_t>(bytes));
  comm.broadcast(text.data(), bytes, 0);
  if (!comm.is_root()) state = trainer_state_from_json(nlohmann::json::parse(text), "rank 0's trainer state");
}

} // namespace pillars::train
