// The experiment file: one JSON document that says what to train, on what, and how to evaluate
// it. `pillars train EXP.json [--set optim.lr=1e-3]...` reads it through load_experiment().
//
//   Experiment e = load_experiment("experiments/multi30k-de-en.json", {"optim.lr=1e-3"}, default_validation_context());
//   e.optim.lr;                    // every field typed and checked, every default filled in
//   write(run_dir / "config.json", to_json(e).dump(2));  // the resolved config, re-loadable as is
//
// Every field, its type, range, default and description is one row of the table in
// experiment_fields_*.cpp (experiment_table.h; `pillars schema --markdown` prints it;
// experiments/README.md shows it). The table drives validation, defaults and the JSON Schema.
// Bad input throws pillars::InputError (the CLI exits with 2) naming the file and the field:
//   experiments/x.json: unknown key "optim.warmup_update" — did you mean "optim.warmup_updates"?
//   experiments/x.json: "optim.lr" must be a number > 0, got -1
//   experiments/x.json:3:7: invalid JSON: syntax error while parsing object - ...
//   experiments/x.json: --set optim.lr=-1: "optim.lr" must be a number > 0, got -1
// Only the first error is reported. Relative paths in the file (data.bpe_codes, model.init_from)
// are relative to the current directory and must be readable.
#pragma once
#include <array>
#include <functional>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/enum_json.h"
#include "datasets/registry.h"
#include "engine/ops/linear_act.h"
#include "engine/tensor.h"
#include "ght/settings.h"
#include "runtime/cuda_device.h"
#include "models/transformer.h"
#include "train/schema.h"

namespace pillars {

// Every setting that is a word is an enum from here on (base/enum_names.h): the words live in one
// table beside each enum, the schema's allowed values come from that table, and nothing after
// loading compares a setting with a string.
using data::Task; // translation | language_modeling | summarization (datasets/registry.h)

enum class Tokenizer : uint8_t { moses, none };
constexpr auto enum_table(Tokenizer) {
  return enum_words<Tokenizer>({{Tokenizer::moses, "moses"}, {Tokenizer::none, "none"}});
}

enum class Optimizer : uint8_t { adam, adamw, sgd };
constexpr auto enum_table(Optimizer) {
  return enum_words<Optimizer>({{Optimizer::adam, "adam"}, {Optimizer::adamw, "adamw"}, {Optimizer::sgd, "sgd"}});
}

enum class Schedule : uint8_t { inverse_sqrt, cosine, linear, constant };
constexpr auto enum_table(Schedule) {
  return enum_words<Schedule>({{Schedule::inverse_sqrt, "inverse_sqrt"},
                               {Schedule::cosine, "cosine"},
                               {Schedule::linear, "linear"},
                               {Schedule::constant, "constant"}});
}

enum class BestMetric : uint8_t { loss, bleu, rouge, ppl };
constexpr auto enum_table(BestMetric) {
  return enum_words<BestMetric>(
      {{BestMetric::loss, "loss"}, {BestMetric::bleu, "bleu"}, {BestMetric::rouge, "rouge"}, {BestMetric::ppl, "ppl"}});
}

enum class CheckpointChoice : uint8_t { best, last, average };
constexpr auto enum_table(CheckpointChoice) {
  return enum_words<CheckpointChoice>(
      {{CheckpointChoice::best, "best"}, {CheckpointChoice::last, "last"}, {CheckpointChoice::average, "average"}});
}

// How a data-parallel job (several processes under mpirun or srun) sums its gradients: MPI's
// collectives on the CPU, NCCL's on the GPU (auto: the one for train.device).
enum class DistBackend : uint8_t { automatic, mpi, nccl };
constexpr auto enum_table(DistBackend) {
  return enum_words<DistBackend>(
      {{DistBackend::automatic, "auto"}, {DistBackend::mpi, "mpi"}, {DistBackend::nccl, "nccl"}});
}

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
  std::optional<ops::Activation> activation;
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
  Device device{};
  Precision precision{};                // base/precision.h; what bf16 covers differs by device (the schema)
  AttentionBackend attention_backend{}; // cudnn: cuda only
  bool fuse_linear_activation{};
  bool fuse_linear_cross_entropy{};
  Precision saved_activations{}; // bf16: the saved_activations pass (engine/passes/saved_activations.h)
  bool operator==(const TrainSettings&) const = default;
};

// Data-parallel training (train/data_parallel.h); a run in one process ignores it.
struct ParallelSettings {
  DistBackend backend{};
  double bucket_mb{};   // gradient bucket size
  int64_t zero_stage{}; // 0: every rank keeps the optimizer state; 1: it is sharded over the ranks
  bool overlap{};       // start each bucket's sum during the backward (false: all after it)
  bool operator==(const ParallelSettings&) const = default;
};

struct EvalSettings {
  std::string split; // "" = data.test_split
  CheckpointChoice checkpoint{};
  int64_t beam{};
  double lenpen{}, max_len_a{};
  int64_t max_len_b{}, batch_sentences{};
  bool sacrebleu_lowercase{};
  Precision precision{}; // the decoding's matmul precision on the CPU
  bool operator==(const EvalSettings&) const = default;
};

// The `heads` and `prune` sections are the GHT method's own settings (ght/settings.h).
using ght::HeadsSettings;
using ght::PruneSettings;

struct Experiment {
  std::string name; // names the run directory; default: the file's stem
  Task task{};
  int64_t seed{}, threads{}; // threads 0 = all cores
  std::string description;
  DataSettings data;
  ModelSettings model;
  OptimSettings optim;
  TrainSettings train;
  ParallelSettings parallel;
  EvalSettings eval;
  HeadsSettings heads;
  PruneSettings prune;
  bool operator==(const Experiment&) const = default;
};

// What the caller knows that this code does not: the dataset registry and the model configs.
struct ValidationContext {
  std::vector<std::string> dataset_names; // known datasets; empty = skip the check
  std::vector<std::string> model_configs; // known named model configs; empty = skip the check
  // The dataset of a known name, to check the task, splits and fields the file names against it
  // (nullptr, or no function: skip those checks).
  std::function<const data::DatasetSpec*(const std::string&)> find_dataset;
  bool check_memory = false; // estimate the run's memory against this machine's (train/memory_estimate.h)
};
// The context the CLI uses.
ValidationContext default_validation_context();

// Reads, applies each "key.path=value" override (later ones win), validates. Throws InputError.
Experiment load_experiment(const std::string& path, const std::vector<std::string>& overrides = {},
                           const ValidationContext& ctx = {});
// Validates an already parsed document; `origin` names it in messages and its stem is the default
// name.
Experiment parse_experiment(const nlohmann::json& j, const std::string& origin, const ValidationContext& ctx = {});
// load_experiment without the file and the overrides: parses `text` as the file's contents
// (tests/fuzz/fuzz_experiment.cpp feeds it). Throws InputError.
Experiment parse_experiment_text(const std::string& text, const std::string& origin, const ValidationContext& ctx = {});
// The resolved config, every field present (unset overrides as null); parse_experiment(to_json(e))
// gives back e.
nlohmann::json to_json(const Experiment& e);

// The table behind all of the above, the JSON Schema it implies, and its Markdown field table.
const std::vector<schema::Field>& experiment_fields();
nlohmann::json experiment_json_schema();
std::string experiment_markdown();

} // namespace pillars
