// See method.h.
#include "ght/method.h"

#include "base/error.h"
#include "engine/ops.h"
#include "ght/baselines.h"
#include "ght/gct_pass.h"

namespace pillars::ght {

void CompositeExtension::configure(GraphOptions& options, bool train) const {
  for (const auto& p : parts_) p->configure(options, train);
}

std::vector<train::GraphExtension*> CompositeExtension::parts() {
  std::vector<train::GraphExtension*> all;
  for (const auto& p : parts_)
    for (train::GraphExtension* q : p->parts()) all.push_back(q);
  return all;
}

void CompositeExtension::bind(Executor& ex, const Graph& g, const train::StepInfo& info) {
  for (const auto& p : parts_) p->bind(ex, g, info);
}

void CompositeExtension::after_run(const Executor& ex, const Graph& g, const train::StepInfo& info) {
  for (const auto& p : parts_) p->after_run(ex, g, info);
}

void CompositeExtension::log_terms(nlohmann::json& line) {
  for (const auto& p : parts_) p->log_terms(line);
}

std::shared_ptr<CompositeExtension> head_extension(const HeadsSettings& h, const PruneSettings& prune, uint64_t seed,
                                                   const TransformerConfig& cfg, ParamStore& params, bool finetune) {
  auto ext = std::make_shared<CompositeExtension>();
  const bool regularise = !finetune || prune.finetune_regularizer;
  if (regularise && h.regularizer == Regularizer::gct) {
    for (const std::string& module : attention_modules(cfg))
      if (cfg.heads_of(module) < h.groups)
        throw InputError(str_cat("\"heads.groups\" (", h.groups, ") exceeds the ", cfg.heads_of(module), " heads of ", module));
    GctSettings s;
    s.feature_map = h.feature_map;
    s.groups = static_cast<int>(h.groups);
    s.alpha = static_cast<float>(h.alpha), s.beta = static_cast<float>(h.beta);
    s.classification = h.gct_variant == GctVariant::classification;
    s.per_token = h.gct_scale == GctScale::per_token;
    s.seed = seed;
    auto gct = std::make_shared<GctExtension>(s);
    gct->add_parameters(params, cfg, seed);
    ext->add(gct);
  }
  if (regularise && h.regularizer == Regularizer::disagreement) {
    DisagreementSettings s;
    s.feature_map = feature_map_of(h.disagreement);
    s.lambda = static_cast<float>(h.lambda);
    ext->add(std::make_shared<DisagreementExtension>(s));
  }
  if (!finetune && h.drophead > 0) {
    DropHeadSettings s;
    s.p_max = static_cast<float>(h.drophead);
    s.seed = seed;
    ext->add(std::make_shared<DropHeadExtension>(s));
  }
  if (!finetune && h.gates == HeadGates::hard_concrete) {
    HardConcreteSettings s;
    s.lambda = static_cast<float>(h.l0_lambda);
    s.seed = seed;
    auto gates = std::make_shared<HardConcreteExtension>(s);
    gates->add_parameters(params, cfg);
    ext->add(gates);
  }
  return ext->empty() ? nullptr : ext;
}

} // namespace pillars::ght
