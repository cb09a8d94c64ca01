// See session.h.
#include "train/session.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <set>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>

#include "decode/search.h"
#include "base/error.h"
#include "base/input_file.h"
#include "train/limits.h"
#include "base/special_tokens.h"
#include "base/atomic_file.h"
#include "base/run_guard.h"
#include "engine/passes/flops.h"
#include "runtime/nccl.h"
#include "metrics/bleu.h"
#include "metrics/rouge.h"
#include "train/checkpoint.h"
#include "train/evaluate.h"
#include "train/head_phases.h"
#include "train/memory_estimate.h"
#include "train/prepare.h"
#include "train/setup.h"
#include "train/trainer.h"

namespace pillars::train {

namespace fs = std::filesystem;

decode::SearchOptions search_options(const EvalSettings& ev, const TransformerConfig& cfg) {
  decode::SearchOptions o;
  o.beam = ev.beam;
  o.lenpen = static_cast<float>(ev.lenpen);
  o.max_len_a = static_cast<float>(ev.max_len_a);
  o.max_len_b = ev.max_len_b;
  o.pad = cfg.pad_id;
  return o;
}

namespace {

// FLOPs per target token of one forward pass, counted on the graph of a representative batch:
// one sentence pair of 32 source and 32 target tokens, or one block of 32 tokens.
double forward_flops_per_token(const TransformerConfig& cfg) {
  if (cfg.decoder_only) {
    GraphOptions o;
    o.train = false;
    return count_flops(build_lm_training_graph(cfg, 1, 32, o).graph).total() / 32.0;
  }
  return count_flops(build_seq2seq_training_graph(cfg, 1, 32, 32, 0.0f, 0, /*train=*/false).graph).total() / 32.0;
}

std::string human(double n) {
  char buf[32];
  if (n >= 1e9)
    std::snprintf(buf, sizeof buf, "%.2fG", n / 1e9);
  else if (n >= 1e6)
    std::snprintf(buf, sizeof buf, "%.2fM", n / 1e6);
  else
    std::snprintf(buf, sizeof buf, "%.1fk", n / 1e3);
  return buf;
}

// Validation by decoding (greedy, for speed): sacreBLEU or ROUGE-L F1 of the first `limit`
// validation sentences.
DecodeScorer make_decode_scorer(const PreparedSeq2Seq& p, const Experiment& e, bool rouge) {
  const size_t limit = e.train.valid_max_sentences > 0
                           ? std::min(p.valid_source.size(), static_cast<size_t>(e.train.valid_max_sentences))
                           : p.valid_source.size();
  const std::vector<std::string> sources(p.valid_source.begin(),
                                         p.valid_source.begin() + static_cast<std::ptrdiff_t>(limit));
  const std::vector<std::string> refs(p.valid_target.begin(),
                                      p.valid_target.begin() + static_cast<std::ptrdiff_t>(limit));
  const TextPipeline* pipeline = &p.pipeline;
  const EvalSettings ev = e.eval;
  const int64_t max_source_len = e.data.max_source_len;
  return [=](const TransformerConfig& cfg, const ParamStore& params) -> double {
    decode::SearchOptions o = search_options(ev, cfg);
    o.beam = 1;
    const Translations t =
        translate_corpus(cfg, params, *pipeline, sources, o, ev.batch_sentences, false, max_source_len);
    if (rouge) {
      metrics::RougeOptions ro;
      ro.use_stemmer = true;
      return 100.0 * metrics::corpus_rouge(t.text, {refs}, ro).mean.rougeL.fmeasure;
    }
    metrics::BleuOptions bo;
    bo.lowercase = ev.sacrebleu_lowercase;
    return metrics::corpus_bleu(t.text, {refs}, bo).score;
  };
}

struct Model {
  TransformerConfig cfg;
  ParamStore params;
  // Set when the model is a trained checkpoint (prune_from): where its training stood, with its
  // optimizer state (empty when the checkpoint has none).
  std::optional<TrainingStart> trained;
};

dist::Communicator& communicator(const SessionOptions& options) {
  return options.communicator ? *options.communicator : dist::single_process();
}
bool is_root(const SessionOptions& options) { return communicator(options).is_root(); }

// The data preparation of a data-parallel job, rank 0 first: it fills the data cache and writes
// the pipeline into the run directory (prepare(true)); then the other ranks read the cache
// (prepare(false): no run directory). One process just prepares.
template <typename Prepare>
auto in_turn(const SessionOptions& options, Prepare prepare) {
  dist::Communicator& comm = communicator(options);
  if (!comm.is_root()) comm.barrier();
  auto prepared = prepare(comm.is_root());
  if (comm.is_root()) comm.barrier();
  return prepared;
}

// The experiment's model for a vocabulary: initialized from the seed, or from model.init_from
// (unless resuming: the trainer restores checkpoint_last then), and described on stderr.
Model build_model(const Experiment& e, int64_t vocab, const SessionOptions& options) {
  if (!options.prune_from.empty()) { // a trained model to prune: its own config and parameters
    LoadedCheckpoint c = load_checkpoint(options.prune_from);
    if (c.config.vocab != vocab)
      throw InputError(str_cat("--from ", options.prune_from, ": the model's vocabulary has ", c.config.vocab,
                               " entries, the experiment's dictionary ", vocab,
                               " (was it trained with this experiment?)"));
    check_model_config(c, options.prune_from, model_config(e, vocab),
                       str_cat("the experiment \"", e.name, "\" (pillars prune --from)"));
    return {c.config, std::move(c.params), TrainingStart{c.state, std::move(c.optimizer_state)}};
  }
  Model m{model_config(e, vocab), {}, std::nullopt};
  check_memory(
      e, m.cfg,
      str_cat("experiment \"", e.name, "\" (vocabulary ", vocab, ")")); // again, now that the vocabulary is known
  init_transformer_params(m.cfg, m.params, static_cast<uint64_t>(e.seed));
  if (e.model.init_from && !options.resume) {
    LoadedCheckpoint from = load_checkpoint(*e.model.init_from);
    check_model_config(from, *e.model.init_from, m.cfg, str_cat("the experiment \"", e.name, "\" (model.init_from)"));
    for (const std::string& name : m.params.names()) {
      if (!from.params.contains(name) || from.params.get(name).shape() != m.params.get(name).shape())
        throw InputError(str_cat("model.init_from: ", *e.model.init_from, ": parameter \"", name,
                                 "\" is missing or has another shape"));
      m.params.get(name).copy_from(from.params.get(name));
    }
  }
  if (!options.quiet) {
    const TransformerConfig& c = m.cfg;
    const std::string layers = c.decoder_only ? str_cat(c.dec_layers) : str_cat(c.enc_layers, "+", c.dec_layers);
    std::fprintf(stderr,
                 "model: %s, %s layers, d %lld, %lld heads, FFN %lld, vocab %lld: %s parameters (%s without "
                 "embeddings), %s FLOPs per target token (forward)\n",
                 e.model.config.c_str(), layers.c_str(), static_cast<long long>(c.d_model),
                 static_cast<long long>(c.heads), static_cast<long long>(c.ffn), static_cast<long long>(c.vocab),
                 human(static_cast<double>(count_parameters(m.params, true))).c_str(),
                 human(static_cast<double>(count_parameters(m.params, false))).c_str(),
                 human(forward_flops_per_token(c)).c_str());
  }
  return m;
}

TrainOptions train_options(const Experiment& e, const std::string& run_dir, const SessionOptions& options,
                           const TextPipeline& pipeline) {
  TrainOptions to;
  to.run_dir = run_dir;
  to.resume = options.resume;
  to.quiet = options.quiet;
  to.checkpoint_extra = {{"experiment", e.name}, {"pipeline", pipeline.to_json()}};
  to.communicator = options.communicator;
  return to;
}

// After training: the evaluation of every trained run directory on its test split (with pruning,
// the first-phase model and the pruned one), unless switched off. Returns the last.
nlohmann::json final_evaluation(const std::vector<std::string>& run_dirs, const SessionOptions& options,
                                Device device) {
  if (!options.evaluate || !is_root(options)) return {}; // rank 0 evaluates
  EvalOptions eo;
  eo.quiet = options.quiet;
  eo.device = device; // a GPU run decodes its test split on the GPU
  nlohmann::json last;
  for (const std::string& dir : run_dirs) last = evaluate_run(dir, eo);
  return last;
}

// What both families do once their data is ready: the training (one phase, or the phases of a
// pruning run), then the final evaluation of every run directory made. (A model trained with
// hard-concrete gates is only meaningful with its gates, which decoding does not apply: without
// pruning it is not evaluated.)
nlohmann::json train_and_evaluate(const Experiment& e, Model& m, const RunData& data, const TrainOptions& to,
                                  const SessionOptions& options) {
  std::vector<std::string> run_dirs;
  if (e.prune.method != ght::PruneMethod::none || m.trained) {
    run_dirs = train_with_heads(e, m.cfg, m.params, data, to, m.trained ? &*m.trained : nullptr);
  } else {
    train_phase(e, e, m.cfg, m.params, data, step_context(e), to);
    if (e.heads.gates == ght::HeadGates::none) run_dirs.push_back(to.run_dir);
  }
  return final_evaluation(run_dirs, options, e.train.device);
}

// Makes, locks and fills the run directory once the data is prepared (run_experiment).
using OpenRun = std::function<void(const TextPipeline& pipeline)>;

nlohmann::json run_seq2seq(const Experiment& e, const std::string& run_dir, const SessionOptions& options,
                           const OpenRun& open_run) {
  PreparedSeq2Seq p = in_turn(options, [&](bool) { return prepare_seq2seq(e, "", !options.quiet); });
  open_run(p.pipeline);
  Model m = build_model(e, static_cast<int64_t>(p.pipeline.dictionary().size()), options);
  TrainOptions to = train_options(e, run_dir, options, p.pipeline);
  if (e.task == Task::translation && e.train.valid_bleu) to.valid_bleu = make_decode_scorer(p, e, false);
  if (e.task == Task::summarization) to.valid_rouge = make_decode_scorer(p, e, true);
  return train_and_evaluate(e, m, RunData{.pairs = &p.data}, to, options);
}

nlohmann::json run_lm(const Experiment& e, const std::string& run_dir, const SessionOptions& options,
                      const OpenRun& open_run) {
  PreparedLm p = in_turn(options, [&](bool) { return prepare_lm(e, "", !options.quiet); });
  open_run(p.pipeline);
  Model m = build_model(e, static_cast<int64_t>(p.pipeline.dictionary().size()), options);
  return train_and_evaluate(e, m, RunData{.stream = &p.data}, train_options(e, run_dir, options, p.pipeline), options);
}

} // namespace

std::string run_dir_of(const std::string& path) {
  if (fs::is_directory(path)) return path;
  if (!fs::exists(path)) throw InputError(str_cat(path, ": no such checkpoint or run directory"));
  const fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? "." : parent.string();
}

Experiment load_run_config(const std::string& run_dir) {
  const std::string path = (fs::path(run_dir) / "config.json").string();
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw InputError(str_cat(path, ": cannot read (is ", run_dir, " a run directory made by `pillars train`?)"));
  const std::string text = read_input_file(path, limits::kMaxExperimentBytes);
  if (const auto at = schema::json_too_deep(text, limits::kMaxJsonDepth))
    throw InputError(str_cat(path, ":", at->line, ":", at->column, ": invalid JSON: nested more than ",
                             limits::kMaxJsonDepth, " levels deep"));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& err) {
    throw InputError(str_cat(path, ": invalid JSON: ", err.what()));
  }
  if (j.contains("model") && j["model"].is_object()) j["model"]["init_from"] = nullptr;
  if (j.contains("data") && j["data"].is_object()) j["data"]["bpe_codes"] = nullptr;
  ValidationContext ctx = default_validation_context();
  ctx.check_memory = false; // the run exists: its training memory is not this command's concern
  return parse_experiment(j, path, ctx);
}

