// MPI's world as a Communicator: each collective is one MPI call on MPI_COMM_WORLD.
// Compiled only when CMake found MPI (PILLARS_MPI); see communicator.h.
#include "engine/dist/mpi_world.h"

#include <mpi.h>

#include <cstdlib>
#include <limits>

#include "base/error.h"

namespace pillars::dist {

namespace {

// MPI counts are int: a longer buffer goes in pieces of at most 2^30 elements.
constexpr int64_t kMaxCount = int64_t{1} << 30;

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(rc, text, &length);
  throw Error(str_cat("MPI: ", what, " failed: ", std::string(text, static_cast<size_t>(length))));
}

template <typename T>
void all_reduce(T* data, int64_t n, MPI_Datatype type, MPI_Op op, const char* what) {
  for (int64_t at = 0; at < n; at += kMaxCount)
    check(MPI_Allreduce(MPI_IN_PLACE, data + at, static_cast<int>(std::min(kMaxCount, n - at)), type, op, MPI_COMM_WORLD), what);
}

class MpiWorld final : public Communicator {
 public:
  MpiWorld() {
    int initialised = 0;
    MPI_Initialized(&initialised);
    if (!initialised) {
      // FUNNELED: only the thread that initialised MPI calls it (OpenMP's workers never do).
      int provided = 0;
      check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
      std::atexit([] {
        int finalised = 0;
        MPI_Finalized(&finalised);
        if (!finalised) MPI_Finalize();
      });
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string describe() const override { return str_cat("MPI, ", size_, size_ == 1 ? " process" : " processes"); }

  void all_reduce_sum(float* data, int64_t n) override { all_reduce(data, n, MPI_FLOAT, MPI_SUM, "MPI_Allreduce (float sum)"); }
  void all_reduce_sum(double* data, int64_t n) override { all_reduce(data, n, MPI_DOUBLE, MPI_SUM, "MPI_Allreduce (double sum)"); }
  void all_reduce_sum(int64_t* data, int64_t n) override { all_reduce(data, n, MPI_INT64_T, MPI_SUM, "MPI_Allreduce (int64 sum)"); }
  void all_reduce_max(int64_t* data, int64_t n) override { all_reduce(data, n, MPI_INT64_T, MPI_MAX, "MPI_Allreduce (int64 max)"); }
  void broadcast(void* data, int64_t bytes, int root) override {
    char* p = static_cast<char*>(data);
    for (int64_t at = 0; at < bytes; at += kMaxCount)
      check(MPI_Bcast(p + at, static_cast<int>(std::min(kMaxCount, bytes - at)), MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast");
  }
  void barrier() override { check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }

 private:
  int rank_ = 0, size_ = 1;
};

} // namespace

Communicator& mpi_world() {
  static MpiWorld world;
  return world;
}

} // namespace pillars::dist
