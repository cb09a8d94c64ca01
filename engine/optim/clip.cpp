// Gradient clipping by global norm: see clip.h.
#include "engine/optim/clip.h"

#include <cmath>

#include "base/error.h"
#include "engine/optim/loops.h"

namespace pillars::optim {

double grad_norm(const std::vector<ParamSlot>& params) {
  double sum = 0;
  for (const ParamSlot& slot : params) {
    if (!slot.grad.defined()) continue;
    sum += sum_of_squares(slot.grad.device(), slot.grad.numel(), slot.grad.data<float>());
  }
  return std::sqrt(sum);
}

double clip_grad_norm(std::vector<ParamSlot>& params, float max_norm) {
  PILLARS_CHECK(max_norm > 0, "clip_grad_norm: max_norm must be > 0, got ", max_norm);
  const double norm = grad_norm(params);
  if (!std::isfinite(norm)) return norm;
  const double coef = double(max_norm) / (norm + 1e-6);
  if (coef < 1) {
    for (ParamSlot& slot : params)
      if (slot.grad.defined()) scale(slot.grad.device(), slot.grad.numel(), slot.grad.data<float>(), float(coef));
  }
  return norm;
}

} // namespace pillars::optim