std::string checkpoint_path(const std::string& target, const std::string& choice, bool quiet) {
  if (!fs::is_directory(target)) {
    if (!fs::exists(target)) throw InputError(str_cat(target, ": no such checkpoint or run directory"));
    return target;
  }
  const CheckpointChoice which =
      choice.empty() ? load_run_config(target).eval.checkpoint : parse_enum<CheckpointChoice>(choice, "--checkpoint");
  const std::string chosen = enum_name(which);
  const std::string file = str_cat("checkpoint_", which == CheckpointChoice::average ? "avg" : chosen, ".safetensors");
  const fs::path path = fs::path(target) / file;
  if (fs::exists(path)) return path.string();
  if (!choice.empty())
    throw InputError(str_cat(path.string(), " does not exist (the run has no ", chosen, " checkpoint)"));
  const fs::path last = fs::path(target) / "checkpoint_last.safetensors";
  if (!fs::exists(last)) throw InputError(str_cat(target, ": no checkpoint_last.safetensors (was the run trained?)"));
  if (!quiet) std::fprintf(stderr, "note: %s does not exist; using %s\n", path.c_str(), last.c_str());
  return last.string();
}

std::vector<std::string> run_files_in(const std::string& dir) {
  static const std::set<std::string> kNames = {
      "config.json", "pipeline.json", "dict.txt",        "bpe.codes", "log.jsonl", "head_metrics.jsonl",
      "votes.json",  "prune.json",    "importance.json", ".lock",     "pruned"};
  std::vector<std::string> found;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (kNames.count(name) || name.rfind("checkpoint_", 0) == 0 || name.rfind("eval_", 0) == 0 ||
        name.find(".tmp.") != std::string::npos)
      found.push_back(name);
  }
  std::sort(found.begin(), found.end());
  return found;
}

