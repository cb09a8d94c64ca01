// The processes of a data-parallel job, and the collectives they use to act as one.
//
//   dist::Communicator& world = dist::world();   // this process's job (MPI under mpirun/srun)
//   world.all_reduce_sum(grad, n);                // every process now holds the sum of all grads
//   if (world.rank() == 0) write_the_log(...);    // one voice
//
// A DATA-PARALLEL JOB is N copies of the same program (ranks 0 … N−1), each holding the whole
// model. Each update, every rank computes the gradient of its share of the update's batches; the
// ranks sum their gradients (an all-reduce) and then apply the same optimizer step to the same
// parameters, so the copies never drift apart. Rank 0 alone writes the run directory.
//
// WHERE THE PROCESSES COME FROM. A launcher starts them: `mpirun -np N pillars train …` (Open
// MPI) or Slurm's `srun`. It tells each process its rank through the environment
// (OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_RANK); world() looks for those variables and initializes
// MPI only when one is set. Without a launcher, world() is the single process and MPI is never
// touched: every collective below is then the identity.
//
// The transport is MPI's (Open MPI from Debian), never our own: the collectives here are thin,
// typed wrappers around MPI_Allreduce, MPI_Bcast and MPI_Barrier. A build without MPI (configured
// with -DPILLARS_NO_MPI=ON, or where CMake found none) still has world(): a single process, and a
// clear error if a launcher started more than one.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace pillars::dist {

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;             // 0 … size()−1
  virtual int size() const = 0;             // the number of processes in the job
  virtual std::string describe() const = 0; // "MPI, 2 processes" or "one process"

  // Element-wise sums over all ranks, in place: afterwards every rank holds x_0 + x_1 + … + x_{N−1}.
  // Float sums are associative in exact arithmetic only: MPI reduces in an order of its own, so a
  // sum of three or more float vectors may differ from a left-to-right sum in the last bits.
  virtual void all_reduce_sum(float* data, int64_t n) = 0;
  virtual void all_reduce_sum(double* data, int64_t n) = 0;
  virtual void all_reduce_sum(int64_t* data, int64_t n) = 0;
  // Element-wise maximum over all ranks, in place (e.g. "has any rank been asked to stop?").
  virtual void all_reduce_max(int64_t* data, int64_t n) = 0;
  // Rank `root`'s bytes, copied to every rank.
  virtual void broadcast(void* data, int64_t bytes, int root) = 0;
  virtual void barrier() = 0;

  // Nonblocking sums, to overlap communication with computation (train/gradient_buckets.h):
  //
  //   int64_t t = comm.start_sum(buf, n, Communicator::kEveryRank);  // MPI_Iallreduce
  //   … compute, calling comm.test(t) now and then so MPI makes progress …
  //   comm.wait(t);                                                  // buf holds the sum
  //
  // root = kEveryRank: every rank's buffer gets the sum (an all-reduce). root = r: only rank r's
  // buffer gets it (MPI_Ireduce); the other ranks' buffers are left as they were. Until wait()
  // returns, nobody may read or write the buffer. n < 2^31 elements.
  static constexpr int kEveryRank = -1;
  virtual int64_t start_sum(float* data, int64_t n, int root) = 0;
  virtual bool test(int64_t ticket) = 0; // true once the sum is done; lets MPI progress either way
  virtual void wait(int64_t ticket) = 0;

  // Every rank's bytes, gathered at rank `root` in rank order (MPI_Gatherv); the other ranks get an
  // empty vector.
  virtual std::vector<std::string> gather(const std::string& mine, int root) = 0;

  // Ends every process of the job with exit status `code` (MPI_Abort): for an error on one rank,
  // which would otherwise leave the others waiting forever in their next collective.
  [[noreturn]] virtual void abort(int code) = 0;

  bool is_root() const { return rank() == 0; }
};

// The job this process is part of: MPI's world when a launcher started it (initialized on the
// first call), else one process. MPI is finalized at exit. Throws pillars::InputError when a
// launcher started several processes and this build has no MPI.
Communicator& world();

// True when the environment says a launcher (mpirun, srun) started this process.
bool started_by_launcher();

// The one-process communicator: rank 0 of 1, every collective the identity.
Communicator& single_process();

} // namespace pillars::dist
