// The experiment file: one JSON document that says what to train, on what, and how to evaluate
// it. `pillars train EXP.json [--set optim.lr=1e-3]...` reads it through load_experiment().
//
//   Experiment e = load_experiment("experiments/multi30k-de-en.json", {"optim.lr=1e-3"}, default_validation_context());
//   e.optim.lr;                    // every field typed and checked, every default filled in
//   write(run_dir / "config.json", to_json(e).dump(2));  // the resolved config, re-loadable as is
//
// Every field, its type, range, default and description is one row of the table in
// experiment.cpp (`pillars schema --markdown` prints it; experiments/README.md shows it). The
// table drives validation, defaults and the JSON Schema. Bad input throws pillars::InputError
// (the CLI exits with 2) naming the file and the field:
//   experiments/x.json: unknown key "optim.warmup_update" — did you mean "optim.warmup_updates"?
//   experiments/x.json: "optim.lr" must be a number > 0, got -1
//   experiments/x.json:3:7: invalid JSON: syntax error while parsing object - ...
//   experiments/x.json: --set optim.lr=-1: "optim.lr" must be a number > 0, got -1
// Only the first error is reported. Relative paths in the file (data.bpe_codes, model.init_from)
// are relative to the current directory and must be readable.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "train/schema.h"

namespace pillars {

enum class Task { translation, language_modeling, summarization };
enum class Tokenizer { moses, none };
enum class Optimizer { adam, adamw, sgd };
enum class Schedule { inverse_sqrt, cosine, linear, constant };
enum class BestMetric { loss, bleu, rouge, ppl };
enum class CheckpointChoice { best, last, average };

NLOHMANN_JSON_SERIALIZE_ENUM(Task, {{Task::translation, "translation"}, {Task::language_modeling, "language_modeling"}, {Task::summarization, "summarization"}})
NLOHMANN_JSON_SERIALIZE_ENUM(Tokenizer, {{Tokenizer::moses, "moses"}, {Tokenizer::none, "none"}})
NLOHMANN_JSON_SERIALIZE_ENUM(Optimizer, {{Optimizer::adam, "adam"}, {Optimizer::adamw, "adamw"}, {Optimizer::sgd, "sgd"}})
NLOHMANN_JSON_SERIALIZE_ENUM(Schedule, {{Schedule::inverse_sqrt, "inverse_sqrt"}, {Schedule::cosine, "cosine"}, {Schedule::linear, "linear"}, {Schedule::constant, "constant"}})
NLOHMANN_JSON_SERIALIZE_ENUM(BestMetric, {{BestMetric::loss, "loss"}, {BestMetric::bleu, "bleu"}, {BestMetric::rouge, "rouge"}, {BestMetric::ppl, "ppl"}})
NLOHMANN_JSON_SERIALIZE_ENUM(CheckpointChoice, {{CheckpointChoice::best, "best"}, {CheckpointChoice::last, "last"}, {CheckpointChoice::average, "average"}})

// "language_modeling" for Task::language_modeling, and so on for every enum above.
template <class E> std::string enum_name(E e) { return nlohmann::json(e).get<std::string>(); }

// The members carry no defaults of their own: parse_experiment() fills every one from the table
// (a default-constructed Experiment means nothing). Field meanings: `pillars schema --markdown`.
struct DataSettings {
  std::string dataset, source, target, train_split, valid_split, test_split; // "" split = the dataset's default
  Tokenizer tokenizer{};
  bool lowercase{}, bpe_joint{};
  int64_t bpe_merges{};                 // 0 = word level
  std::optional<std::string> bpe_codes; // use this codes file instead of learning one
  int64_t vocab_threshold{}, vocab_max{}, max_tokens{}, max_source_len{}, max_target_len{}, block_size{};
  double train_fraction{};
  bool operator==(const DataSettings&) const = default;
};

// Overrides of the named config: nullopt = the config's own value.
struct ModelSettings {
  std::string config; // a named config: "small", "base", "lm-small", ...
  std::optional<int64_t> d_model, heads, ffn, enc_layers, dec_layers, layers;
  std::optional<bool> pre_norm, share_all_embeddings, share_decoder_input_output_embed;
  std::optional<std::string> activation; // "relu" | "gelu", as TransformerConfig::activation
  std::optional<double> dropout, attention_dropout, activation_dropout;
  std::optional<std::string> init_from; // a checkpoint to start from
  bool operator==(const ModelSettings&) const = default;
};

struct OptimSettings {
  Optimizer optimizer{};
  double lr{};
  std::array<double, 2> betas{};
  double eps{}, weight_decay{}, momentum{};
  bool nesterov{};
  Schedule schedule{};
  int64_t warmup_updates{};
  double warmup_init_lr{}, min_lr{}, clip_norm{};
  bool operator==(const OptimSettings&) const = default;
};

struct TrainSettings {
  int64_t max_epochs{}, max_updates{}; // 0 updates = no limit
  double max_minutes{}, label_smoothing{};
  int64_t update_freq{}, patience{};
  BestMetric best_metric{};
  bool valid_bleu{};
  int64_t valid_max_sentences{}, keep_best{}, average_best{}, log_every{}, validate_every{};
  double save_every_minutes{};
  std::string device;    // "cpu" | "cuda"
  std::string precision; // "fp32" | "bf16" (cuda)
  std::string attention_backend; // "pillars" | "cudnn" (cuda) | "naive"
  bool fuse_linear_activation{};
  bool operator==(const TrainSettings&) const = default;
};

struct EvalSettings {
  std::string split; // "" = data.test_split
  CheckpointChoice checkpoint{};
  int64_t beam{};
  double lenpen{}, max_len_a{};
  int64_t max_len_b{}, batch_sentences{};
  bool sacrebleu_lowercase{};
  bool operator==(const EvalSettings&) const = default;
};

// Head-level methods during training: GHT's group-constrained training, the baselines' regularisers
// and gates, and the head-diversity measurements (../shared/GHT.md §3, §5, §6). Enumerations are
// kept as their names (validated by the table) and parsed where they are used (ght/).
struct HeadsSettings {
  std::string regularizer;      // "none" | "gct" | "disagreement"
  std::string feature_map;      // "V" | "A" | "O"
  int64_t groups{};             // C
  double alpha{}, beta{};       // GCT weights
  std::string gct_variant;      // "metric" (Eq. 4B) | "classification" (Eq. 4A)
  std::string gct_scale;        // "per_token" | "per_batch"
  std::string disagreement;     // "subspace" | "position" | "output" (Li et al. 2018)
  double lambda{};              // disagreement weight
  double drophead{};            // Scheduled DropHead's peak rate; 0 = off
  std::string gates;            // "none" | "hard_concrete" (Voita et al. 2019)
  double l0_lambda{};           // weight of the gates' L0 penalty
  bool metrics{};               // measure head diversity on a held-out batch
  int64_t metrics_every{};      // ... every this many updates (0 = at each validation)
  int64_t metrics_sentences{};  // size of the held-out batch
  bool operator==(const HeadsSettings&) const = default;
};

// Pruning heads after the first phase, then fine-tuning the smaller model (GHT.md §4).
struct PruneSettings {
  std::string method;           // "none" | "v2s" | "importance" (Michel et al.) | "gates" (Voita et al.)
  std::string trigger;          // "epoch" | "shift"
  int64_t epoch{};              // epoch trigger: prune after this many epochs (0 = before training)
  double rho{};                 // shift trigger: relative centroid shift between validations
  std::string keep;             // V2S rule: "per_group" | "top_c" | "score" | "random" | "random_member"
  int64_t heads{};              // heads kept per module (0 = heads.groups)
  int64_t vote_batches{};       // training batches voted on (0 = all)
  bool finetune_regularizer{};  // keep the head regulariser on while fine-tuning (an ablation)
  int64_t finetune_epochs{}, finetune_patience{};
  double finetune_minutes{};
  bool operator==(const PruneSettings&) const = default;
};

struct Experiment {
  std::string name; // names the run directory; default: the file's stem
  Task task{};
  int64_t seed{}, threads{}; // threads 0 = all cores
  std::string description;
  DataSettings data;
  ModelSettings model;
  OptimSettings optim;
  TrainSettings train;
  EvalSettings eval;
  HeadsSettings heads;
  PruneSettings prune;
  bool operator==(const Experiment&) const = default;
};

// What the caller knows that this code does not: the dataset registry and the model configs.
struct ValidationContext {
  std::vector<std::string> dataset_names; // known datasets; empty = skip the check
  std::vector<std::string> model_configs; // known named model configs; empty = skip the check
};
// The context the CLI uses.
ValidationContext default_validation_context();

// Reads, applies each "key.path=value" override (later ones win), validates. Throws InputError.
Experiment load_experiment(const std::string& path, const std::vector<std::string>& overrides = {},
                           const ValidationContext& ctx = {});
// Validates an already parsed document; `origin` names it in messages and its stem is the default
// name.
Experiment parse_experiment(const nlohmann::json& j, const std::string& origin, const ValidationContext& ctx = {});
// The resolved config, every field present (unset overrides as null); parse_experiment(to_json(e))
// gives back e.
nlohmann::json to_json(const Experiment& e);

// The table behind all of the above, the JSON Schema it implies, and its Markdown field table.
const std::vector<schema::Field>& experiment_fields();
nlohmann::json experiment_json_schema();
std::string experiment_markdown();

} // namespace pillars
