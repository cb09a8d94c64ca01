// The rate of a growing count over a trailing window of time, for an ETA that follows the
// machine's load: a rate measured since the start keeps every slow hour (another job sharing the
// cores, an evaluation that makes no updates) long after it has passed.
#pragma once
#include <deque>

namespace pillars::study {

class TrailingRate {
 public:
  explicit TrailingRate(double window_seconds) : window_(window_seconds) {}

  // The count's value at time t (seconds; t does not decrease between calls).
  void add(double t, double count) {
    samples_.push_back({t, count});
    // The window starts at the newest sample at least window_ old (or the oldest there is).
    while (samples_.size() >= 2 && samples_[1].t <= t - window_) samples_.pop_front();
  }

  // Growth per second between the window's first and last samples; 0 before two samples.
  double per_second() const {
    const double dt = seconds();
    return dt > 0 ? (samples_.back().count - samples_.front().count) / dt : 0;
  }

  // The time the rate is measured over.
  double seconds() const { return samples_.empty() ? 0 : samples_.back().t - samples_.front().t; }

 private:
  struct Sample {
    double t, count;
  };
  std::deque<Sample> samples_;
  double window_;
};

} // namespace pillars::study