namespace {

// The logs a resumed run appends to are read strictly first: a line that is not a JSON object
// (an edited or damaged log) is refused, naming the file and the line, rather than appended
// after and fed to every later reader (report, study tables). A cut last line (a write a kill
// interrupted, no '\n') is not an error: opening the log for appending removes it (base/log_file.h).
void check_log_file(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec))) return;
  const std::string text = read_input_file(path.string(), limits::kMaxLogBytes);
  size_t at = 0;
  for (int64_t line = 1; at < text.size(); ++line) {
    const size_t end = text.find('\n', at);
    if (end == std::string::npos) break; // the cut tail
    const nlohmann::json j = nlohmann::json::parse(text.begin() + static_cast<std::ptrdiff_t>(at),
                                                   text.begin() + static_cast<std::ptrdiff_t>(end), nullptr, false);
    if (!j.is_object())
      throw InputError(str_cat(path.string(), ":", line, ": not a JSON object (",
                               j.is_discarded() ? "invalid JSON" : j.type_name(),
                               "): the log was edited or damaged; --resume appends to it only when every line reads"));
    at = end + 1;
  }
}

void check_run_logs(const std::string& run_dir) {
  for (const char* name : {"log.jsonl", "head_metrics.jsonl", "pruned/log.jsonl", "pruned/head_metrics.jsonl"})
    check_log_file(fs::path(run_dir) / name);
}

