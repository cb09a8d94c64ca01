// The one-process communicator, the launcher check, and world(); see communicator.h.
#include "engine/dist/communicator.h"

#include <cstdlib>
#include <memory>

#include "engine/dist/mpi_world.h"

namespace pillars::dist {

namespace {

class SingleProcess final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string describe() const override { return "one process"; }
  void all_reduce_sum(float*, int64_t) override {}
  void all_reduce_sum(double*, int64_t) override {}
  void all_reduce_sum(int64_t*, int64_t) override {}
  void all_reduce_max(int64_t*, int64_t) override {}
  void broadcast(void*, int64_t, int) override {}
  void barrier() override {}
  int64_t start_sum(float*, int64_t, int) override { return 0; }
  bool test(int64_t) override { return true; }
  void wait(int64_t) override {}
  std::vector<std::string> gather(const std::string& mine, int) override { return {mine}; }
  [[noreturn]] void abort(int code) override { std::exit(code); }
};

} // namespace

Communicator& single_process() {
  static SingleProcess one;
  return one;
}

bool started_by_launcher() {
  // Open MPI's mpirun; MPICH's Hydra and Slurm's srun --mpi=pmi2; PMIx launchers (srun --mpi=pmix).
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(name)) return true;
  return false;
}

Communicator& world() {
  static Communicator* const the_world = started_by_launcher() ? &mpi_world() : &single_process();
  return *the_world;
}

} // namespace pillars::dist
