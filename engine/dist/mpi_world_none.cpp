// mpi_world() in a build without MPI (CMake did not find it): one process is fine, more is an
// error that says how to get MPI; see mpi_world.h.
#include "engine/dist/mpi_world.h"

#include <cstdlib>
#include <string>

#include "base/error.h"

namespace pillars::dist {

Communicator& mpi_world() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}) {
    const char* n = std::getenv(name);
    if (n && std::string(n) != "1")
      throw InputError(str_cat("this pillars was built without MPI, but a launcher started ", n, " processes ($", name,
                               "): install OpenMPI (apt-get install openmpi-bin libopenmpi-dev, "
                               "or tools/install-deps.sh) and rebuild"));
  }
  return single_process();
}

} // namespace pillars::dist