// Fields a resumed run may change: where it stops, how it logs, how it is evaluated. Anything
// else would make the continuation a different experiment from the one the checkpoint belongs to.
bool may_change_on_resume(const std::string& path) {
  static const char* allowed[] = {"/name",
                                  "/description",
                                  "/threads",
                                  "/train/max_epochs",
                                  "/train/max_updates",
                                  "/train/max_minutes",
                                  "/train/patience",
                                  "/train/log_every",
                                  "/train/save_every_minutes",
                                  "/train/update_freq", // with the world size, it shares out each update's batches
                                  "/train/valid_max_sentences",
                                  "/train/device",
                                  "/train/attention_backend",
                                  "/train/fuse_linear_activation",
                                  "/train/fuse_linear_cross_entropy",
                                  "/eval",
                                  "/parallel"}; // how the ranks talk: the same updates either way
  for (const char* a : allowed)
    if (path == a || path.rfind(std::string(a) + "/", 0) == 0) return true;
  return false;
}

void check_resume_config(const Experiment& e, const std::string& run_dir) {
  const Experiment old = load_run_config(run_dir);
  const nlohmann::json diff = nlohmann::json::diff(to_json(old), to_json(e));
  for (const auto& change : diff) {
    const std::string path = change.at("path").get<std::string>();
    if (!may_change_on_resume(path))
      throw InputError(str_cat("--resume: the experiment differs from the run's ", run_dir, "/config.json at \"",
                               path.substr(1),
                               "\"; only stopping, logging and eval settings may change when resuming "
                               "(start a new run with --out instead)"));
  }
}

