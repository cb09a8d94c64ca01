// See run_job.h.
#include "tools/run_job.h"

#include <omp.h>

#include <cstdio>
#include <exception>

#include "base/error.h"
#include "base/run_guard.h"
#include "engine/dist/communicator.h"
#include "engine/dist/device_sums.h"
#include "kernels/cuda/device.h"

namespace pillars::cli {

nlohmann::json run_in_job(const Experiment& e, train::SessionOptions so) {
  dist::Communicator& world = dist::world();
  so.communicator = &world;
  // One GPU per rank: the ranks on one machine take its GPUs in turn (before anything uses one).
  if (world.size() > 1 && e.train.device == Device::cuda && cuda_device_count() > 0) cuda_use_device(dist::local_gpu());
  if (world.size() > 1 && world.is_root() && !so.quiet)
    std::fprintf(stderr, "data-parallel: %s, %d thread%s each\n", world.describe().c_str(), omp_get_max_threads(),
                 omp_get_max_threads() == 1 ? "" : "s");
  install_stop_handlers();
  try {
    return train::run_experiment(e, so);
  } catch (const Stopped&) {
    throw; // every rank stopped at the same update (a stop is agreed), and each exits normally
  } catch (const std::exception& err) {
    if (world.size() == 1) throw;
    const bool input = dynamic_cast<const InputError*>(&err) != nullptr;
    std::fprintf(stderr, "pillars: rank %d of %d: %s%s\n", world.rank(), world.size(), input ? "" : "error: ", err.what());
    world.abort(input ? 2 : 1);
  }
  return {}; // not reached: abort() ends the process
}

} // namespace pillars::cli
