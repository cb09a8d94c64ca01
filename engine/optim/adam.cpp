// Adam / AdamW: see adam.h for the update rule.
#include "engine/optim/adam.h"

#include "engine/optim/loops.h"

#include <cmath>

#include "base/error.h"
#include "kernels/cpu/adam.h"

namespace pillars::optim {
namespace {

std::vector<std::string> buffer_names(bool amsgrad) {
  if (amsgrad) return {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
  return {"exp_avg", "exp_avg_sq"};
}

void check_options(const AdamOptions& o) {
  if (!(o.beta1 >= 0 && o.beta1 < 1) || !(o.beta2 >= 0 && o.beta2 < 1))
    throw InputError(str_cat("Adam: betas must lie in [0, 1), got (", o.beta1, ", ", o.beta2, ")"));
  if (!(o.eps >= 0)) throw InputError(str_cat("Adam: eps must be >= 0, got ", o.eps));
  if (!(o.weight_decay >= 0)) throw InputError(str_cat("Adam: weight_decay must be >= 0, got ", o.weight_decay));
}

// The kernel's arguments for update t of n elements: the scalars computed in double as torch
// does, then rounded to float.
cpu::AdamArgs kernel_args(const AdamOptions& o, double lr, int64_t t, int64_t n) {
  const double bias_correction1 = 1 - std::pow(o.beta1, double(t));
  const double bias_correction2 = 1 - std::pow(o.beta2, double(t));
  return {.n = n,
          .beta1 = float(o.beta1),
          .one_minus_beta1 = float(1 - o.beta1),
          .beta2 = float(o.beta2),
          .one_minus_beta2 = float(1 - o.beta2),
          .l2 = o.decoupled ? 0.0f : float(o.weight_decay),
          .decay = o.decoupled ? float(1 - lr * o.weight_decay) : 1.0f,
          .neg_step_size = float(-(lr / bias_correction1)),
          .bias_correction2_sqrt = float(std::sqrt(bias_correction2)),
          .eps = float(o.eps)};
}

} // namespace

Adam::Adam(const AdamOptions& options) : Optimizer(buffer_names(options.amsgrad)), options_(options) {
  check_options(options_);
}

Adam::Adam(double beta1, double beta2, double eps, double weight_decay, bool decoupled, bool amsgrad)
    : Adam(AdamOptions{beta1, beta2, eps, weight_decay, decoupled, amsgrad}) {}

void Adam::step(std::vector<ParamSlot>& params, float lr) {
  for (ParamSlot& slot : params) {
    if (!slot.grad.defined()) continue;
    ParamState& s = state_for(slot);
    s.step += 1;
    float* v_max = options_.amsgrad ? s.buffers[2].data<float>() : nullptr;
    adam_update(slot.value.device(), kernel_args(options_, lr, s.step, slot.value.numel()), slot.value.data<float>(),
                slot.grad.data<float>(), s.buffers[0].data<float>(), s.buffers[1].data<float>(), v_max);
  }
  count_step();
}

} // namespace pillars::optim