// `--overwrite`: the run folder's whole content moved aside by renaming the folder itself to a new
// sibling, "<dir>.old-<UTC time>" (with "-2", "-3"... if taken), then an empty folder made in its
// place. Nothing is deleted, and a rename never writes through a link. A folder with a .lock is
// locked for the move, so a run still writing into it is not moved from under its feet. Returns
// the new name.
std::string move_run_aside(const std::string& run_dir) {
  fs::path dir = fs::absolute(run_dir).lexically_normal();
  if (dir.filename().empty()) dir = dir.parent_path(); // "runs/x/"
  if (dir == fs::current_path() || dir == dir.root_path())
    throw InputError(
        str_cat("--overwrite: --out ", run_dir, " is the current folder or the root; refusing to move it"));
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &utc);
  fs::path aside = dir.parent_path() / str_cat(dir.filename().string(), ".old-", stamp);
  std::error_code ec;
  for (int n = 2; fs::exists(fs::symlink_status(aside, ec)); ++n)
    aside = dir.parent_path() / str_cat(dir.filename().string(), ".old-", stamp, "-", n);
  {
    // Refused (exit 2, naming the holder) while a run writes there; a folder without a .lock has
    // no pillars writer, and is not given one on its way out.
    std::optional<io::DirLock> held;
    if (fs::exists(fs::symlink_status(dir / ".lock", ec))) held.emplace(dir.string());
    fs::rename(dir, aside, ec);
  }
  if (ec) throw Error(str_cat("--overwrite: cannot move ", run_dir, " aside to ", aside.string(), ": ", ec.message()));
  return aside.string();
}

// An --out that is a link to nothing: making the folder would fail with a puzzling "File exists".
void refuse_dangling_link(const std::string& run_dir) {
  std::error_code ec;
  if (fs::is_symlink(run_dir, ec) && !fs::exists(run_dir, ec))
    throw InputError(str_cat("--out ", run_dir, ": a symbolic link to ", fs::read_symlink(run_dir, ec).string(),
                             ", which does not exist; make that folder, or give --out a folder"));
}

// The refusals of a run directory, none of which writes anything: checked before the data is
// prepared (so a refused run costs nothing and leaves nothing), and again under the lock.
// `found` is what run_files_in saw before this process made a .lock there.
// A folder that holds any of a run's files is a run: a new run never mixes its files with another's
// (a stale dict.txt or log.jsonl would be read, appended to or taken for this run's).
void refuse_run_directory(const Experiment& e, const std::string& run_dir, const SessionOptions& options,
                          const std::vector<std::string>& found) {
  if (options.overwrite && options.resume)
    throw InputError(
        "--overwrite and --resume contradict each other: --resume continues the run in --out, "
        "--overwrite moves it aside to start a new one");
  refuse_dangling_link(run_dir);
  io::refuse_file_in_the_way("--out", run_dir);
  std::error_code ec;
  if (!fs::is_directory(run_dir, ec)) return;      // a new folder: nothing in it to refuse
  if (options.overwrite && !found.empty()) return; // moved aside before anything else
  // A symbolic link among the run's files is refused before anything is written (base/run_guard.h).
  for (const fs::path& dir : {fs::path(run_dir), fs::path(run_dir) / "pruned"})
    if (fs::is_directory(dir)) io::refuse_links_in(dir.string());
  // A run exists when it has a checkpoint (or, pruning a given checkpoint, its prune.json).
  const bool has_run = options.prune_from.empty() ? fs::exists(fs::path(run_dir) / "checkpoint_last.safetensors")
                                                  : fs::exists(fs::path(run_dir) / "prune.json");
  if (!options.resume && has_run)
    throw InputError(str_cat(run_dir,
                             " already holds a run (checkpoint_last.safetensors); pass --resume to continue it, "
                             "--overwrite to move it aside, or --out DIR for a new run"));
  if (!options.resume && !options.restart_unsaved && !found.empty()) {
    std::string names;
    for (size_t i = 0; i < found.size() && i < 5; ++i) names += (i ? ", " : "") + found[i];
    if (found.size() > 5) names += str_cat(" and ", found.size() - 5, " more");
    throw InputError(str_cat("--out ", run_dir, " holds files of a run (", names,
                             "); a new run does not mix its files with "
                             "them: pass --overwrite to move them aside, --resume to continue a run, or --out DIR"));
  }
  if (options.resume && !has_run)
    throw InputError(str_cat("--resume: ", run_dir, "/",
                             options.prune_from.empty() ? "checkpoint_last.safetensors" : "prune.json",
                             " does not exist (nothing to resume)"));
  if (options.resume || (options.restart_unsaved && fs::exists(fs::path(run_dir) / "config.json")))
    check_resume_config(e, run_dir); // the same experiment, started again
  if (options.resume || options.restart_unsaved) check_run_logs(run_dir);
}

