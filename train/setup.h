// From an experiment file to the objects a run needs: the model config, the optimizer and the
// learning-rate schedule. Each function reads one section of the Experiment (train/experiment.h).
#pragma once
#include <memory>

#include "engine/optim/optimizer.h"
#include "engine/optim/schedule.h"
#include "models/transformer.h"
#include "train/experiment.h"

namespace pillars::train {

// The named config of `model.config` with every override of the `model` section applied, and the
// vocabulary size of the run's dictionary. Throws InputError naming the experiment field.
TransformerConfig model_config(const Experiment& e, int64_t vocab);

std::unique_ptr<optim::Optimizer> make_optimizer(const OptimSettings& o);
// total_updates: the run's planned number of updates (cosine and linear schedules need it).
std::unique_ptr<optim::Schedule> make_schedule(const OptimSettings& o, int64_t total_updates);

} // namespace pillars::train
