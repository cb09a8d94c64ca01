// See device_sums.h.
#include "engine/dist/device_sums.h"

#include <cstdlib>
#include <string>

#include "base/error.h"
#include "runtime/cuda_device.h"
#include "runtime/nccl.h"

namespace pillars::dist {

DeviceSums::DeviceSums(Communicator& job) {
  if (!nccl_available()) nccl_unique_id(nullptr); // throws the build's explanation
  char id[kNcclIdBytes] = {};
  if (job.is_root()) nccl_unique_id(id);
  job.broadcast(id, kNcclIdBytes, 0);
  comm_ = nccl_init(id, job.rank(), job.size());
}

DeviceSums::~DeviceSums() { nccl_destroy(comm_); }

void DeviceSums::sum(float* device_data, int64_t n, int root) {
  nccl_sum(comm_, device_data, n, root == Communicator::kEveryRank ? -1 : root);
}

void DeviceSums::start_sum(float* device_data, int64_t n, int root) {
  nccl_sum_beside(comm_, device_data, n, root == Communicator::kEveryRank ? -1 : root);
}

void DeviceSums::join() { nccl_join(); }

void DeviceSums::broadcast(float* device_data, int64_t n, int root) { nccl_broadcast(comm_, device_data, n, root); }

int local_gpu() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID"}) {
    if (const char* v = std::getenv(name)) {
      const int gpus = cuda_device_count();
      return gpus > 0 ? std::atoi(v) % gpus : 0;
    }
  }
  return 0;
}

} // namespace pillars::dist
