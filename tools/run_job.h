// What `pillars train` and `pillars prune` share: running an experiment in this process's job.
#pragma once
#include <nlohmann/json.hpp>

#include "train/experiment.h"
#include "train/session.h"

namespace pillars::cli {

// Runs the experiment (train::run_experiment) in the job this process belongs to: under mpirun or
// srun, a data-parallel job of several ranks (MPI initialized here; engine/dist/communicator.h);
// otherwise one process, and MPI never touched. Installs the stop handlers first (SIGTERM, SIGINT,
// SIGUSR1, SIGHUP: finish the update, save, exit 128 + signal; SIGPIPE and SIGXFSZ ignored). In a job, an error on one rank ends the
// whole job (it would otherwise leave the others waiting in their next collective), with the exit
// status the error has in one process: 2 for bad input, 1 otherwise. Under Open MPI's mpirun, rank 0
// notes how to stop the job gracefully unless mpirun was given the time to let it (run_job.cpp).
nlohmann::json run_in_job(const Experiment& e, train::SessionOptions so);

} // namespace pillars::cli
