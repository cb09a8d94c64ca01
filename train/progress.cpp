// The training loop's progress lines and its early estimate of the run's length; see progress.h.
#include "train/progress.h"

#include <algorithm>
#include <cstdio>

namespace pillars::train {

using Clock = std::chrono::steady_clock;

std::string duration(double seconds) {
  const int64_t s = static_cast<int64_t>(seconds + 0.5);
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60));
  else
    std::snprintf(buf, sizeof buf, "%lldm%02llds", static_cast<long long>(s / 60), static_cast<long long>(s % 60));
  return buf;
}

void ProgressWindow::restart() {
  start_ = Clock::now();
  tokens_ = 0, loss_ = 0, updates_ = 0;
}

void ProgressWindow::add(double loss_sum, int64_t tokens) { loss_ += loss_sum, tokens_ += tokens, ++updates_; }

WindowPace ProgressWindow::pace() const {
  const double window = std::chrono::duration<double>(Clock::now() - start_).count();
  WindowPace p;
  p.tokens_per_second = window > 0 ? static_cast<double>(tokens_) / window : 0;
  p.loss = loss_ / static_cast<double>(std::max<int64_t>(tokens_, 1));
  p.seconds_per_update = updates_ > 0 ? window / static_cast<double>(updates_) : 0;
  return p;
}

void print_progress(int64_t epoch, int64_t update, const WindowPace& pace, float lr, double elapsed_seconds,
                    double eta_seconds) {
  std::fprintf(stderr, "epoch %3lld | update %6lld | loss %7.4f | lr %.3e | %7.0f tok/s | %s elapsed | ETA %s\n",
               static_cast<long long>(epoch), static_cast<long long>(update), pace.loss, lr, pace.tokens_per_second,
               duration(elapsed_seconds).c_str(), duration(eta_seconds).c_str());
}

void FirstUpdatesTimer::after_update(int64_t tokens, int64_t updates, int64_t planned_updates) {
  constexpr int64_t kTimed = 10;
  if (timed_updates_ > kTimed) return;
  if (timed_updates_++ == 0) { // the end of the session's first update: the clock starts
    timing_start_ = Clock::now();
    return;
  }
  timing_tokens_ += tokens;
  if (timed_updates_ <= kTimed) return;
  const double seconds = std::chrono::duration<double>(Clock::now() - timing_start_).count();
  const double per_update = seconds / static_cast<double>(kTimed);
  const int64_t left = std::max<int64_t>(0, planned_updates - updates);
  std::fprintf(stderr,
               "timing: %lld updates at %.0f target tokens/s (%.2f s each): the %lld updates left of the %lld planned "
               "take about %s, plus validation\n",
               static_cast<long long>(kTimed), static_cast<double>(timing_tokens_) / std::max(seconds, 1e-9),
               per_update, static_cast<long long>(left), static_cast<long long>(planned_updates),
               duration(per_update * static_cast<double>(left)).c_str());
}

} // namespace pillars::train
