// How long this process's threads have run on a core, and how long they were ready to run but
// waited for one (another process had it): Linux's per-thread scheduler statistics,
// /proc/self/task/<tid>/schedstat ("on-cpu ns, run-queue wait ns, timeslices").
//
//   const auto before = process_thread_times();
//   ... decode ...
//   const std::optional<double> share = waiting_share(before, process_thread_times());
//
// A speed measured while the threads waited is the machine's load as much as the code's. A
// thread that sleeps (an idle OpenMP worker, a read from disk) neither runs nor waits, so the
// share stays near 0 on a quiet machine whatever the code's parallel efficiency, and it grows
// with the time another process held the cores.
#pragma once
#include <optional>

namespace pillars {

// Above this waiting share a measured speed is the load's as much as the code's: alone on a
// machine, threads wait well under 1 % of the time; at nice 19 beside a build, most of it.
constexpr double kLoadedWaitingShare = 0.05;

struct ThreadTimes {
  double running_seconds = 0; // on a core, summed over the process's threads
  double waiting_seconds = 0; // runnable, waiting for a core
};

// Summed over the threads alive now; nullopt where the kernel keeps no such record (not Linux, no
// schedstat files). Threads that exit between two readings take their times with them.
std::optional<ThreadTimes> process_thread_times();

// waiting / (running + waiting) between two readings; nullopt where either is missing or no
// thread ran or waited between them.
std::optional<double> waiting_share(const std::optional<ThreadTimes>& before, const std::optional<ThreadTimes>& after);

} // namespace pillars
