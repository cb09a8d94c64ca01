// Learning-rate schedules: lr(step) for the update number step = 1, 2, 3, ... (1 = the first
// update). A schedule is a pure function of the step, so its only state is the step itself, which
// the trainer saves. Values are computed in double and returned as float.
//
// The fairseq ports (InverseSqrt, Cosine) reproduce the learning rates fairseq's trainer uses:
// fairseq sets lr = f(0) before the first update and f(n) after the n-th, so update `step` runs
// with f(step − 1), where f(n) is fairseq's step_update(num_updates = n):
//
//   InverseSqrt (fairseq inverse_sqrt; W = warmup_steps ≥ 1, lr₀ = warmup_init_lr):
//     f(n) = lr₀ + n · (peak − lr₀) / W           n < W     (linear warm-up)
//     f(n) = peak · √W / √n                        n ≥ W
//
//   Cosine (fairseq cosine, SGDR with warm-up; W = warmup_steps, P = period, M = t_mult ≥ 1,
//   S = lr_shrink):
//     f(n) = lr₀ + n · (max − lr₀) / W             n < W     (lr₀ defaults to min_lr)
//     otherwise, with c = n − W updates since the warm-up, find the restart i ≥ 0 with
//       M = 1:  i = ⌊c / P⌋,                    T_i = P,        t = c − i·P
//       M > 1:  i = ⌊log_M(1 + c·(M − 1)/P)⌋,   T_i = Mⁱ·P,     t = c − P·(Mⁱ − 1)/(M − 1)
//     f(n) = Sⁱ·min + ½·(Sⁱ·max − Sⁱ·min)·(1 + cos(π·t / T_i))
//     (Same arithmetic as fairseq, except that when the logarithm lands a hair below a restart
//     boundary, i is corrected so that 0 ≤ t < T_i; fairseq would then end the previous cycle
//     at t = T_i, i.e. at min_lr, for that one update.) With W = 0, S = 1 and integer M this is
//     torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(T_0 = P, T_mult = M, eta_min = min).
//     Note fairseq's --lr-shrink defaults to 0.1; here lr_shrink defaults to 1 (no shrink).
//
// Our own definitions (not ports), in terms of step directly:
//
//   Linear (W = warmup_steps ≥ 0, T = total_steps > W):
//     lr = peak · step / W                                  step ≤ W
//     lr = end + (peak − end) · (T − step) / (T − W)        W < step < T
//     lr = end                                              step ≥ T
//
//   Constant:  lr = value
#pragma once
#include <cstdint>

namespace pillars::optim {

class Schedule {
 public:
  virtual ~Schedule();
  virtual float lr(int64_t step) const = 0; // step ≥ 1; throws pillars::Error for step < 1
};

class Constant : public Schedule {
 public:
  explicit Constant(double value);
  float lr(int64_t step) const override;

 private:
  double value_;
};

class InverseSqrt : public Schedule {
 public:
  InverseSqrt(double peak_lr, int64_t warmup_steps, double warmup_init_lr = 0);
  float lr(int64_t step) const override;

 private:
  double warmup_init_lr_, lr_step_, decay_factor_;
  int64_t warmup_;
};

struct CosineOptions {
  double max_lr = 0;
  double min_lr = 0;
  int64_t warmup_steps = 0;
  double warmup_init_lr = -1; // < 0: min_lr (fairseq's default)
  double period = 0;          // P > 0: updates in the first cycle after the warm-up
  double t_mult = 1;          // M ≥ 1: each cycle is M times longer than the previous one
  double lr_shrink = 1;       // S: min and max are multiplied by S at every restart
};

class Cosine : public Schedule {
 public:
  explicit Cosine(const CosineOptions& options);
  float lr(int64_t step) const override;

 private:
  double fairseq_lr(int64_t num_updates) const;
  CosineOptions o_;
  double lr_step_;
};

class Linear : public Schedule {
 public:
  Linear(double peak_lr, int64_t warmup_steps, int64_t total_steps, double end_lr = 0);
  float lr(int64_t step) const override;

 private:
  double peak_, end_;
  int64_t warmup_, total_;
};

} // namespace pillars::optim
