// See checkpoint.h.
#include "train/checkpoint.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "base/error.h"
#include "base/atomic_file.h"
#include "engine/io/safetensors.h"
#include "train/setup.h"

namespace pillars::train {

namespace {

constexpr const char* kOptimizerPrefix = "optimizer.";

std::string json_twin(const std::string& path) {
  return std::filesystem::path(path).replace_extension(".json").string();
}

bool g_allow_unchecked = false;

// A checkpoint whose content its checksum does not vouch for is refused, unless the user said
// otherwise: without a checksum, a file that was edited or damaged cannot be told from a good one.
void check_checksum_recorded(const std::string& path, io::ChecksumCoverage coverage) {
  if (coverage != io::ChecksumCoverage::none) return;
  if (!g_allow_unchecked)
    throw InputError(
        str_cat(path, ": no \"", io::kChecksumKey,
                "\" in its metadata, so neither its tensors nor its "
                "recorded config can be checked (written by another tool, or edited); pass --allow-unchecked "
                "to load it anyway"));
  std::fprintf(stderr, "note: %s has no \"%s\"; loading it unchecked (--allow-unchecked)\n", path.c_str(),
               io::kChecksumKey);
}

} // namespace

void allow_unchecked_checkpoints(bool allow) { g_allow_unchecked = allow; }

void save_checkpoint(const std::string& path, const TransformerConfig& cfg, const ParamStore& params,
                     const optim::Optimizer* optimizer, const TrainerState& state, const nlohmann::json& extra) {
  std::vector<io::NamedTensor> tensors;
  for (const std::string& name : params.names()) tensors.push_back({name, params.get(name)});
  if (optimizer)
    for (auto& [name, t] : optimizer->state()) tensors.push_back({kOptimizerPrefix + name, t});
  const std::map<std::string, std::string> metadata = {{"pillars.model", to_json(cfg).dump()},
                                                       {"pillars.state", to_json(state).dump()},
                                                       {"pillars.extra", extra.dump()}};
  io::save_safetensors(path, tensors, metadata);
  nlohmann::json twin = {{"model", to_json(cfg)},
                         {"state", to_json(state)},
                         {"extra", extra},
                         {"parameters", params.numel()},
                         {"has_optimizer_state", optimizer != nullptr}};
  io::atomic_write_file(json_twin(path), twin.dump(2) + "\n");
}

LoadedCheckpoint load_checkpoint(const std::string& path) {
  io::SafetensorsContents contents = io::load_safetensors(path);
  check_checksum_recorded(path, contents.checksum);
  auto meta = [&](const char* key) -> nlohmann::json {
    const auto it = contents.metadata.find(key);
    if (it == contents.metadata.end())
      throw InputError(str_cat(path, ": not a pillars checkpoint (no \"", key, "\" in the safetensors metadata)"));
    try {
      return nlohmann::json::parse(it->second);
    } catch (const nlohmann::json::exception& e) {
      throw InputError(str_cat(path, ": metadata \"", key, "\" is not valid JSON: ", e.what()));
    }
  };
  LoadedCheckpoint c;
  c.config = transformer_config_from_json(meta("pillars.model"), path);
  c.state = trainer_state_from_json(meta("pillars.state"), path);
  if (contents.metadata.count("pillars.extra")) c.extra = meta("pillars.extra");
  const std::string prefix = kOptimizerPrefix;
  for (io::NamedTensor& t : contents.tensors) {
    if (t.name.rfind(prefix, 0) == 0) {
      c.optimizer_state.push_back({t.name.substr(prefix.size()), t.tensor});
      continue;
    }
    // Parameters are F32 (training in bf16 keeps F32 master weights): another dtype is a file some
    // other tool wrote or rewrote, and its bytes would be read as something they are not.
    if (t.tensor.dtype() != DType::f32)
      throw InputError(str_cat(path, ": parameter \"", t.name, "\" is ", io::safetensors_dtype_name(t.tensor.dtype()),
                               "; pillars checkpoints hold F32 parameters"));
    c.params.add(t.name, t.tensor.shape()).copy_from(t.tensor);
  }
  // Every parameter the config implies must be there, with its shape, and no other model parameter
  // ("encoder."/"decoder." names; a method's own, such as "head_gate.*", may come along).
  const std::vector<init::ParamSpec> specs = transformer_parameters(c.config);
  for (const init::ParamSpec& spec : specs) {
    if (!c.params.contains(spec.name)) throw InputError(str_cat(path, ": parameter \"", spec.name, "\" is missing"));
    if (c.params.get(spec.name).shape() != spec.shape)
      throw InputError(str_cat(path, ": parameter \"", spec.name, "\" has shape ",
                               shape_str(c.params.get(spec.name).shape()), ", the model config implies ",
                               shape_str(spec.shape)));
  }
  if (c.params.size() != specs.size())
    for (const std::string& name : c.params.names())
      if ((name.rfind("encoder.", 0) == 0 || name.rfind("decoder.", 0) == 0) &&
          std::none_of(specs.begin(), specs.end(), [&](const init::ParamSpec& s) { return s.name == name; }))
        throw InputError(str_cat(path, ": holds parameter \"", name, "\", which its model config (pillars.model: ",
                                 c.config.enc_layers, "+", c.config.dec_layers, " layers, d ", c.config.d_model,
                                 ") does not have: the metadata and the tensors disagree"));
  // Weights are finite: a NaN would decode garbage (or train it) without a word. So is the
  // optimizer's state, which a resumed run would otherwise turn into NaN weights at its first update.
  const auto check_finite = [&](const char* what, const std::string& name, const Tensor& t) {
    const float* p = t.data<float>();
    for (int64_t i = 0; i < t.numel(); ++i)
      if (!std::isfinite(p[i]))
        throw InputError(str_cat(path, ": ", what, " \"", name, "\" holds ", p[i], " at element ", i,
                                 " (a diverged or corrupt model); refusing it"));
  };
  for (const std::string& name : c.params.names()) check_finite("parameter", name, c.params.get(name));
  for (const auto& [name, t] : c.optimizer_state)
    if (t.dtype() == DType::f32) check_finite("optimizer state", prefix + name, t);
  return c;
}

void check_vocabulary(const LoadedCheckpoint& ck, const std::string& path, const TextPipeline& pipeline,
                      const std::string& run_dir) {
  const std::string dict = (std::filesystem::path(run_dir) / "dict.txt").string();
  const int64_t words = static_cast<int64_t>(pipeline.dictionary().size());
  if (ck.config.vocab != words)
    throw InputError(str_cat(path, ": the model's vocabulary has ", ck.config.vocab, " entries, ", dict, " has ", words,
                             ": the checkpoint belongs to another run"));
  if (ck.extra.contains("pipeline") && ck.extra["pipeline"].contains("dictionary")) {
    const std::string recorded = ck.extra["pipeline"]["dictionary"].get<std::string>();
    const std::string ours = pipeline.dictionary_checksum();
    if (recorded != ours)
      throw InputError(str_cat(path, ": trained with another dictionary (", recorded, ") than ", dict, " (", ours,
                               "): the checkpoint belongs to another run"));
  }
}

namespace {

// How an experiment file names a TransformerConfig field (the `model` section; a decoder-only
// model's dec_layers is model.layers there).
std::string experiment_field(const std::string& key, const TransformerConfig& c) {
  if (key == "dec_layers" && c.decoder_only) return "model.layers";
  if (key == "vocab") return "the vocabulary size";
  if (key == "pad_id") return "the padding id";
  if (key == "decoder_only") return "task (decoder-only model)";
  return "model." + key;
}

} // namespace

void check_model_config(const LoadedCheckpoint& ck, const std::string& path, const TransformerConfig& expected,
                        const std::string& origin) {
  const TransformerConfig& got = ck.config;
  const nlohmann::json a = to_json(got), b = to_json(expected);
  // Training settings, not the model: they may differ between the run that trained and the one that uses it.
  static const char* const kSettings[] = {"dropout", "attention_dropout", "activation_dropout", "module_heads"};
  for (const auto& [key, value] : b.items()) {
    if (std::find(std::begin(kSettings), std::end(kSettings), key) != std::end(kSettings)) continue;
    if (a.contains(key) && a[key] == value) continue;
    throw InputError(str_cat(path, ": its model (pillars.model) has ", key, " = ",
                             a.contains(key) ? a[key].dump() : "nothing", ", but ", origin, " says ",
                             experiment_field(key, expected), " = ", value.dump(),
                             ": the checkpoint is of another model"));
  }
  // A pruned model keeps at most the heads it had.
  const std::vector<std::string> modules = attention_modules(expected);
  for (const auto& [module, heads] : got.module_heads) {
    if (std::find(modules.begin(), modules.end(), module) == modules.end() || heads > expected.heads_of(module))
      throw InputError(str_cat(path, ": its model (pillars.model) has ", heads, " heads in \"", module,
                               "\" (module_heads), but ", origin, " says ", expected.heads_of(module),
                               " (model.heads): the checkpoint is of another model"));
  }
}

void check_run_checkpoint(const LoadedCheckpoint& ck, const std::string& path, const TextPipeline& pipeline,
                          const std::string& run_dir, const Experiment& run_config) {
  check_vocabulary(ck, path, pipeline, run_dir);
  const std::string config = (std::filesystem::path(run_dir) / "config.json").string();
  check_model_config(ck, path, model_config(run_config, ck.config.vocab), config);
}

ParamStore average_checkpoints(const std::vector<std::string>& paths, TransformerConfig* config_out) {
  PILLARS_CHECK(!paths.empty(), "average_checkpoints: no checkpoints");
  LoadedCheckpoint first = load_checkpoint(paths[0]);
  std::vector<std::vector<double>> sums;
  for (const std::string& name : first.params.names()) {
    const Tensor& t = first.params.get(name);
    sums.emplace_back(t.data<float>(), t.data<float>() + t.numel());
  }
  for (size_t k = 1; k < paths.size(); ++k) {
    LoadedCheckpoint other = load_checkpoint(paths[k]);
    size_t i = 0;
    for (const std::string& name : first.params.names()) {
      if (!other.params.contains(name) || other.params.get(name).shape() != first.params.get(name).shape())
        throw InputError(str_cat(paths[k], ": parameter \"", name, "\" differs from ", paths[0], "; cannot average"));
      const float* p = other.params.get(name).data<float>();
      for (size_t e = 0; e < sums[i].size(); ++e) sums[i][e] += p[e];
      ++i;
    }
  }
  size_t i = 0;
  for (const std::string& name : first.params.names()) {
    float* p = first.params.get(name).data<float>();
    for (size_t e = 0; e < sums[i].size(); ++e)
      p[e] = static_cast<float>(sums[i][e] / static_cast<double>(paths.size()));
    ++i;
  }
  if (config_out) *config_out = first.config;
  return std::move(first.params);
}

} // namespace pillars::train
