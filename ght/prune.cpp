// See prune.h.
#include "ght/prune.h"

#include <algorithm>
#include <cstring>

#include "base/error.h"

namespace pillars::ght {

namespace {

// Rows `heads` (each a block of Dh rows) of w (H·Dh, cols) → (kept·Dh, cols). Also serves biases
// (H·Dh) with cols = 1.
Tensor take_row_blocks(const Tensor& w, const std::vector<int>& heads, int64_t Dh) {
  const int64_t cols = w.rank() == 2 ? w.dim(1) : 1;
  Shape shape = w.shape();
  shape[0] = static_cast<int64_t>(heads.size()) * Dh;
  Tensor out = Tensor::zeros(shape);
  for (size_t n = 0; n < heads.size(); ++n)
    std::memcpy(out.data<float>() + static_cast<int64_t>(n) * Dh * cols, w.data<float>() + heads[n] * Dh * cols,
                static_cast<size_t>(Dh * cols) * sizeof(float));
  return out;
}

// Columns `heads` (blocks of Dh columns) of w (rows, H·Dh) → (rows, kept·Dh).
Tensor take_column_blocks(const Tensor& w, const std::vector<int>& heads, int64_t Dh) {
  const int64_t rows = w.dim(0), in_cols = w.dim(1), out_cols = static_cast<int64_t>(heads.size()) * Dh;
  Tensor out = Tensor::zeros({rows, out_cols});
  for (int64_t r = 0; r < rows; ++r)
    for (size_t n = 0; n < heads.size(); ++n)
      std::memcpy(out.data<float>() + r * out_cols + static_cast<int64_t>(n) * Dh,
                  w.data<float>() + r * in_cols + heads[n] * Dh, static_cast<size_t>(Dh) * sizeof(float));
  return out;
}

// The part of `value` (a parameter, or an optimizer buffer shaped like it) that the kept heads own:
// rows of W^Q, W^K, W^V and their biases, columns of W^out; a copy of the whole for every other
// parameter (W^out's bias, feed-forward layers, norms, embeddings).
Tensor kept_part(const std::string& param, const Tensor& value, const HeadSelection& keep, int64_t Dh) {
  for (const auto& [module, heads] : keep) {
    if (param.rfind(module + ".", 0) != 0) continue;
    const std::string rest = param.substr(module.size() + 1); // "q_proj.weight", "out_proj.bias", ...
    if (rest.rfind("q_proj.", 0) == 0 || rest.rfind("k_proj.", 0) == 0 || rest.rfind("v_proj.", 0) == 0)
      return take_row_blocks(value, heads, Dh);
    if (rest == "out_proj.weight") return take_column_blocks(value, heads, Dh);
  }
  return value.clone();
}

void check_selection(const TransformerConfig& cfg, const HeadSelection& keep) {
  const std::vector<std::string> modules = attention_modules(cfg);
  for (const auto& [module, heads] : keep) {
    if (std::find(modules.begin(), modules.end(), module) == modules.end())
      throw InputError(str_cat("prune: the model has no attention module \"", module, "\""));
    if (heads.empty()) throw InputError(str_cat("prune: ", module, " would keep no head"));
    const int64_t H = cfg.heads_of(module);
    for (size_t n = 0; n < heads.size(); ++n)
      if (heads[n] < 0 || heads[n] >= H || (n > 0 && heads[n] <= heads[n - 1]))
        throw InputError(str_cat("prune: ", module, ": head indices must be ascending, distinct and in [0, ", H,
                                 "), got ", heads[n], " at position ", n));
  }
}

} // namespace

PrunedModel prune_heads(const TransformerConfig& cfg, const ParamStore& params, const HeadSelection& keep) {
  check_selection(cfg, keep);
  PrunedModel ps;
  ps.cfg = cfg;
  for (const auto& [module, heads] : keep) ps.cfg.module_heads[module] = static_cast<int64_t>(heads.size());
  ps.cfg.validate();

  const int64_t Dh = cfg.head_dim();
  for (const init::ParamSpec& spec : transformer_parameters(ps.cfg)) {
    Tensor value = kept_part(spec.name, params.get(spec.name), keep, Dh);
    PILLARS_CHECK(value.shape() == spec.shape, "prune: ", spec.name, " came out ", shape_str(value.shape()),
                  ", expected ", shape_str(spec.shape));
    ps.params.add(spec.name, spec.shape);
    ps.params.replace(spec.name, std::move(value));
  }
  return ps;
}

optim::NamedTensors prune_optimizer_state(const TransformerConfig& cfg, const optim::NamedTensors& state,
                                          const HeadSelection& keep) {
  check_selection(cfg, keep);
  TransformerConfig pruned = cfg;
  for (const auto& [module, heads] : keep) pruned.module_heads[module] = static_cast<int64_t>(heads.size());
  std::map<std::string, Shape> before, after; // the parameters' shapes in the unpruned and the pruned model
  for (const init::ParamSpec& spec : transformer_parameters(cfg)) before[spec.name] = spec.shape;
  for (const init::ParamSpec& spec : transformer_parameters(pruned)) after[spec.name] = spec.shape;

  const int64_t Dh = cfg.head_dim();
  optim::NamedTensors out;
  for (const auto& [entry, value] : state) {
    if (entry == "step") { // the optimizer's own count of step() calls
      out.emplace_back(entry, value.clone());
      continue;
    }
    // "<param>.<field>": field "step" is the parameter's update count t (Adam's bias correction
    // 1 − βᵗ), any other field a buffer shaped like the parameter.
    const size_t dot = entry.rfind('.');
    if (dot == std::string::npos) throw InputError(str_cat("prune: unexpected optimizer state entry '", entry, "'"));
    const std::string param = entry.substr(0, dot), field = entry.substr(dot + 1);
    if (!after.count(param)) continue; // a parameter the pruned model does not have (head gates, GCT classifiers)
    if (field == "step") {
      out.emplace_back(entry, value.clone());
      continue;
    }
    if (!value.defined() || value.dtype() != DType::f32 || value.device() != Device::cpu ||
        value.shape() != before.at(param))
      throw InputError(str_cat("prune: optimizer state '", entry,
                               "' must be an f32 CPU tensor of its parameter's shape ", shape_str(before.at(param)),
                               " (does the state belong to another model?)"));
    Tensor sliced = kept_part(param, value, keep, Dh);
    PILLARS_CHECK(sliced.shape() == after.at(param), "prune: optimizer state ", entry, " came out ",
                  shape_str(sliced.shape()));
    out.emplace_back(entry, std::move(sliced));
  }
  return out;
}

PruneSummary summarize_pruning(const TransformerConfig& cfg, const ParamStore& before, const PrunedModel& after,
                               const HeadSelection& keep) {
  PruneSummary s;
  s.params_before = count_parameters(before, true);
  s.params_after = count_parameters(after.params, true);
  s.params_before_no_embeddings = count_parameters(before, false);
  s.params_after_no_embeddings = count_parameters(after.params, false);
  for (const std::string& module : attention_modules(cfg)) {
    const int64_t H = cfg.heads_of(module);
    std::vector<int> kept;
    if (const auto it = keep.find(module); it != keep.end())
      kept = it->second;
    else
      for (int h = 0; h < H; ++h) kept.push_back(h);
    s.modules.push_back({module, {H, kept}});
  }
  return s;
}

} // namespace pillars::ght
