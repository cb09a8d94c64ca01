// Learning-rate schedules: see schedule.h for the formulas.
#include "engine/optim/schedule.h"

#include <cmath>
#include <numbers>

#include "base/error.h"

namespace pillars::optim {
namespace {

void check_step(int64_t step) { PILLARS_CHECK(step >= 1, "learning-rate schedule: steps count from 1, got ", step); }

} // namespace

Schedule::~Schedule() = default;

// ---- Constant ------------------------------------------------------------------------------

Constant::Constant(double value) : value_(value) {}

float Constant::lr(int64_t step) const {
  check_step(step);
  return float(value_);
}

// ---- InverseSqrt ---------------------------------------------------------------------------

InverseSqrt::InverseSqrt(double peak_lr, int64_t warmup_steps, double warmup_init_lr)
    : warmup_init_lr_(warmup_init_lr), warmup_(warmup_steps) {
  if (warmup_steps < 1)
    throw InputError(str_cat("inverse_sqrt schedule: warmup_steps must be >= 1, got ", warmup_steps));
  // fairseq's constants, computed the way fairseq computes them.
  lr_step_ = (peak_lr - warmup_init_lr) / double(warmup_steps);
  decay_factor_ = peak_lr * std::pow(double(warmup_steps), 0.5);
}

float InverseSqrt::lr(int64_t step) const {
  check_step(step);
  const int64_t n = step - 1; // fairseq's num_updates when this update runs
  if (n < warmup_) return float(warmup_init_lr_ + double(n) * lr_step_);
  return float(decay_factor_ * std::pow(double(n), -0.5));
}

// ---- Cosine --------------------------------------------------------------------------------

Cosine::Cosine(const CosineOptions& options) : o_(options) {
  if (!(o_.period > 0)) throw InputError(str_cat("cosine schedule: period must be > 0, got ", o_.period));
  if (!(o_.t_mult >= 1)) throw InputError(str_cat("cosine schedule: t_mult must be >= 1, got ", o_.t_mult));
  if (!(o_.max_lr >= o_.min_lr))
    throw InputError(str_cat("cosine schedule: max_lr (", o_.max_lr, ") must be >= min_lr (", o_.min_lr, ")"));
  if (o_.warmup_steps < 0)
    throw InputError(str_cat("cosine schedule: warmup_steps must be >= 0, got ", o_.warmup_steps));
  if (!(o_.lr_shrink >= 0)) throw InputError(str_cat("cosine schedule: lr_shrink must be >= 0, got ", o_.lr_shrink));
  if (o_.warmup_init_lr < 0) o_.warmup_init_lr = o_.min_lr;
  lr_step_ = o_.warmup_steps > 0 ? (o_.max_lr - o_.warmup_init_lr) / double(o_.warmup_steps) : 1.0;
}

float Cosine::lr(int64_t step) const {
  check_step(step);
  return float(fairseq_lr(step - 1));
}

double Cosine::fairseq_lr(int64_t num_updates) const {
  if (num_updates < o_.warmup_steps) return o_.warmup_init_lr + double(num_updates) * lr_step_;

  const double c = double(num_updates - o_.warmup_steps); // updates since the warm-up
  const double P = o_.period, M = o_.t_mult;
  double i, t_i, t; // restart, its length, position in it
  if (M != 1) {
    // Cycle i starts at P·(Mⁱ − 1)/(M − 1); fairseq inverts that with a logarithm.
    const auto cycle = [&](double k, double& length, double& position) {
      length = std::pow(M, k) * P;
      position = c - (1 - std::pow(M, k)) / (1 - M) * P;
    };
    i = std::floor(std::log(1 - c / P * (1 - M)) / std::log(M));
    cycle(i, t_i, t);
    while (t < 0 && i > 0) cycle(--i, t_i, t); // the logarithm rounded up past a boundary
    while (t >= t_i) cycle(++i, t_i, t);       // ... or down below one
  } else {
    i = std::floor(c / P);
    t_i = P;
    t = c - P * i;
  }
  const double shrink = std::pow(o_.lr_shrink, i);
  const double lo = o_.min_lr * shrink, hi = o_.max_lr * shrink;
  return lo + 0.5 * (hi - lo) * (1 + std::cos(std::numbers::pi * t / t_i));
}

// ---- Linear --------------------------------------------------------------------------------

Linear::Linear(double peak_lr, int64_t warmup_steps, int64_t total_steps, double end_lr)
    : peak_(peak_lr), end_(end_lr), warmup_(warmup_steps), total_(total_steps) {
  if (warmup_steps < 0 || total_steps <= warmup_steps)
    throw InputError(str_cat("linear schedule: need 0 <= warmup_steps < total_steps, got warmup_steps = ", warmup_steps,
                             ", total_steps = ", total_steps));
}

float Linear::lr(int64_t step) const {
  check_step(step);
  if (step <= warmup_) return float(peak_ * double(step) / double(warmup_));
  if (step >= total_) return float(end_);
  return float(end_ + (peak_ - end_) * double(total_ - step) / double(total_ - warmup_));
}

} // namespace pillars::optim
