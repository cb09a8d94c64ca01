// See evaluate.h. Also evaluate_run (declared in session.h, beside the run directory's other
// readers): the evaluation of a trained run that `pillars eval` and the end of training run.
#include "train/evaluate.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "base/atomic_file.h"
#include "base/error.h"
#include "base/progress.h"
#include "base/thread_times.h"
#include "datasets/registry.h"
#include "decode/step_decoder.h"
#include "metrics/bleu.h"
#include "metrics/fairseq_bleu.h"
#include "metrics/perplexity.h"
#include "metrics/rouge.h"
#include "steps/steps.h"
#include "steps/task.h"
#include "text/bpe.h"
#include "train/checkpoint.h"
#include "train/device_scope.h"
#include "train/pass_list.h"
#include "train/prepare.h"
#include "train/session.h"

namespace pillars::train {

namespace fs = std::filesystem;

namespace {

// The indices of `seqs`, shortest sequence first (ties in input order): batches of similar lengths.
std::vector<size_t> shortest_first(const std::vector<std::vector<int32_t>>& seqs) {
  std::vector<size_t> order(seqs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return seqs[a].size() < seqs[b].size(); });
  return order;
}

} // namespace

std::string load_note(const Translations& t) {
  if (!t.waiting_share || *t.waiting_share <= kLoadedWaitingShare) return "";
  return str_cat("; the threads waited for a core ", static_cast<int>(100 * *t.waiting_share + 0.5),
                 " % of the time (another process held it), so the speed measured the load too");
}

Translations translate_corpus(const TransformerConfig& cfg, const ParamStore& params, const TextPipeline& pipeline,
                              const std::vector<std::string>& sources, const decode::SearchOptions& search,
                              int64_t batch_sentences, bool progress, int64_t max_source_len,
                              std::optional<Precision> precision) {
  PILLARS_CHECK(batch_sentences >= 1, "translate_corpus: batch_sentences must be >= 1");
  Translations t;
  t.text.resize(sources.size());
  t.ids.resize(sources.size());
  std::vector<std::vector<int32_t>> src(sources.size());
  for (size_t i = 0; i < sources.size(); ++i) {
    src[i] = pipeline.encode_source(sources[i]);
    if (src[i].size() > static_cast<size_t>(max_source_len)) t.truncated.push_back(i);
    truncate_keeping_eos(src[i], static_cast<size_t>(max_source_len));
  }
  const std::vector<size_t> order = shortest_first(src);

  decode::StepDecoder decoder(cfg, params, params.device()); // where the parameters are: the CPU or a GPU
  if (precision) decoder.set_precision(*precision);
  // A wide beam decodes fewer sentences at a time: every row holds key/value caches, so the rows of
  // a batch (sentences × beam) stay within kMaxRows whatever the beam.
  constexpr int64_t kMaxRows = 2048;
  batch_sentences = std::max<int64_t>(1, std::min(batch_sentences, kMaxRows / std::max<int64_t>(search.beam, 1)));
  const auto t0 = std::chrono::steady_clock::now();
  const std::optional<ThreadTimes> times0 = process_thread_times();
  ProgressLine line(progress ? stderr : nullptr, "decoded", "sentences");
  for (size_t at = 0; at < order.size(); at += static_cast<size_t>(batch_sentences)) {
    const size_t end = std::min(order.size(), at + static_cast<size_t>(batch_sentences));
    std::vector<std::vector<int32_t>> batch;
    for (size_t j = at; j < end; ++j) batch.push_back(src[order[j]]);
    const auto hyps = decode::beam_search(decoder, batch, search);
    for (size_t j = at; j < end; ++j) {
      t.ids[order[j]] = hyps[j - at].front().tokens;
      t.generated_tokens += static_cast<int64_t>(t.ids[order[j]].size());
    }
    line.update(static_cast<int64_t>(end), static_cast<int64_t>(order.size()));
  }
  t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  t.waiting_share = waiting_share(times0, process_thread_times());
  line.finish(static_cast<int64_t>(order.size()), t.seconds);
  for (size_t i = 0; i < sources.size(); ++i) t.text[i] = pipeline.decode_target(t.ids[i]);
  return t;
}

