// See data_parallel.h.
#include "train/data_parallel.h"

#include <string>

#include "base/error.h"

namespace pillars::train {

std::vector<int64_t> batches_of_rank(int64_t batches, int rank, int size) {
  std::vector<int64_t> mine;
  for (int64_t j = rank; j < batches; j += size) mine.push_back(j);
  return mine;
}

void sum_gradients(dist::Communicator& comm, std::vector<optim::ParamSlot>& slots) {
  if (comm.size() == 1) return;
  for (optim::ParamSlot& slot : slots) {
    if (slot.grad.device() != Device::cpu)
      throw Error("data-parallel training sums gradients on the CPU; train.device \"cuda\" needs the NCCL backend");
    comm.all_reduce_sum(slot.grad.data<float>(), slot.grad.numel());
  }
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
