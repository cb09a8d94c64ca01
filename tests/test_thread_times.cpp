// base/thread_times.h: the time the process's threads ran and waited for a core, read from Linux's
// per-thread scheduler statistics, and the share of it spent waiting.
#include <doctest/doctest.h>

#include "skip.h"

#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "base/thread_times.h"

using pillars::process_thread_times;
using pillars::ThreadTimes;
using pillars::waiting_share;

namespace {

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Moves this thread to `cpu` and computes there until it has had `seconds` of it; false where the
// thread could not be moved.
bool burn_on(int cpu, double seconds) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0) return false;
  const double start = thread_cpu_seconds();
  volatile double sink = 0;
  while (thread_cpu_seconds() - start < seconds)
    for (int i = 0; i < 10000; ++i) sink = sink + 1e-9 * i;
  return true;
}

} // namespace

TEST_CASE("thread times: the share of waiting from two readings") {
  const ThreadTimes before{1.0, 0.5}, after{4.0, 1.5}; // ran 3 s more, waited 1 s more
  CHECK(waiting_share(before, after).value() == doctest::Approx(0.25));
  CHECK_FALSE(waiting_share(std::nullopt, after).has_value());
  CHECK_FALSE(waiting_share(before, std::nullopt).has_value());
  CHECK_FALSE(waiting_share(before, before).has_value());                              // nothing ran or waited
  CHECK_FALSE(waiting_share(after, before).has_value());                               // a thread exited in between
  CHECK(waiting_share(before, ThreadTimes{2.0, 0.5}).value() == doctest::Approx(0.0)); // ran, never waited
}

TEST_CASE("thread times: two threads on one core wait for each other about half the time") {
  const auto before = process_thread_times();
  if (!before) {
    SKIP_TEST("this kernel keeps no per-thread scheduler statistics (/proc/self/task/*/schedstat)");
    return;
  }
  cpu_set_t mine;
  REQUIRE(sched_getaffinity(0, sizeof mine, &mine) == 0);
  int cpu = 0;
  while (!CPU_ISSET(cpu, &mine)) ++cpu;
  // Each thread needs 0.2 s of the one core, so each waits while the other runs: whatever else the
  // machine runs on that core only adds waiting. A thread that has exited takes its times with it,
  // so both sleep after their work until the second reading.
  constexpr double kEach = 0.2;
  std::atomic<int> done{0};
  std::atomic<bool> read{false}, pinned{true};
  auto work = [&] {
    if (!burn_on(cpu, kEach)) pinned = false;
    ++done;
    while (!read.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  };
  std::thread a(work), b(work);
  while (done.load() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const auto after = process_thread_times();
  read = true;
  a.join(), b.join();
  REQUIRE(pinned.load());
  REQUIRE(after.has_value());
  CHECK(after->running_seconds - before->running_seconds >= 2 * kEach * 0.95);
  const std::optional<double> share = waiting_share(before, after);
  REQUIRE(share.has_value());
  CHECK(*share >= 0.3); // about 1/2: while one thread runs, the other waits
}