BleuReport score_bleu(const Translations& t, const std::vector<std::vector<std::string>>& refs,
                      const TextPipeline& pipeline, bool lowercase) {
  PILLARS_CHECK(!refs.empty(), "score_bleu: no references");
  for (const auto& r : refs)
    PILLARS_CHECK(r.size() == t.text.size(), "score_bleu: ", t.text.size(), " hypotheses but ", r.size(),
                  " references");
  BleuReport b;
  metrics::BleuOptions o;
  o.lowercase = lowercase;
  const metrics::BleuResult s = metrics::corpus_bleu(t.text, refs, o);
  b.sacrebleu = s.score;
  b.sacrebleu_line = s.format();
  // fairseq's tokenized BLEU: hypotheses and the first references as the model's tokenizer sees them.
  std::vector<std::string> hyp_tok, ref_tok;
  for (size_t i = 0; i < t.text.size(); ++i) {
    hyp_tok.push_back(pipeline.tokenized_target(t.ids[i]));
    std::string r = pipeline.segment(refs[0][i], /*source=*/false);
    ref_tok.push_back(pipeline.settings().bpe ? text::remove_bpe(r) : r);
  }
  metrics::FairseqBleu scorer;
  for (size_t i = 0; i < hyp_tok.size(); ++i) scorer.add_tokens(ref_tok[i], hyp_tok[i]);
  b.tokenized = scorer.score();
  b.tokenized_line = scorer.result_string();
  return b;
}

std::vector<SentenceNll> sentence_nll(const TransformerConfig& cfg, const ParamStore& params,
                                      const std::vector<std::vector<int32_t>>& src,
                                      const std::vector<std::vector<int32_t>>& tgt, int64_t batch_sentences,
                                      std::optional<Precision> precision) {
  PILLARS_CHECK(src.size() == tgt.size() && batch_sentences >= 1, "sentence_nll: ", src.size(), " sources for ",
                tgt.size(), " targets");
  std::vector<SentenceNll> out(src.size());
  // Shortest targets first, so that a batch steps about as often as its sentences have tokens
  // rather than as often as the longest of a random few.
  const std::vector<size_t> order = shortest_first(tgt);
  decode::StepDecoder decoder(cfg, params, params.device());
  if (precision) decoder.set_precision(*precision);
  const int64_t V = cfg.vocab;
  for (size_t at = 0; at < order.size(); at += static_cast<size_t>(batch_sentences)) {
    const size_t end = std::min(order.size(), at + static_cast<size_t>(batch_sentences));
    const size_t N = end - at;
    std::vector<std::vector<int32_t>> sources;
    for (size_t r = 0; r < N; ++r) sources.push_back(src[order[at + r]]);
    const size_t longest = tgt[order[end - 1]].size(); // the batch's last: sorted by length
    decoder.start(sources, /*rows_per_sentence=*/1, static_cast<int64_t>(longest) + 1);
    decode::StepDecoder::Step step;
    for (size_t r = 0; r < N; ++r)
      step.row_origin.push_back(static_cast<int32_t>(r)), step.sentence_origin.push_back(static_cast<int32_t>(r));
    step.tokens.resize(N);
    for (size_t t = 0; t < longest; ++t) {
      // Row r is fed y_{t−1} (eos at t = 0) and scored on y_t; rows past their end are fed eos
      // and not scored.
      for (size_t r = 0; r < N; ++r) {
        const std::vector<int32_t>& y = tgt[order[at + r]];
        step.tokens[r] = t == 0 || t > y.size() ? step.eos : y[t - 1];
      }
      step.positions.assign(N, static_cast<int32_t>(t));
      decoder.step(step);
      const Tensor lp = decoder.log_probs(); // (N, V)
      const float* p = lp.data<float>();
      for (size_t r = 0; r < N; ++r) {
        const size_t i = order[at + r];
        if (t >= tgt[i].size()) continue;
        out[i].nll -= static_cast<double>(p[static_cast<int64_t>(r) * V + tgt[i][t]]);
        ++out[i].tokens;
      }
    }
  }
  return out;
}

