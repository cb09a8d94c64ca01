// See checkpoint.h.
#include "train/checkpoint.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <regex>

#include "base/error.h"
#include "base/atomic_file.h"
#include "engine/io/safetensors.h"
#include "train/limits.h"
#include "train/setup.h"

namespace pillars::train {

namespace {

constexpr const char* kOptimizerPrefix = "optimizer.";

std::string json_twin(const std::string& path) {
  return std::filesystem::path(path).replace_extension(".json").string();
}

template <class T> T field(const nlohmann::json& j, const char* key, const std::string& origin) {
  if (!j.contains(key)) throw InputError(str_cat(origin, ": missing \"", key, "\""));
  try {
    return j.at(key).get<T>();
  } catch (const nlohmann::json::exception& e) {
    throw InputError(str_cat(origin, ": \"", key, "\": ", e.what()));
  }
}

// The fields of "pillars.state" are read strictly: a checkpoint is a file anyone may have edited
// (or another program written), and a --resume trusts its position. An integer must be a JSON
// integer (a float would be cut silently, 1e30 does not fit an int64) within [lo, hi]; a number
// must be finite. Every message names the file (origin) and the field.
std::string state_field(const std::string& origin, const char* key) {
  return str_cat(origin, ": \"pillars.state\" field \"", key, "\"");
}

int64_t state_integer(const nlohmann::json& j, const char* key, int64_t lo, int64_t hi, const std::string& origin) {
  if (!j.contains(key)) throw InputError(str_cat(state_field(origin, key), " is missing"));
  const nlohmann::json& v = j.at(key);
  const bool fits = v.is_number_integer() && (!v.is_number_unsigned() || v.get<uint64_t>() <= static_cast<uint64_t>(hi));
  if (!fits || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
    throw InputError(str_cat(state_field(origin, key), " is ", v.dump(), "; it must be an integer from ", lo, " to ", hi,
                             " (a damaged or edited checkpoint)"));
  return v.get<int64_t>();
}

double state_number(const nlohmann::json& j, const char* key, double lo, const std::string& origin) {
  if (!j.contains(key)) throw InputError(str_cat(state_field(origin, key), " is missing"));
  const nlohmann::json& v = j.at(key);
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < lo)
    throw InputError(str_cat(state_field(origin, key), " is ", v.dump(), "; it must be a finite number",
                             lo > -std::numeric_limits<double>::max() ? str_cat(" of at least ", lo) : std::string(),
                             " (a damaged or edited checkpoint)"));
  return v.get<double>();
}

bool g_allow_unchecked = false;

// A checkpoint whose content its checksum does not vouch for is refused, unless the user said
// otherwise: without a checksum, a file that was edited or damaged cannot be told from a good one.
void check_checksum_recorded(const std::string& path, io::ChecksumCoverage coverage) {
  if (coverage != io::ChecksumCoverage::none) return;
  if (!g_allow_unchecked)
    throw InputError(str_cat(path, ": no \"", io::kChecksumKey, "\" in its metadata, so neither its tensors nor its "
                             "recorded config can be checked (written by another tool, or edited); pass --allow-unchecked "
                             "to load it anyway"));
  std::fprintf(stderr, "note: %s has no \"%s\"; loading it unchecked (--allow-unchecked)\n", path.c_str(), io::kChecksumKey);
}

} // namespace

void allow_unchecked_checkpoints(bool allow) { g_allow_unchecked = allow; }

bool is_kept_checkpoint_name(const std::string& name) {
  static const std::regex kName("checkpoint_e[0-9]{1,15}_u[0-9]{1,15}\\.safetensors");
  return std::regex_match(name, kName);
}

nlohmann::json to_json(const TransformerConfig& c) {
  return {{"vocab", c.vocab}, {"d_model", c.d_model}, {"heads", c.heads}, {"ffn", c.ffn}, {"enc_layers", c.enc_layers},
          {"dec_layers", c.dec_layers}, {"pre_norm", c.pre_norm}, {"activation", enum_name(c.activation)}, {"dropout", c.dropout},
          {"attention_dropout", c.attention_dropout}, {"activation_dropout", c.activation_dropout}, {"pad_id", c.pad_id},
          {"decoder_only", c.decoder_only}, {"share_all_embeddings", c.share_all_embeddings},
          {"share_decoder_input_output_embed", c.share_decoder_input_output_embed}, {"module_heads", c.module_heads}};
}

TransformerConfig transformer_config_from_json(const nlohmann::json& j, const std::string& origin) {
  TransformerConfig c;
  c.vocab = field<int64_t>(j, "vocab", origin);
  c.d_model = field<int64_t>(j, "d_model", origin);
  c.heads = field<int64_t>(j, "heads", origin);
  c.ffn = field<int64_t>(j, "ffn", origin);
  c.enc_layers = field<int64_t>(j, "enc_layers", origin);
  c.dec_layers = field<int64_t>(j, "dec_layers", origin);
  c.pre_norm = field<bool>(j, "pre_norm", origin);
  c.activation = parse_enum<ops::Activation>(field<std::string>(j, "activation", origin), str_cat(origin, ": \"activation\""));
  c.dropout = field<float>(j, "dropout", origin);
  c.attention_dropout = field<float>(j, "attention_dropout", origin);
  c.activation_dropout = field<float>(j, "activation_dropout", origin);
  c.pad_id = field<int64_t>(j, "pad_id", origin);
  c.decoder_only = j.contains("decoder_only") && field<bool>(j, "decoder_only", origin);
  c.share_all_embeddings = field<bool>(j, "share_all_embeddings", origin);
  c.share_decoder_input_output_embed = field<bool>(j, "share_decoder_input_output_embed", origin);
  c.module_heads = field<std::map<std::string, int64_t>>(j, "module_heads", origin);
  try {
    c.validate();
  } catch (const InputError& e) {
    throw InputError(str_cat(origin, ": ", e.what()));
  }
  return c;
}

nlohmann::json to_json(const TrainerState& s) {
  return {{"epoch", s.epoch}, {"batch_in_epoch", s.batch_in_epoch}, {"updates", s.updates},
          {"elapsed_seconds", s.elapsed_seconds}, {"best_valid", s.best_valid}, {"has_best", s.has_best},
          {"bad_validations", s.bad_validations}, {"last_validated_update", s.last_validated_update}, {"finished", s.finished}, {"stop_reason", s.stop_reason},
          {"kept", s.kept}};
}

TrainerState trainer_state_from_json(const nlohmann::json& j, const std::string& origin) {
  if (!j.is_object()) throw InputError(str_cat(origin, ": \"pillars.state\" is not a JSON object"));
  const int64_t most = limits::kMaxUpdates; // far beyond any run; sums of two never overflow
  TrainerState s;
  s.epoch = state_integer(j, "epoch", 1, most, origin);
  s.batch_in_epoch = state_integer(j, "batch_in_epoch", 0, most, origin); // at most an epoch's batches: checked on --resume
  s.updates = state_integer(j, "updates", 0, most, origin);
  s.elapsed_seconds = state_number(j, "elapsed_seconds", 0, origin);
  s.best_valid = state_number(j, "best_valid", -std::numeric_limits<double>::max(), origin);
  s.has_best = field<bool>(j, "has_best", origin);
  s.bad_validations = state_integer(j, "bad_validations", 0, most, origin);
  // (absent in checkpoints written before it was recorded: treated as "none")
  s.last_validated_update = j.contains("last_validated_update") ? state_integer(j, "last_validated_update", -1, s.updates, origin) : -1;
  s.finished = field<bool>(j, "finished", origin);
  s.stop_reason = field<std::string>(j, "stop_reason", origin);
  // The kept checkpoints are files the trainer deletes (when a better one displaces them) and
  // averages: each must be one of the run's own kept checkpoints by name, so that no edited list
  // makes it delete or read another file ("../x.safetensors", "/etc/passwd", "dict.txt",
  // "checkpoint_last.safetensors").
  if (!j.contains("kept") || !j["kept"].is_object())
    throw InputError(str_cat(state_field(origin, "kept"), " is ", j.contains("kept") ? j["kept"].dump() : "missing",
                             "; it must be an object of kept checkpoint names and their scores"));
  if (static_cast<int64_t>(j["kept"].size()) > limits::kMaxKeepBest)
    throw InputError(str_cat(state_field(origin, "kept"), " lists ", j["kept"].size(), " checkpoints; at most ",
                             limits::kMaxKeepBest, " are kept (train.keep_best)"));
  for (const auto& [name, score] : j["kept"].items()) {
    if (!is_kept_checkpoint_name(name))
      throw InputError(str_cat(state_field(origin, "kept"), " names ", nlohmann::json(name).dump(),
                               ", which is not a kept checkpoint of the run (checkpoint_e<epoch>_u<update>.safetensors, a "
                               "plain name in the run folder); refusing the list rather than deleting or reading that file"));
    if (!score.is_number() || !std::isfinite(score.get<double>()))
      throw InputError(str_cat(state_field(origin, "kept"), ": the score of ", name, " is ", score.dump(), "; it must be a finite number"));
    s.kept[name] = score.get<double>();
  }
  return s;
}

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
      throw InputError(str_cat(path, ": parameter \"", spec.name, "\" has shape ", shape_str(c.params.get(spec.name).shape()),
                               ", the model config implies ", shape_str(spec.shape)));
  }
  if (c.params.size() != specs.size())
    for (const std::string& name : c.params.names())
      if ((name.rfind("encoder.", 0) == 0 || name.rfind("decoder.", 0) == 0) &&
          std::none_of(specs.begin(), specs.end(), [&](const init::ParamSpec& s) { return s.name == name; }))
        throw InputError(str_cat(path, ": holds parameter \"", name, "\", which its model config (pillars.model: ",
                                 c.config.enc_layers, "+", c.config.dec_layers, " layers, d ", c.config.d_model,
                                 ") does not have: the metadata and the tensors disagree"));
  // Weights are finite: a NaN would decode garbage (or train it) without a word. So is the
  // optimiser's state, which a resumed run would otherwise turn into NaN weights at its first update.
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
    throw InputError(str_cat(path, ": its model (pillars.model) has ", key, " = ", a.contains(key) ? a[key].dump() : "nothing",
                             ", but ", origin, " says ", experiment_field(key, expected), " = ", value.dump(),
                             ": the checkpoint is of another model"));
  }
  // A pruned model keeps at most the heads it had.
  const std::vector<std::string> modules = attention_modules(expected);
  for (const auto& [module, heads] : got.module_heads) {
    if (std::find(modules.begin(), modules.end(), module) == modules.end() || heads > expected.heads_of(module))
      throw InputError(str_cat(path, ": its model (pillars.model) has ", heads, " heads in \"", module, "\" (module_heads), but ",
                               origin, " says ", expected.heads_of(module), " (model.heads): the checkpoint is of another model"));
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
    for (size_t e = 0; e < sums[i].size(); ++e) p[e] = static_cast<float>(sums[i][e] / static_cast<double>(paths.size()));
    ++i;
  }
  if (config_out) *config_out = first.config;
  return std::move(first.params);
}

} // namespace pillars::train
