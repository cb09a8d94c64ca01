// See checkpoint_meta.h.
#include "train/checkpoint_meta.h"

#include <cmath>
#include <limits>
#include <regex>

#include "base/error.h"
#include "train/limits.h"

namespace pillars::train {

namespace {

template <class T>
T field(const nlohmann::json& j, const char* key, const std::string& origin) {
  if (!j.contains(key)) throw InputError(str_cat(origin, ": missing \"", key, "\""));
  try {
    return j.at(key).get<T>();
  } catch (const nlohmann::json::exception& e) {
    throw InputError(str_cat(origin, ": \"", key, "\": ", e.what()));
  }
}

// The recorded fields are read strictly: a checkpoint is a file anyone may have edited (or another
// program written), and a --resume trusts its position. An integer must be a JSON integer (a float
// would be cut silently, and converting 1e30 to an int64 is undefined) within [lo, hi]; a number
// must be finite and within [lo, hi]. Every message names the file (origin), the metadata entry
// ("pillars.model" or "pillars.state") and the field.
std::string meta_field(const std::string& origin, const char* entry, const std::string& key) {
  return str_cat(origin, ": \"", entry, "\" field \"", key, "\"");
}

int64_t meta_integer(const nlohmann::json& j, const char* entry, const std::string& key, int64_t lo, int64_t hi,
                     const std::string& origin) {
  if (!j.contains(key)) throw InputError(str_cat(meta_field(origin, entry, key), " is missing"));
  const nlohmann::json& v = j.at(key);
  const bool fits =
      v.is_number_integer() && (!v.is_number_unsigned() || v.get<uint64_t>() <= static_cast<uint64_t>(hi));
  if (!fits || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
    throw InputError(str_cat(meta_field(origin, entry, key), " is ", v.dump(), "; it must be an integer from ", lo,
                             " to ", hi, " (a damaged or edited checkpoint)"));
  return v.get<int64_t>();
}

double meta_number(const nlohmann::json& j, const char* entry, const std::string& key, double lo, double hi,
                   const std::string& origin) {
  if (!j.contains(key)) throw InputError(str_cat(meta_field(origin, entry, key), " is missing"));
  const nlohmann::json& v = j.at(key);
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < lo || v.get<double>() > hi)
    throw InputError(str_cat(meta_field(origin, entry, key), " is ", v.dump(), "; it must be a finite number",
                             lo > -std::numeric_limits<double>::max() ? str_cat(" of at least ", lo) : std::string(),
                             hi < std::numeric_limits<double>::max() ? str_cat(" and at most ", hi) : std::string(),
                             " (a damaged or edited checkpoint)"));
  return v.get<double>();
}

constexpr double kAny = std::numeric_limits<double>::max();

int64_t state_integer(const nlohmann::json& j, const char* key, int64_t lo, int64_t hi, const std::string& origin) {
  return meta_integer(j, "pillars.state", key, lo, hi, origin);
}
double state_number(const nlohmann::json& j, const char* key, double lo, const std::string& origin) {
  return meta_number(j, "pillars.state", key, lo, kAny, origin);
}
int64_t model_integer(const nlohmann::json& j, const char* key, int64_t lo, int64_t hi, const std::string& origin) {
  return meta_integer(j, "pillars.model", key, lo, hi, origin);
}
std::string state_field(const std::string& origin, const char* key) { return meta_field(origin, "pillars.state", key); }

} // namespace

bool is_kept_checkpoint_name(const std::string& name) {
  static const std::regex kName("checkpoint_e[0-9]{1,15}_u[0-9]{1,15}\\.safetensors");
  return std::regex_match(name, kName);
}

nlohmann::json to_json(const TransformerConfig& c) {
  return {{"vocab", c.vocab},
          {"d_model", c.d_model},
          {"heads", c.heads},
          {"ffn", c.ffn},
          {"enc_layers", c.enc_layers},
          {"dec_layers", c.dec_layers},
          {"pre_norm", c.pre_norm},
          {"activation", enum_name(c.activation)},
          {"dropout", c.dropout},
          {"attention_dropout", c.attention_dropout},
          {"activation_dropout", c.activation_dropout},
          {"pad_id", c.pad_id},
          {"decoder_only", c.decoder_only},
          {"share_all_embeddings", c.share_all_embeddings},
          {"share_decoder_input_output_embed", c.share_decoder_input_output_embed},
          {"module_heads", c.module_heads}};
}

TransformerConfig transformer_config_from_json(const nlohmann::json& j, const std::string& origin) {
  TransformerConfig c;
  if (!j.is_object()) throw InputError(str_cat(origin, ": \"pillars.model\" is not a JSON object"));
  // The dictionary has at most data.vocab_max entries and the special tokens.
  const int64_t most_vocab = 2 * limits::kMaxVocabulary;
  c.vocab = model_integer(j, "vocab", 1, most_vocab, origin);
  c.d_model = model_integer(j, "d_model", 1, limits::kMaxWidth, origin);
  c.heads = model_integer(j, "heads", 1, limits::kMaxHeads, origin);
  c.ffn = model_integer(j, "ffn", 1, limits::kMaxFfn, origin);
  c.enc_layers = model_integer(j, "enc_layers", 0, limits::kMaxLayers, origin);
  c.dec_layers = model_integer(j, "dec_layers", 0, limits::kMaxLayers, origin);
  c.pre_norm = field<bool>(j, "pre_norm", origin);
  c.activation =
      parse_enum<ops::Activation>(field<std::string>(j, "activation", origin), str_cat(origin, ": \"activation\""));
  c.dropout = static_cast<float>(meta_number(j, "pillars.model", "dropout", 0, 1, origin));
  c.attention_dropout = static_cast<float>(meta_number(j, "pillars.model", "attention_dropout", 0, 1, origin));
  c.activation_dropout = static_cast<float>(meta_number(j, "pillars.model", "activation_dropout", 0, 1, origin));
  c.pad_id = model_integer(j, "pad_id", 0, most_vocab, origin);
  c.decoder_only = j.contains("decoder_only") && field<bool>(j, "decoder_only", origin);
  c.share_all_embeddings = field<bool>(j, "share_all_embeddings", origin);
  c.share_decoder_input_output_embed = field<bool>(j, "share_decoder_input_output_embed", origin);
  if (!j.contains("module_heads") || !j["module_heads"].is_object())
    throw InputError(str_cat(meta_field(origin, "pillars.model", "module_heads"),
                             " must be an object of module names and head counts"));
  for (const auto& [module, kept] : j["module_heads"].items())
    c.module_heads[module] = meta_integer(j["module_heads"], "pillars.model", module, 1, limits::kMaxHeads, origin);
  try {
    c.validate();
  } catch (const InputError& e) {
    throw InputError(str_cat(origin, ": ", e.what()));
  }
  return c;
}

nlohmann::json to_json(const TrainerState& s) {
  return {{"epoch", s.epoch},
          {"batch_in_epoch", s.batch_in_epoch},
          {"updates", s.updates},
          {"elapsed_seconds", s.elapsed_seconds},
          {"best_valid", s.best_valid},
          {"has_best", s.has_best},
          {"bad_validations", s.bad_validations},
          {"last_validated_update", s.last_validated_update},
          {"finished", s.finished},
          {"stop_reason", s.stop_reason},
          {"kept", s.kept}};
}

TrainerState trainer_state_from_json(const nlohmann::json& j, const std::string& origin) {
  if (!j.is_object()) throw InputError(str_cat(origin, ": \"pillars.state\" is not a JSON object"));
  const int64_t most = limits::kMaxUpdates; // far beyond any run; sums of two never overflow
  TrainerState s;
  s.epoch = state_integer(j, "epoch", 1, most, origin);
  s.batch_in_epoch =
      state_integer(j, "batch_in_epoch", 0, most, origin); // at most an epoch's batches: checked on --resume
  s.updates = state_integer(j, "updates", 0, most, origin);
  s.elapsed_seconds = state_number(j, "elapsed_seconds", 0, origin);
  s.best_valid = state_number(j, "best_valid", -std::numeric_limits<double>::max(), origin);
  s.has_best = field<bool>(j, "has_best", origin);
  s.bad_validations = state_integer(j, "bad_validations", 0, most, origin);
  // (absent in checkpoints written before it was recorded: treated as "none")
  s.last_validated_update =
      j.contains("last_validated_update") ? state_integer(j, "last_validated_update", -1, s.updates, origin) : -1;
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
      throw InputError(
          str_cat(state_field(origin, "kept"), " names ", nlohmann::json(name).dump(),
                  ", which is not a kept checkpoint of the run (checkpoint_e<epoch>_u<update>.safetensors, a "
                  "plain name in the run folder); refusing the list rather than deleting or reading that file"));
    if (!score.is_number() || !std::isfinite(score.get<double>()))
      throw InputError(str_cat(state_field(origin, "kept"), ": the score of ", name, " is ", score.dump(),
                               "; it must be a finite number"));
    s.kept[name] = score.get<double>();
  }
  return s;
}

} // namespace pillars::train
