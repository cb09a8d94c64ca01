// SGD with momentum, dampening, Nesterov and L2 weight decay, exactly as torch.optim.SGD (1.13).
//
// For each parameter p with gradient g:
//
//   d ← g + λ·p
//   with momentum μ > 0 ("<param>.momentum_buffer" = b):
//     first update:  b ← d                       (no dampening on the first step, as torch)
//     later updates: b ← μ·b + (1 − τ)·d          (τ = dampening)
//     Nesterov:      d ← d + μ·b
//     otherwise:     d ← b
//   p ← p − lr·d
//
// The elementwise loop is kernels/cpu/adam.h (sgd_update).
#pragma once
#include "engine/optim/optimizer.h"

namespace pillars::optim {

struct SgdOptions {
  double momentum = 0;
  double dampening = 0;
  double weight_decay = 0;
  bool nesterov = false; // requires momentum > 0 and dampening = 0 (as torch)
};

class SGD : public Optimizer {
 public:
  explicit SGD(const SgdOptions& options = {});
  SGD(double momentum, double dampening, double weight_decay, bool nesterov);

  void step(std::vector<ParamSlot>& params, float lr) override;
  const SgdOptions& options() const { return options_; }

 private:
  SgdOptions options_;
};

} // namespace pillars::optim
