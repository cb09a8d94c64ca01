// NCCL's collectives on the backend's stream; see nccl.h. Compiled only when CMake found NCCL.
#include "kernels/cuda/nccl.h"

#include <nccl.h>

#include <cstring>

#include "kernels/cuda/runtime.h"

namespace pillars {

namespace {

void check(ncclResult_t rc, const char* what) {
  if (rc == ncclSuccess) return;
  throw Error(str_cat("NCCL: ", what, " failed: ", ncclGetErrorString(rc)));
}

ncclComm_t as_comm(void* comm) { return static_cast<ncclComm_t>(comm); }

} // namespace

bool nccl_available() { return true; }

void nccl_unique_id(char id[kNcclIdBytes]) {
  static_assert(sizeof(ncclUniqueId) == kNcclIdBytes, "NCCL_UNIQUE_ID_BYTES changed");
  ncclUniqueId u;
  check(ncclGetUniqueId(&u), "ncclGetUniqueId");
  std::memcpy(id, &u, sizeof u);
}

void* nccl_init(const char id[kNcclIdBytes], int rank, int size) {
  ncclUniqueId u;
  std::memcpy(&u, id, sizeof u);
  ncclComm_t comm = nullptr;
  check(ncclCommInitRank(&comm, size, u, rank), "ncclCommInitRank");
  return comm;
}

void nccl_destroy(void* comm) {
  if (comm) ncclCommDestroy(as_comm(comm));
}

void nccl_sum(void* comm, float* data, int64_t n, int root) {
  const size_t count = static_cast<size_t>(n);
  if (root < 0) check(ncclAllReduce(data, data, count, ncclFloat32, ncclSum, as_comm(comm), cuda::stream()), "ncclAllReduce");
  else check(ncclReduce(data, data, count, ncclFloat32, ncclSum, root, as_comm(comm), cuda::stream()), "ncclReduce");
}

void nccl_broadcast(void* comm, float* data, int64_t n, int root) {
  check(ncclBroadcast(data, data, static_cast<size_t>(n), ncclFloat32, root, as_comm(comm), cuda::stream()), "ncclBroadcast");
}

} // namespace pillars