namespace {

void write_lines(const std::string& path, const std::vector<std::string>& lines) {
  std::string all;
  for (const std::string& l : lines) all += l + "\n";
  io::atomic_write_file(path, all);
}

// Perplexity of a language model on a split: the split's stream in blocks of data.block_size,
// each block's loss in `blocks` ("nll tokens" per line of eval_<split>.nll), the totals their sums.
nlohmann::json evaluate_lm(const Experiment& e, LoadedCheckpoint& ck, const TextPipeline& pipeline,
                           const std::string& split, std::vector<std::pair<double, int64_t>>& blocks) {
  const std::vector<int32_t> stream = lm_stream(pipeline, data::read_field(e.data.dataset, split, "text"));
  steps::LmSteps model(ck.config, ck.params, step_recipes({}));
  blocks = steps::lm_block_nll(model, stream, e.data.block_size, static_cast<int32_t>(ck.config.pad_id));
  double nll = 0;
  int64_t tokens = 0;
  for (const auto& [block_nll, block_tokens] : blocks) nll += block_nll, tokens += block_tokens;
  const metrics::Perplexity ppl = metrics::perplexity(nll, tokens);
  return {{"split", split},  {"tokens", tokens}, {"blocks", blocks.size()},
          {"loss", ppl.nll}, {"ppl", ppl.ppl},   {"bits_per_token", ppl.bits}};
}

// "nll tokens" per line (eval_<split>.nll): each sentence's or block's loss, which a paired
// bootstrap of the loss resamples (study/table.h).
std::vector<std::string> nll_lines(const std::vector<std::pair<double, int64_t>>& rows) {
  std::vector<std::string> lines;
  for (const auto& [nll, tokens] : rows) {
    char line[64];
    std::snprintf(line, sizeof line, "%.17g %lld", nll, static_cast<long long>(tokens));
    lines.push_back(line);
  }
  return lines;
}

// How an eval record names its checkpoint: relative to the run folder (it is always directly in
// it: run_dir_of), so that a run moved or copied elsewhere reads its own checkpoint.
std::string recorded_checkpoint(const std::string& checkpoint) { return fs::path(checkpoint).filename().string(); }

// Whether the evaluation's results can be written into the run folder, found out before the
// decoding (minutes) rather than after: a temporary file is made there and removed. A folder that
// cannot take it (read-only, no permission, full) is a run-time failure, exit 1, naming the folder.
void check_writable(const std::string& run_dir, const std::string& name) {
  try {
    io::AtomicFile probe((fs::path(run_dir) / name).string());
    probe.write("{}\n"); // never committed: the destructor removes the temporary
  } catch (const std::exception& err) {
    throw Error(str_cat("eval: cannot write its results into ", run_dir, " (checked before decoding): ", err.what()));
  }
}

} // namespace

