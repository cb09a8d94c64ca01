// runtime/nccl.h in a build without NCCL: nccl_available() is false and every collective throws
// a clear error. (With NCCL, runtime/nccl.cu defines these and this file compiles to nothing.)
#ifndef PILLARS_HAVE_NCCL
#include "base/error.h"
#include "runtime/nccl.h"

namespace pillars {

namespace {
[[noreturn]] void no_nccl() {
  throw InputError(
      "this build of pillars has no NCCL (it comes with the CUDA toolkit: configure with nvcc and "
      "libnccl present); train data-parallel on the CPU (train.device \"cpu\")");
}
} // namespace

bool nccl_available() { return false; }
void nccl_unique_id(char*) { no_nccl(); }
void* nccl_init(const char*, int, int) { no_nccl(); }
void nccl_destroy(void*) {}
void nccl_sum(void*, float*, int64_t, int) { no_nccl(); }
void nccl_broadcast(void*, float*, int64_t, int) { no_nccl(); }
void nccl_sum_beside(void*, float*, int64_t, int) { no_nccl(); }
void nccl_join() {}

} // namespace pillars
#endif
