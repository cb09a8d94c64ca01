// MPI's world as a Communicator (engine/dist/mpi_world.cpp), or, in a build without MPI
// (engine/dist/mpi_world_none.cpp), the error that says so. Called by world() only, and only when a
// launcher started the process.
#pragma once
#include "engine/dist/communicator.h"

namespace pillars::dist {

// Initializes MPI (once; finalized at exit) and returns the world communicator. A build without
// MPI throws pillars::InputError when the launcher started more than one process, and otherwise
// returns single_process().
Communicator& mpi_world();

} // namespace pillars::dist
