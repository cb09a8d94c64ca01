// Adam and AdamW, exactly as torch.optim.Adam / torch.optim.AdamW (torch 1.13, single-tensor path).
//
// For each parameter p with gradient g, at its t-th update (t = 1, 2, ...):
//
//   Adam  (L2):        g ← g + λ·p
//   AdamW (decoupled): p ← p · (1 − lr·λ)
//   m ← β₁·m + (1 − β₁)·g                       "<param>.exp_avg"
//   v ← β₂·v + (1 − β₂)·g²                      "<param>.exp_avg_sq"
//   v̂ ← max(v̂, v); use v̂ in place of v         "<param>.max_exp_avg_sq" (AMSGrad only)
//   step_size = lr / (1 − β₁ᵗ)
//   denom     = √v / √(1 − β₂ᵗ) + ε
//   p ← p − step_size · m / denom
//
// The bias corrections and step size are computed in double (as torch does in Python) and rounded
// to float once; the elementwise loop is kernels/cpu/adam.h.
//
// Note: fairseq's own `--optimizer adam` is NOT this: it decays weights decoupled (like AdamW) and
// adds ε to √v before the bias correction. Use Adam(…, decoupled = true) for the weight decay; the
// ε placement differs only when √v is comparable to ε.
#pragma once
#include "engine/optim/optimizer.h"

namespace pillars::optim {

struct AdamOptions {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0;
  bool decoupled = false; // true: AdamW
  bool amsgrad = false;
};

class Adam : public Optimizer {
 public:
  explicit Adam(const AdamOptions& options = {});
  Adam(double beta1, double beta2, double eps, double weight_decay, bool decoupled, bool amsgrad = false);

  void step(std::vector<ParamSlot>& params, float lr) override;
  const AdamOptions& options() const { return options_; }

 private:
  AdamOptions options_;
};

} // namespace pillars::optim
