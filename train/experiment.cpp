// The experiment file: its field table (the single source of types, ranges, defaults and
// descriptions; its rows are in experiment_fields_*.cpp, see experiment_table.h), loading with
// `--set` overrides, the checks that span fields, and the resolved config. See experiment.h.
#include "train/experiment.h"
#include "train/experiment_table.h"

#include "datasets/registry.h"
#include "models/transformer.h"
#include "train/memory_estimate.h"
#include "train/setup.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <regex>

#include "base/error.h"
#include "base/input_file.h"
#include "train/limits.h"

namespace pillars {

using nlohmann::json;
using schema::FieldError;

ValidationContext default_validation_context() {
  return {data::dataset_names(), transformer_config_names(),
          [](const std::string& name) { return &data::find_dataset(name); },
          /*check_memory=*/true};
}

namespace {

using experiment_table::Entry;

// The whole table, in order: the rows of experiment_fields_model.cpp, _training.cpp, _heads.cpp.
const std::vector<Entry>& entries() {
  static const std::vector<Entry> table = [] {
    std::vector<Entry> rows = experiment_table::model_rows();
    for (Entry& entry : experiment_table::training_rows()) rows.push_back(std::move(entry));
    for (Entry& entry : experiment_table::heads_rows()) rows.push_back(std::move(entry));
    return rows;
  }();
  return table;
}

json::json_pointer pointer_of(const std::string& dotted) {
  json::json_pointer p;
  std::string rest = dotted;
  for (size_t dot; (dot = rest.find('.')) != std::string::npos; rest = rest.substr(dot + 1)) p /= rest.substr(0, dot);
  return p / rest;
}

std::string quote(const std::string& s) { return schema::describe_value(json(s), false); }

std::string list(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

void check_known(const std::string& path, const std::string& what, const std::string& value,
                 const std::vector<std::string>& known) {
  if (known.empty() || std::find(known.begin(), known.end(), value) != known.end()) return;
  const std::string near = schema::nearest(value, known);
  throw FieldError(path, quote(path) + ": unknown " + what + " " + quote(value) +
                             (near.empty() ? "" : " — did you mean " + quote(near) + "?") + " (known: " + list(known) +
                             ")");
}

// A path field (data.bpe_codes, model.init_from) must name a regular file that can be opened:
// a directory, a FIFO (which would block) or a device is refused here, when the file is loaded.
void check_readable(const std::string& path, const std::string& file) {
  try {
    check_regular_file(file);
  } catch (const InputError& e) {
    throw FieldError(path, quote(path) + ": " + e.what());
  }
}

// The dataset named by data.dataset serves the task, and has every split and field the file
// names (or defaults to): a typo in "data.test_split" is found now, not after the training run.
void check_dataset_references(const Experiment& e, const data::DatasetSpec& d) {
  if (d.task != e.task)
    throw FieldError("data.dataset", str_cat("\"data.dataset\" ", quote(d.name), " is a ", enum_name(d.task),
                                             " dataset, but \"task\" is ", quote(enum_name(e.task))));
  std::vector<std::string> splits;
  for (const data::SplitSpec& s : d.splits) splits.push_back(s.name);
  // The fields every split must have: the two sides, or the language model's text.
  const std::vector<std::pair<std::string, std::string>> fields =
      e.task == Task::language_modeling ? std::vector<std::pair<std::string, std::string>>{{"data.dataset", "text"}}
                                        : std::vector<std::pair<std::string, std::string>>{
                                              {"data.source", e.data.source}, {"data.target", e.data.target}};
  auto check_split = [&](const std::string& path, const std::string& chosen, const std::string& fallback,
                         const char* role) {
    if (chosen.empty() && fallback.empty())
      throw FieldError(path, str_cat("dataset ", quote(d.name), " has no default ", role, " split: set ", quote(path),
                                     " (its splits: ", list(splits), ")"));
    const std::string name = chosen.empty() ? fallback : chosen;
    const auto split =
        std::find_if(d.splits.begin(), d.splits.end(), [&](const data::SplitSpec& s) { return s.name == name; });
    if (split == d.splits.end()) {
      check_known(path, str_cat("split of dataset ", quote(d.name), ":"), name, splits);
      throw FieldError(path, str_cat(quote(path), ": dataset ", quote(d.name), " has no splits"));
    }
    std::vector<std::string> names;
    for (const data::NamedFile& f : split->fields) names.push_back(f.name);
    for (const auto& [field_path, field] : fields)
      if (std::find(names.begin(), names.end(), field) == names.end()) {
        check_known(field_path, str_cat("field of split ", quote(name), " of dataset ", quote(d.name), ":"), field,
                    names);
        throw FieldError(field_path, str_cat(quote(field_path), ": split ", quote(name), " of dataset ", quote(d.name),
                                             " has no fields"));
      }
  };
  check_split("data.train_split", e.data.train_split, d.train, "train");
  check_split("data.valid_split", e.data.valid_split, d.valid, "valid");
  check_split("data.test_split", e.data.test_split, d.test, "test");
  if (!e.eval.split.empty()) check_split("eval.split", e.eval.split, "", "eval");
}

// The model as it will be built (the named config with the file's overrides; the vocabulary is
// not known before the data is prepared, so the estimate takes the BPE's size), checked against
// what the other sections ask of it, and its memory against this machine's.
void check_model(const Experiment& e, const ValidationContext& ctx) {
  // The dictionary's first entries are <s>, <pad>, </s> and <unk>: a smaller limit keeps no word.
  if (e.data.vocab_max > 0 && e.data.vocab_max <= 4)
    throw FieldError("data.vocab_max",
                     str_cat("\"data.vocab_max\" (", e.data.vocab_max,
                             ") leaves no room for a word: the first 4 "
                             "entries are <s>, <pad>, </s> and <unk>; use 0 (no limit) or at least 5"));
  const int64_t vocab_guess = e.data.vocab_max > 0    ? e.data.vocab_max
                              : e.data.bpe_merges > 0 ? e.data.bpe_merges + 4
                                                      : 4 + 1;
  TransformerConfig cfg;
  try {
    cfg = train::model_config(e, vocab_guess);
  } catch (const InputError& err) {
    throw FieldError("model.config", err.what());
  }
  if (e.prune.heads > cfg.heads)
    throw FieldError("prune.heads",
                     str_cat("\"prune.heads\" (", e.prune.heads, ") must not exceed the heads of a module (", cfg.heads,
                             "): a module cannot keep more heads than it has"));
  const bool groups_used = e.heads.regularizer == ght::Regularizer::gct || e.prune.method == ght::PruneMethod::v2s ||
                           (e.prune.method != ght::PruneMethod::none && e.prune.heads == 0);
  if (groups_used && e.heads.groups > cfg.heads)
    throw FieldError("heads.groups",
                     str_cat("\"heads.groups\" (", e.heads.groups, ") must not exceed the heads of a module (",
                             cfg.heads, "): HUDS clusters the heads into at most that many groups"));
  if (ctx.check_memory) {
    try {
      train::check_memory(e, cfg, "");
    } catch (const InputError& err) {
      const std::string what = err.what();
      throw FieldError("model", what.substr(what.find_first_not_of(": ")));
    }
  }
}

// Checks that span fields, then the names the context knows; run on the typed, defaulted
// experiment. (Readable paths are checked after this, from the table.)
void check_semantics(const Experiment& e, const ValidationContext& ctx) {
  const bool lm = e.task == Task::language_modeling;
  const std::string task = quote(enum_name(e.task));
  if (lm) {
    auto refuse = [](const std::string& path) {
      throw FieldError(path, quote(path) +
                                 " is for the encoder-decoder tasks (translation, summarization); a language_modeling "
                                 "model's depth is \"model.layers\"");
    };
    if (e.model.enc_layers) refuse("model.enc_layers");
    if (e.model.dec_layers) refuse("model.dec_layers");
    if (e.model.share_all_embeddings.value_or(false))
      throw FieldError(
          "model.share_all_embeddings",
          "\"model.share_all_embeddings\" needs an encoder, which a language_modeling model does not have");
  } else if (e.model.layers) {
    throw FieldError("model.layers", "\"model.layers\" is for language_modeling (a decoder-only model); task " + task +
                                         " sets \"model.enc_layers\" and \"model.dec_layers\"");
  }
  if (e.model.d_model && e.model.heads && *e.model.d_model % *e.model.heads != 0)
    throw FieldError("model.heads", str_cat("\"model.d_model\" (", *e.model.d_model,
                                            ") must be divisible by \"model.heads\" (", *e.model.heads, ")"));
  if (e.task == Task::translation && e.data.source == e.data.target)
    throw FieldError("data.target", "\"data.source\" and \"data.target\" are both " + quote(e.data.source));

  if (e.train.best_metric == BestMetric::bleu && e.task != Task::translation)
    throw FieldError("train.best_metric", "\"train.best_metric\" \"bleu\" needs task \"translation\", not " + task);
  if (e.train.best_metric == BestMetric::bleu && !e.train.valid_bleu)
    throw FieldError(
        "train.best_metric",
        "\"train.best_metric\" is \"bleu\" but \"train.valid_bleu\" is false: validation would not score BLEU");
  if (e.train.best_metric == BestMetric::rouge && e.task != Task::summarization)
    throw FieldError("train.best_metric", "\"train.best_metric\" \"rouge\" needs task \"summarization\", not " + task);
  if (e.train.average_best > e.train.keep_best)
    throw FieldError("train.average_best", str_cat("\"train.average_best\" (", e.train.average_best,
                                                   ") must not exceed \"train.keep_best\" (", e.train.keep_best,
                                                   "): only that many best checkpoints are kept"));
  if (e.eval.checkpoint == CheckpointChoice::average && e.train.average_best == 0)
    throw FieldError(
        "eval.checkpoint",
        "\"eval.checkpoint\" is \"average\" but \"train.average_best\" is 0, so no averaged checkpoint is made");
  if (e.heads.regularizer == ght::Regularizer::gct && e.heads.gct_variant == ght::GctVariant::classification &&
      e.heads.feature_map == ght::FeatureMap::A)
    throw FieldError(
        "heads.gct_variant",
        "\"heads.gct_variant\" \"classification\" needs \"heads.feature_map\" V or O (A has no fixed width)");
  if (e.prune.method == ght::PruneMethod::gates && e.heads.gates != ght::HeadGates::hard_concrete)
    throw FieldError(
        "prune.method",
        "\"prune.method\" \"gates\" needs \"heads.gates\": \"hard_concrete\" (there are no gates to read)");
  if (e.prune.trigger == ght::PruneTrigger::shift && !e.heads.metrics)
    throw FieldError("prune.trigger",
                     "\"prune.trigger\" \"shift\" measures how the heads' feature maps move on the held-out batch: it "
                     "needs \"heads.metrics\" true");
  // Under "continue" both phases share train.max_updates, and phase 1 leaves prune.finetune_updates of
  // them to fine-tuning: it stops at train.max_updates − prune.finetune_updates at the latest, which
  // must leave it at least one update (0 would read as "no limit").
  if (e.prune.method != ght::PruneMethod::none && e.prune.finetune_schedule == ght::FinetuneSchedule::continue_ &&
      e.train.max_updates > 0 && e.prune.finetune_updates >= e.train.max_updates)
    throw FieldError(
        "prune.finetune_updates",
        str_cat("\"prune.finetune_updates\" (", e.prune.finetune_updates, ") must be less than \"train.max_updates\" (",
                e.train.max_updates,
                "): with \"prune.finetune_schedule\" \"continue\" both phases share train.max_updates, "
                "and phase 1 stops at train.max_updates − prune.finetune_updates at the latest (0 = fine-tune until "
                "train.max_updates)"));
  if (e.optim.min_lr > e.optim.lr)
    throw FieldError("optim.min_lr", str_cat("\"optim.min_lr\" (", e.optim.min_lr, ") must not exceed \"optim.lr\" (",
                                             e.optim.lr, ")"));
  if (e.optim.warmup_init_lr > e.optim.lr)
    throw FieldError("optim.warmup_init_lr", str_cat("\"optim.warmup_init_lr\" (", e.optim.warmup_init_lr,
                                                     ") must not exceed \"optim.lr\" (", e.optim.lr, ")"));

  if (e.eval.max_len_a * static_cast<double>(e.data.max_source_len) + static_cast<double>(e.eval.max_len_b) >
      limits::kMaxOutputLength)
    throw FieldError("eval.max_len_a", str_cat("\"eval.max_len_a\" × \"data.max_source_len\" + \"eval.max_len_b\" (",
                                               e.eval.max_len_a, " × ", e.data.max_source_len, " + ", e.eval.max_len_b,
                                               ") allows outputs longer than ", limits::kMaxOutputLength, " tokens"));

  // Last, what the outside world knows: the file is consistent in itself by now.
  if (ctx.find_dataset && !ctx.dataset_names.empty() &&
      std::find(ctx.dataset_names.begin(), ctx.dataset_names.end(), e.data.dataset) == ctx.dataset_names.end()) {
    try { // an imported dataset whose manifest is damaged is not listed: say so, rather than "unknown"
      (void)ctx.find_dataset(e.data.dataset);
    } catch (const InputError& err) {
      if (std::string(err.what()).find("manifest") != std::string::npos)
        throw FieldError("data.dataset", quote("data.dataset") + ": " + err.what());
    }
  }
  check_known("data.dataset", "dataset", e.data.dataset, ctx.dataset_names);
  check_known("model.config", "model config", e.model.config, ctx.model_configs);
  if (const data::DatasetSpec* d =
          ctx.find_dataset && !ctx.dataset_names.empty() ? ctx.find_dataset(e.data.dataset) : nullptr)
    check_dataset_references(e, *d);
  if (!ctx.model_configs.empty()) check_model(e, ctx);
}

// parse_experiment without the origin prefix: throws FieldError, so that load_experiment can tell
// which --set an error came from.
Experiment parse_fields(json j, const std::string& origin, const ValidationContext& ctx) {
  if (j.is_object()) { // defaults that depend on the file or on other fields
    if (!j.contains("name")) j["name"] = std::filesystem::path(origin).stem().string();
    if (j.value("task", json()) == "summarization" && j.contains("data") && j["data"].is_object()) {
      if (!j["data"].contains("source")) j["data"]["source"] = "source";
      if (!j["data"].contains("target")) j["data"]["target"] = "summary";
    }
  }
  const json resolved = schema::validate(j, experiment_fields());
  Experiment e;
  for (const Entry& entry : entries())
    if (entry.read) entry.read(e, resolved.at(pointer_of(entry.field.path)));
  check_semantics(e, ctx);
  for (const schema::Field& f : experiment_fields()) // data.bpe_codes, model.init_from
    if (const json& v = resolved.at(pointer_of(f.path)); f.readable_path && v.is_string())
      check_readable(f.path, v.get<std::string>());
  return e;
}

std::string read_file(const std::string& path) { return read_input_file(path, limits::kMaxExperimentBytes); }

// `s` with every byte that is not part of valid UTF-8 (or is a control character) written as \xNN,
// so that a message never carries broken text to the terminal.
std::string printable(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool ok = len > 0 && i + len <= s.size() && (c >= 0x20 || c == '\t') && c != 0x7F && !(len == 2 && c < 0xC2);
    for (size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) >> 6) == 0x2;
    if (ok) {
      out.append(s, i, len);
      i += len;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
      ++i;
    }
  }
  return out;
}

// Parses JSON text; a syntax error names the line and column, a repeated key its path (JSON
// allows both copies; nlohmann would silently keep the last).
json parse_json(const std::string& text, const std::string& origin) {
  std::vector<std::pair<std::vector<std::string>, std::string>> stack; // per open container: keys seen, current key
  auto callback = [&](int, json::parse_event_t event, json& parsed) {
    using P = json::parse_event_t;
    if (event == P::object_start || event == P::array_start) {
      stack.push_back({{}, event == P::array_start ? "[]" : ""});
    } else if (event == P::object_end || event == P::array_end) {
      stack.pop_back();
    } else if (event == P::key) {
      auto& [seen, current] = stack.back();
      const std::string key = parsed.get<std::string>();
      std::string path;
      for (size_t i = 0; i + 1 < stack.size(); ++i) path += (i ? "." : "") + stack[i].second;
      path += (path.empty() ? "" : ".") + key;
      if (std::find(seen.begin(), seen.end(), key) != seen.end())
        throw InputError(origin + ": duplicate key " + quote(path));
      seen.push_back(key);
      current = key;
    }
    return true;
  };
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    throw InputError(origin + ": invalid JSON: the file is empty");
  if (const auto at = schema::json_too_deep(text, limits::kMaxJsonDepth)) // before nlohmann sees it (schema.h says why)
    throw InputError(str_cat(origin, ":", at->line, ":", at->column, ": invalid JSON: nested more than ",
                             limits::kMaxJsonDepth, " levels deep (an experiment file needs 2)"));
  try {
    return json::parse(text, callback);
  } catch (const json::parse_error& e) {
    static const std::regex where(R"(at line (\d+), column (\d+): (.*)$)");
    std::smatch m;
    const std::string what = e.what();
    if (std::regex_search(what, m, where))
      throw InputError(origin + ":" + m[1].str() + ":" + m[2].str() + ": invalid JSON: " + printable(m[3].str()));
    const size_t colon = what.find(": ");
    throw InputError(origin +
                     ": invalid JSON: " + printable(colon == std::string::npos ? what : what.substr(colon + 2)));
  } catch (const json::exception& e) { // out_of_range 406: a number literal beyond double ("1e400")
    std::string what = e.what();
    if (const size_t bracket = what.find("] "); bracket != std::string::npos) what = what.substr(bracket + 2);
    // The field is the key the parser had reached (the open containers' current keys); the place,
    // where the literal the message quotes first occurs.
    std::string field;
    for (const auto& [seen, current] : stack)
      field += (field.empty() || current == "[]" ? "" : ".") + (current == "[]" ? "[]" : current);
    std::string where;
    const size_t q1 = what.find('\''), q2 = what.rfind('\'');
    if (q1 != std::string::npos && q2 > q1 + 1)
      if (const size_t at = text.find(what.substr(q1 + 1, q2 - q1 - 1)); at != std::string::npos) {
        const size_t line =
            1 + static_cast<size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
        const size_t line_start = text.rfind('\n', at);
        where = str_cat(":", line, ":", at - (line_start == std::string::npos ? 0 : line_start + 1) + 1);
      }
    throw InputError(origin + where + ": invalid JSON" + (field.empty() ? "" : " at " + quote(field)) + ": " +
                     printable(what));
  }
}

// Does override `assignment` explain the error at `path` (whose message is `message`)?
bool caused_by(const std::string& assignment, const std::string& path, const std::string& message) {
  const std::string key = assignment.substr(0, assignment.find('='));
  auto under = [](const std::string& a, const std::string& b) {
    return a.size() > b.size() && a.compare(0, b.size(), b) == 0 && (a[b.size()] == '.' || a[b.size()] == '[');
  };
  return key == path || under(path, key) || (!path.empty() && under(key, path)) ||
         message.find(quote(key)) != std::string::npos;
}

} // namespace