// A folder whose run saved nothing yet: none of its files is a checkpoint, an evaluation or a
// pruning step's record (only start-up files, the lock, log lines, which the restart rewrites or
// appends to, and temporaries of an interrupted save).
bool saved_nothing(const std::vector<std::string>& found) {
  for (const std::string& name : found) {
    if (name.find(".tmp.") != std::string::npos) continue; // an interrupted save: removed under the lock
    if (name.rfind("checkpoint_", 0) == 0 || name.rfind("eval_", 0) == 0 || name == "pruned" || name == "prune.json" ||
        name == "votes.json" || name == "importance.json")
      return false;
  }
  return true;
}

// Makes the run directory (or checks the one to resume), takes its lock into `lock` (held until
// the run and its evaluation end: a second `pillars train` into the same folder is refused, naming
// the process that holds it), removes temporaries of interrupted saves and writes config.json and
// the text pipeline (pipeline.json, dict.txt, bpe.codes). With --overwrite, a folder holding a
// run's files is moved aside first (move_run_aside), and the note says where to, even with --quiet.
void open_run_directory(const Experiment& e, const std::string& run_dir, const SessionOptions& options,
                        const TextPipeline& pipeline, std::optional<io::DirLock>& lock) {
  if (options.overwrite && !options.resume && !run_files_in(run_dir).empty()) {
    const std::string aside = move_run_aside(run_dir);
    std::fprintf(stderr, "--overwrite: moved the earlier content of %s to %s\n", run_dir.c_str(), aside.c_str());
  }
  std::error_code ec;
  refuse_dangling_link(run_dir);
  fs::create_directories(run_dir, ec);
  if (ec || !fs::is_directory(run_dir))
    io::throw_path_error(ec.value(), str_cat("--out ", run_dir, ": cannot make the run directory: ",
                                             ec ? ec.message() : "a file of that name exists"));
  const std::vector<std::string> found = run_files_in(run_dir); // before the lock makes a .lock
  lock.emplace(run_dir);
  refuse_run_directory(e, run_dir, options, found); // again: the folder may have changed while the data was prepared
  // Temporaries of saves that a killed process left behind (we hold the lock: nobody writes them now).
  for (const fs::path& dir : {fs::path(run_dir), fs::path(run_dir) / "pruned"})
    if (fs::is_directory(dir))
      if (const int n = io::remove_stale_temp_files(dir.string()); n > 0 && !options.quiet)
        std::fprintf(stderr, "removed %d temporary file%s of an interrupted save from %s\n", n, n == 1 ? "" : "s",
                     dir.c_str());
  io::atomic_write_file((fs::path(run_dir) / "config.json").string(), to_json(e).dump(2) + "\n");
  // A resumed run's pipeline is the one it started with (its data settings cannot change on
  // --resume): its files are written again only if one is missing.
  const bool has_pipeline =
      fs::exists(fs::path(run_dir) / "pipeline.json") && fs::exists(fs::path(run_dir) / "dict.txt");
  if (!options.resume || !has_pipeline) pipeline.save(run_dir);
}

