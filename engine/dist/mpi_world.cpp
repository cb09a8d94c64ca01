// MPI's world as a Communicator: each collective is one MPI call on MPI_COMM_WORLD.
// Compiled only when CMake found MPI (PILLARS_HAVE_MPI); see communicator.h.
#include "engine/dist/mpi_world.h"

// Only the C API: Open MPI's deprecated C++ bindings would come along otherwise.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <limits>
#include <unordered_map>

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
    check(
        MPI_Allreduce(MPI_IN_PLACE, data + at, static_cast<int>(std::min(kMaxCount, n - at)), type, op, MPI_COMM_WORLD),
        what);
}

class MpiWorld final : public Communicator {
 public:
  MpiWorld() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      // FUNNELED: only the thread that initialized MPI calls it (OpenMP's workers never do).
      int provided = 0;
      check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
      std::atexit([] {
        int finalized = 0;
        MPI_Finalized(&finalized);
        if (!finalized) MPI_Finalize();
      });
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string describe() const override { return str_cat("MPI, ", size_, size_ == 1 ? " process" : " processes"); }

  void all_reduce_sum(float* data, int64_t n) override {
    all_reduce(data, n, MPI_FLOAT, MPI_SUM, "MPI_Allreduce (float sum)");
  }
  void all_reduce_sum(double* data, int64_t n) override {
    all_reduce(data, n, MPI_DOUBLE, MPI_SUM, "MPI_Allreduce (double sum)");
  }
  void all_reduce_sum(int64_t* data, int64_t n) override {
    all_reduce(data, n, MPI_INT64_T, MPI_SUM, "MPI_Allreduce (int64 sum)");
  }
  void all_reduce_max(int64_t* data, int64_t n) override {
    all_reduce(data, n, MPI_INT64_T, MPI_MAX, "MPI_Allreduce (int64 max)");
  }
  void broadcast(void* data, int64_t bytes, int root) override {
    char* p = static_cast<char*>(data);
    for (int64_t at = 0; at < bytes; at += kMaxCount)
      check(MPI_Bcast(p + at, static_cast<int>(std::min(kMaxCount, bytes - at)), MPI_BYTE, root, MPI_COMM_WORLD),
            "MPI_Bcast");
  }
  void barrier() override { check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }

  int64_t start_sum(float* data, int64_t n, int root) override {
    if (n >= kMaxCount) throw Error(str_cat("MPI: a nonblocking sum of ", n, " floats (at most 2^30 in one piece)"));
    MPI_Request request = MPI_REQUEST_NULL;
    const int count = static_cast<int>(n);
    if (root == kEveryRank)
      check(MPI_Iallreduce(MPI_IN_PLACE, data, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &request), "MPI_Iallreduce");
    else if (root == rank_)
      check(MPI_Ireduce(MPI_IN_PLACE, data, count, MPI_FLOAT, MPI_SUM, root, MPI_COMM_WORLD, &request), "MPI_Ireduce");
    else
      check(MPI_Ireduce(data, nullptr, count, MPI_FLOAT, MPI_SUM, root, MPI_COMM_WORLD, &request), "MPI_Ireduce");
    const int64_t ticket = next_ticket_++;
    pending_[ticket] = request;
    return ticket;
  }
  bool test(int64_t ticket) override {
    const auto it = pending_.find(ticket);
    if (it == pending_.end()) return true;
    int done = 0;
    check(MPI_Test(&it->second, &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (done) pending_.erase(it);
    return done != 0;
  }
  void wait(int64_t ticket) override {
    const auto it = pending_.find(ticket);
    if (it == pending_.end()) return;
    MPI_Request request = it->second;
    pending_.erase(it);
    check(MPI_Wait(&request, MPI_STATUS_IGNORE), "MPI_Wait");
  }

  [[noreturn]] void abort(int code) override {
    std::fflush(nullptr);
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code); // MPI_Abort does not return
  }

  std::vector<std::string> gather(const std::string& mine, int root) override {
    if (static_cast<int64_t>(mine.size()) >= kMaxCount)
      throw Error(str_cat("MPI: gathering ", mine.size(), " bytes from one rank"));
    const int length = static_cast<int>(mine.size());
    std::vector<int> lengths(static_cast<size_t>(size_)), offsets(static_cast<size_t>(size_));
    check(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, root, MPI_COMM_WORLD), "MPI_Gather");
    std::string all;
    if (rank_ == root) {
      int64_t total = 0;
      for (size_t r = 0; r < lengths.size(); ++r) offsets[r] = static_cast<int>(total), total += lengths[r];
      if (total >= kMaxCount) throw Error(str_cat("MPI: gathering ", total, " bytes at one rank"));
      all.resize(static_cast<size_t>(total));
    }
    check(MPI_Gatherv(mine.data(), length, MPI_BYTE, all.data(), lengths.data(), offsets.data(), MPI_BYTE, root,
                      MPI_COMM_WORLD),
          "MPI_Gatherv");
    std::vector<std::string> out;
    if (rank_ == root)
      for (size_t r = 0; r < lengths.size(); ++r)
        out.push_back(all.substr(static_cast<size_t>(offsets[r]), static_cast<size_t>(lengths[r])));
    return out;
  }

 private:
  int rank_ = 0, size_ = 1;
  int64_t next_ticket_ = 1;
  std::unordered_map<int64_t, MPI_Request> pending_; // started, not yet seen done
};

} // namespace

Communicator& mpi_world() {
  static MpiWorld world;
  return world;
}

} // namespace pillars::dist