nlohmann::json evaluate_run(const std::string& target, const EvalOptions& options) {
  const std::string run_dir = run_dir_of(target);
  const Experiment e = load_run_config(run_dir);
  if (options.shuffle_sources && e.task == Task::language_modeling)
    throw InputError("--shuffle-sources: a language model has no sources (seq2seq runs only)");
  const std::string checkpoint = checkpoint_path(target, options.checkpoint, options.quiet);
  LoadedCheckpoint ck = load_checkpoint(checkpoint);
  const TextPipeline pipeline = TextPipeline::load(run_dir);
  check_run_checkpoint(ck, checkpoint, pipeline, run_dir, e); // its dictionary and its model
  const std::string split = !options.split.empty()  ? options.split
                            : !e.eval.split.empty() ? e.eval.split
                                                    : test_split_of(e);
  if (!options.split.empty()) {
    try {
      (void)data::find_dataset(e.data.dataset).split(split);
    } catch (const InputError& err) {
      throw InputError(str_cat("--split ", split, ": ", err.what()));
    }
  }
  // The files it writes, a link among them refused now rather than after the evaluation.
  const std::string stem = "eval_" + split + (options.shuffle_sources ? "_shuffled" : "");
  for (const char* ext : {".json", ".hyp", ".nll"}) io::refuse_symlink((fs::path(run_dir) / (stem + ext)).string());
  check_writable(run_dir, stem + ".json");
  if (e.task == Task::language_modeling) {
    std::vector<std::pair<double, int64_t>> blocks;
    nlohmann::json result = evaluate_lm(e, ck, pipeline, split, blocks);
    result["checkpoint"] = recorded_checkpoint(checkpoint);
    write_lines((fs::path(run_dir) / (stem + ".nll")).string(), nll_lines(blocks));
    io::atomic_write_file((fs::path(run_dir) / ("eval_" + split + ".json")).string(), result.dump(2) + "\n");
    if (!options.quiet)
      std::fprintf(stderr, "eval %s on %s: loss %.4f, perplexity %.2f over %lld tokens\n",
                   fs::path(checkpoint).filename().c_str(), split.c_str(), result["loss"].get<double>(),
                   result["ppl"].get<double>(), static_cast<long long>(result["tokens"].get<int64_t>()));
    return result;
  }
  // The decoding's precision (translations and per-sentence loss; the perplexity above and below is
  // the fp32 teacher-forced graph's). bf16 is the CPU's.
  const Precision precision = options.precision.value_or(e.eval.precision);
  if (precision == Precision::bf16 && options.device != Device::cpu)
    throw InputError(
        "eval.precision / --precision bf16 decodes on the CPU; on a GPU the decoding's precision is the device's");
  EvalSplit data = read_eval_split(e, split);
  if (options.shuffle_sources && !data.source.empty())
    std::rotate(data.source.begin(), data.source.begin() + 1, data.source.end());

  // Teacher-forced loss and perplexity on the split (first reference).
  const EncodedPairs pairs = encode_eval_pairs(e, pipeline, data);
  steps::Seq2SeqSteps model(ck.config, ck.params, step_recipes({}));
  const auto [nll, tokens] =
      steps::seq2seq_nll(model, pairs.src, pairs.tgt, e.data.max_tokens, static_cast<int32_t>(ck.config.pad_id));
  const metrics::Perplexity ppl = metrics::perplexity(nll, tokens);
  nlohmann::json result = {{"checkpoint", recorded_checkpoint(checkpoint)},
                           {"split", split},
                           {"sentences", data.source.size()},
                           {"loss", ppl.nll},
                           {"ppl", ppl.ppl}};
  if (options.shuffle_sources) result["shuffled_sources"] = true;

  decode::SearchOptions so = search_options(e.eval, ck.config);
  if (options.beam) so.beam = *options.beam;
  if (options.lenpen) so.lenpen = static_cast<float>(*options.lenpen);
  if (options.max_len_a) so.max_len_a = static_cast<float>(*options.max_len_a);
  if (options.max_len_b) so.max_len_b = *options.max_len_b;
  const int64_t batch_sentences = options.batch_sentences.value_or(e.eval.batch_sentences);
  const ParamStore on_device = ck.params.on(options.device); // the decoder runs where its parameters are
  const Translations t = translate_corpus(ck.config, on_device, pipeline, data.source, so, batch_sentences,
                                          !options.quiet, e.data.max_source_len, precision);
  result["beam"] = so.beam;
  if (precision != Precision::fp32) result["precision"] = enum_name(precision);
  result["lenpen"] = so.lenpen;
  result["sentences_per_second"] = t.sentences_per_second();
  result["decode_seconds"] = t.seconds;
  // How much of that time the threads waited for a core another process held: the speed is the
  // code's only where this is near 0 (the study table leaves out speeds measured under load).
  if (t.waiting_share) result["decode_waiting_share"] = *t.waiting_share;
  // Where the speed was measured: two runs' speeds compare only on the same CPU and threads.
  result["machine"] = machine_record(options.device);
  if (e.task == Task::translation) {
    const BleuReport b = score_bleu(t, data.refs, pipeline, e.eval.sacrebleu_lowercase);
    result["bleu"] = b.sacrebleu;
    result["sacrebleu"] = b.sacrebleu_line;
    result["tokenized_bleu"] = b.tokenized;
    result["tokenized_bleu_line"] = b.tokenized_line;
  } else {
    metrics::RougeOptions ro;
    ro.use_stemmer = true;
    const metrics::RougeCorpus r = metrics::corpus_rouge(t.text, data.refs, ro); // refs[k][i]
    result["rouge1"] = 100 * r.mean.rouge1.fmeasure;
    result["rouge2"] = 100 * r.mean.rouge2.fmeasure;
    result["rougeL"] = 100 * r.mean.rougeL.fmeasure;
  }
  write_lines((fs::path(run_dir) / (stem + ".hyp")).string(), t.text);
  std::vector<std::pair<double, int64_t>> sentences;
  for (const SentenceNll& s : sentence_nll(ck.config, on_device, pairs.src, pairs.tgt, batch_sentences, precision))
    sentences.emplace_back(s.nll, s.tokens);
  write_lines((fs::path(run_dir) / (stem + ".nll")).string(), nll_lines(sentences));
  io::atomic_write_file((fs::path(run_dir) / (stem + ".json")).string(), result.dump(2) + "\n");
  if (!options.quiet) {
    std::fprintf(stderr, "eval %s on %s%s: loss %.4f, ppl %.2f, %.1f sentences/s (beam %lld)%s\n",
                 fs::path(checkpoint).filename().c_str(), split.c_str(),
                 options.shuffle_sources ? " (shuffled sources)" : "", result["loss"].get<double>(),
                 result["ppl"].get<double>(), t.sentences_per_second(), static_cast<long long>(so.beam),
                 load_note(t).c_str());
  }
  return result;
}

} // namespace pillars::train
