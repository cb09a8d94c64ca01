// See baselines.h (the math of each method and its source are there).
#include "ght/baselines.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "base/splitmix64.h"
#include "base/error.h"
#include "engine/ops.h"
#include "ght/ops.h"
#include "kernels/philox.h"

namespace pillars::ght {

namespace {

// Salts that keep the random streams of DropHead and Hard-Concrete apart for the same seed.
constexpr uint64_t kDropHeadSalt = 0xD809'4EADull;
constexpr uint64_t kConcreteSalt = 0xC0C2'E7E5ull;

// The Philox key of one (seed, update) stream: two splitmix64 rounds, so neighboring seeds and
// updates give unrelated keys.
uint64_t stream_key(uint64_t seed, int64_t update, uint64_t salt) {
  SplitMix64 a(seed ^ salt);
  SplitMix64 b(a.next() ^ static_cast<uint64_t>(update));
  return b.next();
}

// Head h of module m draws element h of the Philox stream at offset m · 2^32: disjoint per module.
double uniform(uint64_t key, size_t module_index, int64_t h) {
  return philox_uniform(key, static_cast<uint64_t>(module_index) << 32, static_cast<uint64_t>(h));
}

// σ(x) = ½ tanh(x/2) + ½: the logistic sigmoid from existing ops, without exp overflow.
ValueId sigmoid(Graph& g, ValueId x) {
  return ops::add_scalar(g, ops::scale(g, ops::tanh(g, ops::scale(g, x, 0.5f)), 0.5f), 0.5f);
}

// clamp(x, 0, 1) = relu(x) − relu(x − 1); its gradient is 1 inside (0, 1) and 0 outside.
ValueId clamp01(Graph& g, ValueId x) {
  return ops::sub(g, ops::relu(g, x), ops::relu(g, ops::add_scalar(g, x, -1.0f)));
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// Σ over a list of scalars (kNoValue when empty).
ValueId sum_of(Graph& g, const std::vector<ValueId>& xs) {
  ValueId total = kNoValue;
  for (ValueId x : xs) total = total == kNoValue ? x : ops::add(g, total, x);
  return total;
}

} // namespace

// ---- 1. Disagreement regularization ---------------------------------------------------------------

void disagreement(steps::StepGraph& step, const DisagreementSettings& s) {
  Graph& g = step.graph;
  if (step.attention.empty()) return;
  std::vector<ValueId> cosines;
  for (const AttentionSite& site : step.attention) {
    const ValueId gram = feature_gram(g, site, s.feature_map); // (H, H), padding left out
    cosines.push_back(mean_pairwise_cosine(g, gram));          // D_m, scalar
  }
  const ValueId mean =
      ops::scale(g, sum_of(g, cosines), 1.0f / static_cast<float>(step.attention.size())); // (1/M) Σ_m D_m
  step.name("disagreement.mean_cosine", mean);
  step.log_term("disagreement_mean_cosine", mean);
  step.objective = ops::add(g, step.objective, ops::scale(g, mean, s.lambda)); // L_task + λ · (1/M) Σ_m D_m
}

// ---- 2. Scheduled DropHead ------------------------------------------------------------------------

double drophead_rate(double p_max, double progress) {
  const double t = std::clamp(progress, 0.0, 1.0);
  return p_max * std::fabs(1.0 - 2.0 * t);
}

std::vector<float> drophead_gates(uint64_t seed, int64_t update, size_t module_index, int64_t heads, double p) {
  const uint64_t key = stream_key(seed, update, kDropHeadSalt);
  std::vector<float> xi(static_cast<size_t>(heads));
  int64_t kept = 0;
  for (int64_t h = 0; h < heads; ++h) {
    const bool keep = uniform(key, module_index, h) >= p; // m_h ~ Bernoulli(1 − p)
    xi[static_cast<size_t>(h)] = keep ? 1.0f : 0.0f;
    kept += keep;
  }
  if (kept == 0) return std::vector<float>(static_cast<size_t>(heads), 1.0f); // nothing kept: keep all
  const float rescale = static_cast<float>(static_cast<double>(heads) / static_cast<double>(kept)); // H / Σ m
  for (float& x : xi) x *= rescale;
  return xi;
}

std::string drophead_gate_input(const std::string& module) { return "head_gate." + module; }

steps::HeadGate drophead_gate(const DropHeadSettings& s) {
  return [s](steps::StepGraph& step, const AttentionSite& site, size_t m) -> ValueId {
    if (!step.train) return kNoValue; // evaluation: no gates
    const int64_t H = site.heads;
    return step.add_input(drophead_gate_input(site.module), {H}, [s, m, H](const steps::StepInfo& info) { // ξ (H)
      return Tensor::from({H}, drophead_gates(s.seed, info.update, m, H, drophead_rate(s.p_max, info.progress)));
    });
  };
}

// ---- 3. Hard-Concrete L0 gates --------------------------------------------------------------------

std::string log_alpha_name(const std::string& module) { return "head_gate." + module + ".log_alpha"; }
std::string concrete_noise_input(const std::string& module) { return "head_gate." + module + ".noise"; }

std::vector<float> concrete_noise(uint64_t seed, int64_t update, size_t module_index, int64_t heads) {
  const uint64_t key = stream_key(seed, update, kConcreteSalt);
  std::vector<float> n(static_cast<size_t>(heads));
  for (int64_t h = 0; h < heads; ++h) {
    const double u = uniform(key, module_index, h) + 0x1.0p-25; // the bin center: u ∈ (0, 1)
    n[static_cast<size_t>(h)] = static_cast<float>(std::log(u) - std::log1p(-u));
  }
  return n;
}

void add_hard_concrete_parameters(ParamStore& params, const TransformerConfig& cfg, float init_log_alpha) {
  for (const std::string& module : attention_modules(cfg)) {
    const std::string name = log_alpha_name(module);
    if (params.contains(name)) continue;
    Tensor& t = params.add(name, {cfg.heads_of(module)});
    std::fill(t.data<float>(), t.data<float>() + t.numel(), init_log_alpha);
  }
}

steps::HeadGate hard_concrete_gate(const HardConcreteSettings& s) {
  return [s](steps::StepGraph& step, const AttentionSite& site, size_t m) -> ValueId {
    Graph& g = step.graph;
    const int64_t H = site.heads;
    const ValueId log_alpha = g.param(log_alpha_name(site.module), {H}); // (H)
    ValueId s_h;
    if (step.train) {
      const ValueId noise =
          step.add_input(concrete_noise_input(site.module), {H}, [s, m, H](const steps::StepInfo& info) {
            return Tensor::from({H}, concrete_noise(s.seed, info.update, m, H)); // log u − log(1 − u), (H)
          });
      s_h = sigmoid(g, ops::scale(g, ops::add(g, noise, log_alpha), 1.0f / s.beta)); // σ((n + log α)/β)
    } else {
      s_h = sigmoid(g, log_alpha); // σ(log α)
    }
    return clamp01(g, ops::add_scalar(g, ops::scale(g, s_h, s.zeta - s.gamma), s.gamma)); // ξ (H)
  };
}

void hard_concrete_l0(steps::StepGraph& step, const HardConcreteSettings& s) {
  Graph& g = step.graph;
  if (step.attention.empty()) return;
  const float shift = -s.beta * std::log(-s.gamma / s.zeta); // −β · log(−γ/ζ) (> 0)
  std::vector<ValueId> open;
  int64_t total_heads = 0;
  for (const AttentionSite& site : step.attention) {
    const ValueId log_alpha = g.find_param(log_alpha_name(site.module));
    PILLARS_CHECK(log_alpha != kNoValue && step.inputs.contains(concrete_noise_input(site.module)),
                  "Hard-Concrete: module ", site.module, " has no gate");
    open.push_back(ops::sum_all(g, sigmoid(g, ops::add_scalar(g, log_alpha, shift)))); // Σ_h P(ξ_h ≠ 0)
    total_heads += site.heads;
  }
  const ValueId open_probability =
      ops::scale(g, sum_of(g, open), 1.0f / static_cast<float>(total_heads)); // mean P(open)
  step.name("hard_concrete.open_probability", open_probability);
  step.log_term("gates_open_probability", open_probability);
  step.objective = ops::add(g, step.objective, ops::scale(g, open_probability, s.lambda));
}

HeadScores expected_gates(const ParamStore& params, const TransformerConfig& cfg, const HardConcreteSettings& s) {
  HeadScores gates;
  for (const std::string& module : attention_modules(cfg)) {
    const std::string name = log_alpha_name(module);
    if (!params.contains(name)) continue;
    const Tensor& log_alpha = params.get(name);
    std::vector<double>& out = gates[module];
    for (int64_t h = 0; h < log_alpha.numel(); ++h) {
      const double stretched = sigmoid(static_cast<double>(log_alpha.data<float>()[h])) * (s.zeta - s.gamma) + s.gamma;
      out.push_back(std::clamp(stretched, 0.0, 1.0));
    }
  }
  return gates;
}

// ---- 4. Head importance ---------------------------------------------------------------------------

std::string importance_gate_name(const std::string& module) { return "head_gate." + module; }

steps::HeadGate importance_gate() {
  return [](steps::StepGraph& step, const AttentionSite& site, size_t) -> ValueId {
    if (!step.train) return kNoValue;
    return step.graph.param(importance_gate_name(site.module), {site.heads}); // ξ (H), fixed at 1
  };
}

HeadImportance head_importance(const TransformerConfig& cfg, const ParamStore& params, const TaskFactory& make_task,
                               const ImportanceSettings& s, dist::Communicator& comm) {
  ParamStore gated = params; // shallow: the model's tensors are shared, the gates are added to the copy only
  std::map<std::string, std::string> module_of; // gate parameter → module
  HeadImportance result;
  for (const std::string& module : attention_modules(cfg)) {
    const std::string name = importance_gate_name(module);
    PILLARS_CHECK(!gated.contains(name), "head_importance: the store already has a parameter ", name);
    Tensor& xi = gated.add(name, {cfg.heads_of(module)});
    std::fill(xi.data<float>(), xi.data<float>() + xi.numel(), 1.0f);
    module_of[name] = module;
    result.raw[module].assign(static_cast<size_t>(xi.numel()), 0.0);
  }

  {
    const std::unique_ptr<steps::TrainingTask> task = make_task(gated);
    PILLARS_CHECK(task != nullptr, "head_importance: the task factory returned no task");
    std::vector<steps::Batch> batches = task->epoch(s.seed, 1);
    if (s.batches > 0 && static_cast<int64_t>(batches.size()) > s.batches)
      batches.resize(static_cast<size_t>(s.batches));
    for (size_t j = static_cast<size_t>(comm.rank()); j < batches.size(); j += static_cast<size_t>(comm.size())) {
      const steps::Batch& batch = batches[j];
      int64_t tokens = 0;
      task->train(batch, s.seed, tokens); // forward + backward: ∂L_b/∂ξ in the slots
      for (const optim::ParamSlot& slot : task->steps().slots()) {
        const auto it = module_of.find(slot.name);
        if (it == module_of.end() || !slot.grad.defined()) continue;
        std::vector<double>& I = result.raw[it->second];
        const float* grad = slot.grad.data<float>();
        for (size_t h = 0; h < I.size(); ++h) I[h] += std::fabs(static_cast<double>(grad[h])); // I_h += |∂L_b/∂ξ_h|
      }
      ++result.batches;
      result.tokens += tokens;
    }
  }
  if (comm.size() > 1) { // every rank holds the same modules, in the map's order: add the ranks' sums
    for (auto& [module, I] : result.raw) comm.all_reduce_sum(I.data(), static_cast<int64_t>(I.size()));
    comm.all_reduce_sum(&result.batches, 1);
    comm.all_reduce_sum(&result.tokens, 1);
  }

  for (const auto& [module, I] : result.raw) { // Î_h = I_h / ‖I_module‖₂
    const double norm = std::sqrt(std::inner_product(I.begin(), I.end(), I.begin(), 0.0));
    std::vector<double>& out = result.normalized[module];
    for (double x : I) out.push_back(norm > 0 ? x / norm : 0.0);
  }
  return result;
}

// ---- 5. Selection ---------------------------------------------------------------------------------

HeadSelection top_k_selection(const HeadScores& scores, int64_t k) {
  if (k < 1) throw InputError(str_cat("top_k_selection: k must be at least 1, got ", k));
  HeadSelection keep;
  for (const auto& [module, score] : scores) {
    std::vector<int> order(score.size());
    std::iota(order.begin(), order.end(), 0);
    // Highest score first; std::stable_sort keeps the lower index first among equal scores.
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return score[static_cast<size_t>(a)] > score[static_cast<size_t>(b)]; });
    order.resize(std::min(order.size(), static_cast<size_t>(k)));
    std::sort(order.begin(), order.end());
    keep[module] = order;
  }
  return keep;
}

} // namespace pillars::ght
