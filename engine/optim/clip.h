// Gradient clipping by global L2 norm, as torch.nn.utils.clip_grad_norm_ (norm_type = 2).
//
//   ‖g‖ = √(Σ_params Σ_elements g²)          (accumulated in double)
//   c   = max_norm / (‖g‖ + 1e-6)
//   g  ← c·g   for every gradient, when c < 1 (i.e. ‖g‖ + 1e-6 > max_norm)
//
// torch multiplies by min(c, 1) unconditionally; skipping the multiply when c ≥ 1 gives the same
// values. When ‖g‖ is not finite (inf/NaN gradients) nothing is scaled and the norm is returned
// as is: the caller (the trainer) decides to skip the step. Slots with an undefined grad are
// ignored, as torch ignores parameters whose .grad is None.
#pragma once
#include <vector>

#include "engine/optim/optimizer.h"

namespace pillars::optim {

// Returns the total norm before clipping.
double clip_grad_norm(std::vector<ParamSlot>& params, float max_norm);

// The total L2 norm of the gradients, without clipping.
double grad_norm(const std::vector<ParamSlot>& params);

} // namespace pillars::optim
