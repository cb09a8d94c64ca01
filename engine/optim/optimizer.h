// Optimizer: the interface every optimizer implements, and the per-parameter state they share.
//
// One training update is
//
//   θ_{t} = U(θ_{t−1}, ∇L(θ_{t−1}), s_{t−1}, lr_t)       s = the optimizer's state
//
// where U is Adam's or SGD's rule (adam.h, sgd.h) and lr_t comes from a Schedule (schedule.h).
// The trainer hands the optimizer ParamSlots (name, value, gradient) and the learning rate; the
// optimizer updates `value` in place.
//
// State. Each parameter, found by name, owns
//   "<param>.step"                       its update count t (i64, 1 element), and
//   "<param>.<buffer>"                   one f32 tensor per buffer, shaped like the parameter
//                                        (Adam: exp_avg, exp_avg_sq [, max_exp_avg_sq];
//                                         SGD with momentum: momentum_buffer),
// and the optimizer owns "step", the number of step() calls (i64, 1 element). A parameter's
// state is created (zeros, t = 0) the first time it is stepped, so parameters may join later;
// a parameter's t counts only its own updates, as in torch (per-parameter bias correction).
// After a parameter's first update, step() allocates nothing.
//
// state() lists every entry by name (in a fixed order: "step", then each parameter by name) so a
// checkpoint can save them with safetensors; load_state() replaces the whole state from such a
// list and restores it exactly (bit for bit): continuing from a loaded state gives the
// uninterrupted trajectory. Hyperparameters (betas, momentum, ...) are configuration, not state.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/tensor.h"

namespace pillars::optim {

// One parameter as the optimizer sees it: f32 CPU tensors of equal shape. `value` is updated in
// place (it shares storage with the model's parameter). A slot with an undefined `grad` is skipped
// (the parameter got no gradient this step), and its state is left untouched.
struct ParamSlot {
  std::string name;
  Tensor value;
  Tensor grad;
};

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

class Optimizer {
 public:
  virtual ~Optimizer();

  // Updates every slot's value from its gradient with learning rate lr.
  virtual void step(std::vector<ParamSlot>& params, float lr) = 0;

  // Every piece of state as named tensors (see above). The per-parameter buffers are views of the
  // live state, not copies: save them before the next step().
  virtual NamedTensors state() const;
  // Replaces the state by copies of `entries`. Throws pillars::InputError naming the entry that is
  // missing, unexpected, or of the wrong dtype/shape; on error the current state is unchanged.
  // (A buffer whose shape differs from its parameter's is reported by the next step().)
  virtual void load_state(const NamedTensors& entries);

  int64_t step_count() const { return steps_; }

  // Drops a parameter's state (e.g. after pruning changed its shape); its next update starts fresh.
  void forget(const std::string& param) { params_.erase(param); }

 protected:
  struct ParamState {
    int64_t step = 0;            // updates this parameter has received
    std::vector<Tensor> buffers; // buffers[k] is "<param>.<buffer_names[k]>"
  };

  // `buffer_names`: the per-parameter buffers this optimizer keeps, e.g. {"exp_avg", "exp_avg_sq"}.
  explicit Optimizer(std::vector<std::string> buffer_names);

  // The slot's state, created (zero buffers, step 0) on first sight. Checks that the slot is a pair
  // of f32 CPU tensors of equal shape (pillars::Error otherwise) and that existing state has the
  // parameter's shape (pillars::InputError otherwise: a loaded state that does not fit the model).
  ParamState& state_for(const ParamSlot& slot);

  // Called once at the end of each step().
  void count_step() { ++steps_; }

 private:
  std::vector<std::string> buffer_names_;
  std::map<std::string, ParamState> params_; // by parameter name
  int64_t steps_ = 0;
};

} // namespace pillars::optim
