// SGD: see sgd.h for the update rule.
#include "engine/optim/sgd.h"

#include "engine/optim/loops.h"

#include "base/error.h"
#include "kernels/cpu/adam.h"

namespace pillars::optim {
namespace {

std::vector<std::string> buffer_names(const SgdOptions& o) {
  if (o.momentum != 0) return {"momentum_buffer"};
  return {};
}

void check_options(const SgdOptions& o) {
  if (!(o.momentum >= 0)) throw InputError(str_cat("SGD: momentum must be >= 0, got ", o.momentum));
  if (!(o.weight_decay >= 0)) throw InputError(str_cat("SGD: weight_decay must be >= 0, got ", o.weight_decay));
  if (o.nesterov && (o.momentum <= 0 || o.dampening != 0))
    throw InputError("SGD: Nesterov momentum requires a momentum > 0 and zero dampening");
}

} // namespace

SGD::SGD(const SgdOptions& options) : Optimizer(buffer_names(options)), options_(options) { check_options(options_); }

SGD::SGD(double momentum, double dampening, double weight_decay, bool nesterov)
    : SGD(SgdOptions{momentum, dampening, weight_decay, nesterov}) {}

void SGD::step(std::vector<ParamSlot>& params, float lr) {
  cpu::SgdArgs c;
  c.weight_decay = float(options_.weight_decay);
  c.momentum = float(options_.momentum);
  c.one_minus_dampening = float(1 - options_.dampening);
  c.neg_lr = float(-double(lr));
  c.nesterov = options_.nesterov;
  const bool has_buffer = options_.momentum != 0;

  for (ParamSlot& slot : params) {
    if (!slot.grad.defined()) continue;
    ParamState& s = state_for(slot);
    c.first = s.step == 0;
    s.step += 1;
    c.n = slot.value.numel();
    sgd_update(slot.value.device(), c, slot.value.data<float>(), slot.grad.data<float>(),
               has_buffer ? s.buffers[0].data<float>() : nullptr);
  }
  count_step();
}

} // namespace pillars::optim
