// See thread_times.h.
#include "base/thread_times.h"

#include <filesystem>
#include <fstream>
#include <system_error>

namespace pillars {

std::optional<ThreadTimes> process_thread_times() {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::directory_iterator tasks("/proc/self/task", ec);
  if (ec) return std::nullopt;
  ThreadTimes sum;
  bool any = false;
  for (const fs::directory_entry& task : tasks) {
    std::ifstream in(task.path() / "schedstat");
    double running_ns = 0, waiting_ns = 0;
    if (!(in >> running_ns >> waiting_ns)) continue; // the thread exited after the listing
    sum.running_seconds += running_ns * 1e-9;
    sum.waiting_seconds += waiting_ns * 1e-9;
    any = true;
  }
  if (!any) return std::nullopt;
  return sum;
}

std::optional<double> waiting_share(const std::optional<ThreadTimes>& before, const std::optional<ThreadTimes>& after) {
  if (!before || !after) return std::nullopt;
  const double running = after->running_seconds - before->running_seconds;
  const double waiting = after->waiting_seconds - before->waiting_seconds;
  if (running < 0 || waiting < 0 || running + waiting <= 0) return std::nullopt; // a thread exited between
  return waiting / (running + waiting);
}

} // namespace pillars
