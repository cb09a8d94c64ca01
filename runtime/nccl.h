// NCCL on the CUDA backend's stream: the collectives of a data-parallel job whose ranks each train
// on a GPU of their own (engine/dist/device_sums.h wraps them for the trainer).
//
// NCCL moves the data GPU to GPU (NVLink, InfiniBand, or through the host) with kernels of its
// own; every call here is queued on cuda::stream() behind the backward that produced the buffer,
// so it needs no synchronization with the host. The ranks meet through a unique id that rank 0
// makes and the others receive by MPI (the bootstrap).
//
// Like device.h, these are plain functions on device pointers and sizes, defined by
// runtime/nccl.cu when the build found NCCL and by runtime/nccl_none.cpp (each throwing a
// clear error) when it did not.
#pragma once
#include <cstdint>

namespace pillars {

constexpr int kNcclIdBytes = 128; // NCCL_UNIQUE_ID_BYTES

bool nccl_available(); // this build has NCCL

void nccl_unique_id(char id[kNcclIdBytes]);                       // on rank 0
void* nccl_init(const char id[kNcclIdBytes], int rank, int size); // collective: every rank calls it
void nccl_destroy(void* comm);

// In place, queued on the backend's stream: the element-wise sum over the ranks, into every rank's
// buffer (root < 0: ncclAllReduce) or into rank root's only (ncclReduce).
void nccl_sum(void* comm, float* data, int64_t n, int root);
// Rank root's n floats, into every rank's buffer (ncclBroadcast), queued.
void nccl_broadcast(void* comm, float* data, int64_t n, int root);

// The overlap of a data-parallel step: nccl_sum_beside queues the same sum on the communication
// stream (NCCL's own, beside the backend's), to start once the backend's stream has reached this
// point; the backward queued after it on the backend's stream runs meanwhile:
//
//   backend's stream:  … grads of bucket 0 ─●─ backward of the earlier layers … ───────●─ optimizer
//                                           │ (event)                               (event)│
//   communication:                          └─ sum of bucket 0 ─ sum of bucket 1 … ─────┘
//
// nccl_join makes the backend's stream wait for every sum started so far (before anything reads
// or rewrites the buckets). Both only queue: the host never waits.
void nccl_sum_beside(void* comm, float* data, int64_t n, int root);
void nccl_join();

} // namespace pillars
