// The one list of passes: which passes a step runs, and in what order (steps/pass_list.cpp).
//
//   pillars graph --passes                 prints this list
//   pillars graph EXP.json --after gct     prints an experiment's training graph after a pass
#pragma once
#include <span>

#include "steps/extension.h"
#include "steps/pass.h"

namespace pillars::train {

struct PassInfo {
  const char* name;
  const char* when; // the setting that turns it on
  const char* what; // what it adds to or removes from the graph
};

// Every pass a step may run, in the order it runs them.
std::span<const PassInfo> pass_list();
// The rewrites of a whole model (its config and parameters), after which every step's graph is
// built anew from the model builder: V2S's head removal.
std::span<const PassInfo> model_pass_list();

// The passes of one step (a training step when `train`, else an evaluation step: no autodiff):
// the entries of pass_list() that apply. The method's passes (head gates, GCT, the baselines'
// losses, the V2S vote) come from the parts of `extension` (may be null) that name them
// (GraphExtension::pass_name) or gate heads; a part whose name is not in the list is an error.
PassList step_passes(bool train, const PassSettings& settings, GraphExtension* extension);

} // namespace pillars::train