// What a data-parallel job cannot do yet, refused before anything is written.
void check_data_parallel(const Experiment& e, dist::Communicator& comm) {
  const std::string job = str_cat("a data-parallel job (", comm.describe(), ")");
  const bool gpu = e.train.device == Device::cuda;
  if (e.parallel.backend == DistBackend::mpi && gpu)
    throw InputError(str_cat("parallel.backend \"mpi\" sums gradients on the CPU, but train.device is \"cuda\" in ",
                             job, ": use \"nccl\" or \"auto\""));
  if (e.parallel.backend == DistBackend::nccl && !gpu)
    throw InputError(str_cat("parallel.backend \"nccl\" sums gradients on GPUs, but train.device is \"cpu\" in ", job,
                             ": use \"mpi\" or \"auto\""));
  if (gpu && !nccl_available())
    throw InputError(str_cat("train.device \"cuda\" in ", job,
                             " needs NCCL, which this build of pillars lacks (it comes with "
                             "the CUDA toolkit; configure where libnccl is found), or train on the CPU"));
}

} // namespace

nlohmann::json run_experiment(const Experiment& e, const SessionOptions& options) {
  const std::string run_dir = options.run_dir.empty() ? (fs::path("runs") / e.name).string() : options.run_dir;
  if (options.resume && !fs::is_directory(run_dir))
    throw InputError(str_cat("--resume: ", run_dir, " does not exist (nothing to resume)"));
  SessionOptions opts = options;
  if (opts.resume &&
      !fs::exists(fs::path(run_dir) / (opts.prune_from.empty() ? "checkpoint_last.safetensors" : "prune.json")) &&
      saved_nothing(run_files_in(run_dir)))
    opts.resume = false, opts.restart_unsaved = true;
  // The checkpoints the run will start from are read once before the run directory is made, so a
  // missing or damaged one leaves nothing behind; the message names the option that gave it.
  auto check_start = [](const std::string& what, const std::string& path) {
    try {
      (void)load_checkpoint(path);
    } catch (const InputError& err) {
      throw InputError(str_cat(what, ": ", err.what()));
    }
  };
  if (!options.prune_from.empty()) check_start("--from", options.prune_from);
  if (e.model.init_from && !opts.resume) check_start("model.init_from", *e.model.init_from);
  // Rank 0 checks the run directory before any work, and makes and locks it once the data is
  // prepared (a dataset that cannot be read, or a vocabulary refused, leaves no run folder behind);
  // the other ranks of a data-parallel job start once it has (and stop with it when it refuses:
  // the launcher ends the job).
  dist::Communicator& comm = communicator(opts);
  if (comm.size() > 1) check_data_parallel(e, comm);
  if (opts.restart_unsaved && comm.is_root() && !opts.quiet)
    std::fprintf(stderr, "--resume: %s holds a run that saved nothing yet; it starts again from update 0\n",
                 run_dir.c_str());
  if (comm.is_root()) {
    // A live run's folder: say who holds it, whatever else it holds (under our own lock, later,
    // DirLock says it).
    if (fs::is_directory(run_dir)) io::refuse_if_in_use(run_dir);
    refuse_run_directory(e, run_dir, opts, run_files_in(run_dir));
  }
  std::optional<io::DirLock> lock;
  const OpenRun open_run = [&](const TextPipeline& pipeline) {
    if (comm.is_root()) open_run_directory(e, run_dir, opts, pipeline, lock);
    comm.barrier();
  };
  SessionOptions here = opts;
  here.quiet = opts.quiet || !comm.is_root(); // one voice
  switch (e.task) {
    case Task::translation:
    case Task::summarization:
      return run_seq2seq(e, run_dir, here, open_run);
    case Task::language_modeling:
      return run_lm(e, run_dir, here, open_run);
  }
  throw Error("run_experiment: unknown task");
}

} // namespace pillars::train
