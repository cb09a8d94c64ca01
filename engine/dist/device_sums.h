// Sums of buffers that live on the GPU, over the ranks of a data-parallel job whose ranks each train
// on a GPU of their own (train.device "cuda"): NCCL's collectives (runtime/nccl.h), queued on
// the CUDA backend's stream behind the backward that made the gradients.
//
// NCCL needs a bootstrap to find its peers: rank 0 makes a unique id, the job's Communicator (MPI)
// broadcasts it, and every rank joins with it on its GPU (the llm.c and PyTorch recipe). The rank
// on its machine picks the GPU: Open MPI's OMPI_COMM_WORLD_LOCAL_RANK, or Slurm's SLURM_LOCALID,
// modulo the machine's GPUs (local_gpu()).
#pragma once
#include <cstdint>

#include "engine/dist/communicator.h"

namespace pillars::dist {

class DeviceSums {
 public:
  // Collective: every rank of `job` constructs one at the same point. Throws pillars::InputError in
  // a build without NCCL.
  explicit DeviceSums(Communicator& job);
  ~DeviceSums();
  DeviceSums(const DeviceSums&) = delete;
  DeviceSums& operator=(const DeviceSums&) = delete;

  // In place, queued: the sum over the ranks into every rank's buffer (root = kEveryRank) or into
  // rank root's only.
  void sum(float* device_data, int64_t n, int root);
  // The same sum on the communication stream, beside the work queued after it (runtime/nccl.h:
  // nccl_sum_beside); join() queues the wait for every sum started so far.
  void start_sum(float* device_data, int64_t n, int root);
  void join();
  // Rank root's n floats into every rank's buffer, queued.
  void broadcast(float* device_data, int64_t n, int root);

 private:
  void* comm_ = nullptr; // ncclComm_t
};

// The GPU this process should use: its rank on its machine (the launcher's environment) modulo the
// machine's GPUs; 0 outside a job.
int local_gpu();

} // namespace pillars::dist
