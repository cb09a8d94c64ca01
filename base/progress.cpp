// See progress.h.
#include "base/progress.h"

#include <unistd.h>

#include <utility>

namespace pillars {

ProgressLine::ProgressLine(std::FILE* out, std::string verb, std::string noun,
                           std::chrono::steady_clock::duration interval)
    : out_(out),
      verb_(std::move(verb)),
      noun_(std::move(noun)),
      interval_(interval),
      terminal_(out != nullptr && isatty(fileno(out)) == 1),
      last_line_(std::chrono::steady_clock::now()) {}

void ProgressLine::update(int64_t done, int64_t total) {
  if (out_ == nullptr) return;
  const auto counts = [&] { return std::to_string(done) + "/" + std::to_string(total) + " " + noun_; };
  if (terminal_) {
    std::fprintf(out_, "\r%s %s", verb_.c_str(), counts().c_str());
    std::fflush(out_);
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  if (done >= total || now - last_line_ < interval_) return;
  std::fprintf(out_, "%s %s\n", verb_.c_str(), counts().c_str());
  last_line_ = now;
}

void ProgressLine::finish(int64_t total, double seconds) {
  if (out_ == nullptr) return;
  const double rate = seconds > 0 ? static_cast<double>(total) / seconds : 0;
  std::fprintf(out_, "%s%s %lld/%lld %s (%.1f %s/s)\n", terminal_ ? "\r" : "", verb_.c_str(),
               static_cast<long long>(total), static_cast<long long>(total), noun_.c_str(), rate, noun_.c_str());
}

} // namespace pillars
