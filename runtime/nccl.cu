// NCCL's collectives on the backend's stream; see nccl.h. Compiled only when CMake found NCCL.
#include "runtime/nccl.h"

#include <nccl.h>

#include <cstring>
#include <exception>

#include "runtime/cuda_runtime.h"

namespace pillars {

namespace {

void check(ncclResult_t rc, const char* what) {
  if (rc == ncclSuccess) return;
  throw Error(str_cat("NCCL: ", what, " failed: ", ncclGetErrorString(rc)));
}

ncclComm_t as_comm(void* comm) { return static_cast<ncclComm_t>(comm); }

// The communication stream of nccl_sum_beside, and the two events that order it against the
// backend's stream: `reached` (recorded on the backend's stream, waited for by the communication
// stream) and `summed` (the other way round). An event may be recorded again as soon as a wait on
// it is queued: the wait holds on to the record it saw.
struct CommunicationStream {
  cudaStream_t stream = nullptr;
  cudaEvent_t reached = nullptr, summed = nullptr;
};

CommunicationStream& communication() {
  static CommunicationStream s = [] {
    CommunicationStream c;
    PILLARS_CUDA_CHECK(cudaStreamCreateWithFlags(&c.stream, cudaStreamNonBlocking));
    PILLARS_CUDA_CHECK(cudaEventCreateWithFlags(&c.reached, cudaEventDisableTiming));
    PILLARS_CUDA_CHECK(cudaEventCreateWithFlags(&c.summed, cudaEventDisableTiming));
    return c;
  }();
  return s;
}

void sum_on(cudaStream_t stream, void* comm, float* data, int64_t n, int root) {
  const size_t count = static_cast<size_t>(n);
  if (root < 0)
    check(ncclAllReduce(data, data, count, ncclFloat32, ncclSum, as_comm(comm), stream), "ncclAllReduce");
  else
    check(ncclReduce(data, data, count, ncclFloat32, ncclSum, root, as_comm(comm), stream), "ncclReduce");
}

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
  if (!comm) return;
  // While an exception unwinds on one rank alone (a non-finite loss, a failed save on rank 0), a
  // communicator of several ranks is left to the process's end: ncclCommDestroy synchronizes NCCL's
  // streams and, depending on the NCCL version, meets the node's other ranks, which are still
  // training; this rank could then block before tools/run_job.cpp's catch prints the error and ends
  // the job with MPI_Abort. (ncclCommAbort is reported to wait for the other ranks too.) A
  // one-rank communicator has no one to wait for and is destroyed as usual.
  int ranks = 1;
  if (std::uncaught_exceptions() > 0 && ncclCommCount(as_comm(comm), &ranks) == ncclSuccess && ranks > 1) return;
  ncclCommDestroy(as_comm(comm));
}

void nccl_sum(void* comm, float* data, int64_t n, int root) { sum_on(cuda::stream(), comm, data, n, root); }

void nccl_sum_beside(void* comm, float* data, int64_t n, int root) {
  const CommunicationStream& c = communication();
  PILLARS_CUDA_CHECK(cudaEventRecord(c.reached, cuda::stream()));
  PILLARS_CUDA_CHECK(cudaStreamWaitEvent(c.stream, c.reached, 0));
  sum_on(c.stream, comm, data, n, root);
}

void nccl_join() {
  const CommunicationStream& c = communication();
  PILLARS_CUDA_CHECK(cudaEventRecord(c.summed, c.stream));
  PILLARS_CUDA_CHECK(cudaStreamWaitEvent(cuda::stream(), c.summed, 0));
}

void nccl_broadcast(void* comm, float* data, int64_t n, int root) {
  check(ncclBroadcast(data, data, static_cast<size_t>(n), ncclFloat32, root, as_comm(comm), cuda::stream()),
        "ncclBroadcast");
}

} // namespace pillars