const std::vector<schema::Field>& experiment_fields() {
  static const std::vector<schema::Field> fields = [] {
    std::vector<schema::Field> f;
    for (const Entry& e : entries()) f.push_back(e.field);
    return f;
  }();
  return fields;
}

Experiment parse_experiment(const json& j, const std::string& origin, const ValidationContext& ctx) {
  try {
    return parse_fields(j, origin, ctx);
  } catch (const FieldError& e) {
    throw InputError(origin + ": " + e.what());
  }
}

Experiment load_experiment(const std::string& path, const std::vector<std::string>& overrides,
                           const ValidationContext& ctx) {
  json j = parse_json(read_file(path), path);
  for (const std::string& o : overrides) {
    try {
      schema::apply_override(j, o, experiment_fields());
    } catch (const FieldError& e) {
      throw InputError(path + ": --set " + printable(o) + ": " + e.what());
    }
  }
  try {
    return parse_fields(std::move(j), path, ctx);
  } catch (const FieldError& e) {
    for (auto o = overrides.rbegin(); o != overrides.rend(); ++o) // the last override of a key wins, so blame it
      if (caused_by(*o, e.path, e.what())) throw InputError(path + ": --set " + printable(*o) + ": " + e.what());
    throw InputError(path + ": " + e.what());
  }
}

json to_json(const Experiment& e) {
  json j = json::object();
  for (const Entry& entry : entries()) j[pointer_of(entry.field.path)] = entry.write ? entry.write(e) : json::object();
  return j;
}

json experiment_json_schema() {
  return schema::json_schema(
      experiment_fields(), "Pillars experiment",
      "An experiment file for `pillars train`: what to train, on what data, and how to evaluate it.");
}

std::string experiment_markdown() { return schema::markdown_table(experiment_fields()); }

Experiment parse_experiment_text(const std::string& text, const std::string& origin, const ValidationContext& ctx) {
  return parse_experiment(parse_json(text, origin), origin, ctx);
}

} // namespace pillars
