// The training loop's progress: the pace of the updates since the last progress line (a window),
// the progress line itself on stderr, the one early estimate of how long the run will take, and
// durations as they print ("1h05m", "4m07s").
//
//   ProgressWindow window;              // restarted at an epoch's start and after every line
//   window.add(loss_sum, tokens);       // after every update
//   const WindowPace pace = window.pace();
//   print_progress(epoch, update, pace, lr, elapsed, eta);
//   window.restart();
#pragma once
#include <chrono>
#include <cstdint>
#include <string>

namespace pillars::train {

// A duration to the second: "1h05m" from an hour on, "4m07s" below.
std::string duration(double seconds);

// What a progress line says of the updates in its window.
struct WindowPace {
  double tokens_per_second = 0;  // target tokens
  double loss = 0;               // mean training loss per target token
  double seconds_per_update = 0; // 0 for an empty window
};

// The updates since the last progress line: their count, target tokens and summed loss, and the
// time since the window started.
class ProgressWindow {
 public:
  void restart();
  void add(double loss_sum, int64_t tokens);
  WindowPace pace() const;

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  double loss_ = 0;
  int64_t tokens_ = 0, updates_ = 0;
};

// The progress line on stderr: epoch, update, loss, learning rate, tokens/s, elapsed time, ETA.
void print_progress(int64_t epoch, int64_t update, const WindowPace& pace, float lr, double elapsed_seconds,
                    double eta_seconds);

// How long the run will take, said once, early: the pace of this session's updates 2..11 (the
// first compiles the step's graphs), times the updates still planned. The same pace is behind
// every progress line's ETA; this one comes before the first of them.
class FirstUpdatesTimer {
 public:
  // After each of the session's updates: its target tokens, the updates done, the updates planned.
  void after_update(int64_t tokens, int64_t updates, int64_t planned_updates);

 private:
  int64_t timed_updates_ = 0, timing_tokens_ = 0;
  std::chrono::steady_clock::time_point timing_start_;
};

} // namespace pillars::train
