// See run_job.h.
#include "tools/run_job.h"

#include <omp.h>

#include <cstdio>
#include <cstdlib>
#include <exception>

#include "base/error.h"
#include "base/run_guard.h"
#include "engine/dist/communicator.h"
#include "engine/dist/device_sums.h"
#include "runtime/cuda_device.h"

namespace pillars::cli {
namespace {

// Open MPI's mpirun (4.1) meets a SIGTERM or SIGINT by sending the ranks SIGCONT, then SIGTERM
// odls_base_sigkill_timeout seconds later, then SIGKILL as long after that: 1 s by default, too
// soon for the ranks to end their update and rank 0 to save. SIGUSR1 it passes on at once, and
// nothing more. (Slurm's scancel sends every task SIGTERM and gives it KillWait, 30 s by default.)
// mpirun exports its MCA settings to the ranks, so a rank can see whether the time-out was set.
const char* graceful_stop_warning() {
  if (!std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("OMPI_MCA_odls_base_sigkill_timeout")) return nullptr;
  return "Open MPI's mpirun gives the ranks 1 s by default (odls_base_sigkill_timeout) between the SIGTERM it "
         "passes on and SIGKILL, too little for an update to end and be saved; to stop this job gracefully send "
         "mpirun SIGUSR1";
}

} // namespace

nlohmann::json run_in_job(const Experiment& e, train::SessionOptions so) {
  dist::Communicator& world = dist::world();
  so.communicator = &world;
  // One GPU per rank: the ranks on one machine take its GPUs in turn (before anything uses one).
  if (world.size() > 1 && e.train.device == Device::cuda && cuda_device_count() > 0) cuda_use_device(dist::local_gpu());
  if (world.size() > 1 && world.is_root() && !so.quiet)
    std::fprintf(stderr, "data-parallel: %s, %d thread%s each\n", world.describe().c_str(), omp_get_max_threads(),
                 omp_get_max_threads() == 1 ? "" : "s");
  if (world.size() > 1 && world.is_root())
    if (const char* why = graceful_stop_warning()) std::fprintf(stderr, "note: %s\n", why); // even with --quiet
  install_stop_handlers();
  try {
    return train::run_experiment(e, so);
  } catch (const Stopped& stop) {
    // Every rank stopped after the same update (a stop is agreed), and each exits with 128 + signal;
    // rank 0 alone says where the checkpoint is.
    if (world.is_root()) throw;
    throw Stopped(stop.signal, "");
  } catch (const std::exception& err) {
    if (world.size() == 1) throw;
    const bool input = dynamic_cast<const InputError*>(&err) != nullptr;
    std::fprintf(stderr, "pillars: rank %d of %d: %s%s\n", world.rank(), world.size(),
                 input ? "" : "error: ", err.what());
    world.abort(input ? 2 : 1);
  }
  return {}; // not reached: abort() ends the process
}

} // namespace pillars::cli
