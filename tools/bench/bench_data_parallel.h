// `pillars bench step --ranks N`: data-parallel training against one process on the same machine.
//
// One update of the `bench` encoder-decoder (pillars bench step's model; one batch = 4,000 target
// tokens), measured two ways in one run:
//
//   one process, N·T threads   accumulates N batches, then Adam            (the baseline)
//   N ranks × T threads        one batch each, gradients summed in buckets, then Adam on every rank
//                              (mpirun -np N, started by this command as a child job)
//
// and prints: the target tokens/s of each and their ratio (target: the ranks at least 0.9× the one
// process); the bandwidth the bucketed all-reduce reaches, next to one MPI_Allreduce of a large
// buffer (MPI's own bandwidth here); and the share of the communication hidden behind the backward:
// the update's time with the sums after the backward minus with them during it, over the time the
// sums take after the backward.
//
// Under a launcher (the child job, or `mpirun -np N pillars bench step`) every rank measures and
// rank 0 prints the figures, then one JSON line the parent reads.
#pragma once

namespace pillars::bench {

// threads: per rank (the baseline uses ranks · threads).
int bench_data_parallel(int ranks, int threads, int repeats);

} // namespace pillars::bench
