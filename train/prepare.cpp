// See prepare.h.
#include "train/prepare.h"

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "datasets/cache.h"
#include "datasets/registry.h"
#include "engine/error.h"
#include "text/token_cache.h"

namespace pillars::train {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string or_default(const std::string& chosen, const std::string& fallback, const char* what, const std::string& dataset) {
  if (!chosen.empty()) return chosen;
  if (fallback.empty()) throw InputError(str_cat("dataset \"", dataset, "\" has no default ", what, " split; set data.", what, "_split"));
  return fallback;
}

// Moses has rules per language; fields like "de" or "en.tok" name theirs, summarisation fields are English.
std::string language_of(const std::string& field) {
  const std::string base = field.substr(0, field.find('.'));
  return base.size() == 2 ? base : "en";
}

// Every reference field of a split: the target field, then target2, target3, ... as present.
std::vector<std::string> reference_fields(const data::DatasetSpec& d, const std::string& split, const std::string& target) {
  std::vector<std::string> fields = {target};
  const data::SplitSpec& s = d.split(split);
  for (int k = 2; k < 10; ++k) {
    const std::string name = target + std::to_string(k);
    for (const auto& f : s.fields)
      if (f.name == name) fields.push_back(name);
  }
  return fields;
}

std::vector<std::vector<int32_t>> to_lists(const text::TokenizedCorpus& c) {
  std::vector<std::vector<int32_t>> out(c.num_lines());
  for (size_t i = 0; i < c.num_lines(); ++i) out[i].assign(c.line(i).begin(), c.line(i).end());
  return out;
}

text::TokenizedCorpus to_corpus(const std::vector<std::vector<int32_t>>& lists) {
  text::TokenizedCorpus c;
  for (const auto& l : lists) c.add_line(l);
  return c;
}

} // namespace

std::vector<int32_t> lm_stream(const TextPipeline& pipeline, const std::vector<std::string>& lines) {
  std::vector<int32_t> stream;
  for (const std::string& line : lines) {
    const std::vector<int32_t> ids = pipeline.ids(pipeline.segment(line, false));
    stream.insert(stream.end(), ids.begin(), ids.end());
  }
  return stream;
}

PreparedLm prepare_lm(const Experiment& e, const std::string& run_dir, bool verbose) {
  const auto t0 = Clock::now();
  const DataSettings& ds = e.data;
  std::vector<std::string> train = data::read_field(ds.dataset, train_split_of(e), "text");
  if (ds.train_fraction < 1.0)
    train.resize(std::max<size_t>(1, static_cast<size_t>(ds.train_fraction * static_cast<double>(train.size()) + 0.5)));
  const std::vector<std::string> valid = data::read_field(ds.dataset, valid_split_of(e), "text");
  PipelineSettings ps;
  ps.moses = ds.tokenizer == Tokenizer::moses;
  ps.lowercase = ds.lowercase;
  ps.bpe = ds.bpe_merges > 0 || ds.bpe_codes.has_value();

  text::Hasher h;
  h.add("pillars-prepare-lm-v1").add(uint64_t{ps.moses}).add(uint64_t{ps.lowercase}).add(static_cast<uint64_t>(ds.bpe_merges));
  h.add(ds.bpe_codes ? text::format_bpe_codes(text::read_bpe_codes(*ds.bpe_codes)) : "");
  h.add(static_cast<uint64_t>(ds.vocab_threshold)).add(static_cast<uint64_t>(ds.vocab_max));
  for (const std::vector<std::string>* side : std::initializer_list<const std::vector<std::string>*>{&train, &valid}) {
    h.add(static_cast<uint64_t>(side->size()));
    for (const std::string& line : *side) h.add(line);
  }
  char key[17];
  std::snprintf(key, sizeof key, "%016llx", static_cast<unsigned long long>(h.value()));
  const fs::path dir = fs::path(data::cache_root()) / "prepared" / key;

  std::optional<text::BpeCodes> codes;
  std::optional<text::Dictionary> dict;
  std::optional<text::TokenizedCorpus> streams[2];
  if (fs::exists(dir / "dict.txt") && (!ps.bpe || fs::exists(dir / "bpe.codes"))) {
    streams[0] = text::load_token_cache((dir / "train.bin").string(), h.value());
    streams[1] = text::load_token_cache((dir / "valid.bin").string(), h.value());
  }
  if (streams[0] && streams[1]) {
    dict = text::Dictionary::load((dir / "dict.txt").string());
    if (ps.bpe) codes = text::read_bpe_codes((dir / "bpe.codes").string());
    if (verbose) std::fprintf(stderr, "data: %s loaded from the cache %s\n", ds.dataset.c_str(), dir.c_str());
  } else {
    PipelineSettings tok_only = ps;
    tok_only.bpe = false;
    const TextPipeline tokenizer(tok_only, std::nullopt, text::Dictionary());
    std::vector<std::string> seg[2] = {train, valid};
    for (auto& side : seg)
      for (std::string& line : side) line = tokenizer.segment(line, false);
    if (ps.bpe) {
      if (ds.bpe_codes) {
        codes = text::read_bpe_codes(*ds.bpe_codes);
      } else {
        text::WordCounts counts;
        for (const std::string& line : seg[0]) text::count_words(line, counts);
        text::LearnBpeOptions lo;
        lo.num_merges = static_cast<int>(ds.bpe_merges);
        codes = text::learn_bpe(counts, lo);
      }
      text::BpeApplier bpe(*codes);
      for (auto& side : seg)
        for (std::string& line : side) line = bpe.apply_line(line);
    }
    text::Dictionary d;
    for (const std::string& line : seg[0]) d.add_line(line);
    d.finalize(ds.vocab_threshold > 0 ? ds.vocab_threshold : -1, ds.vocab_max > 0 ? ds.vocab_max : -1, 8);
    fs::create_directories(dir);
    const char* names[2] = {"train.bin", "valid.bin"};
    for (int i = 0; i < 2; ++i) {
      text::TokenizedCorpus c;
      std::vector<int32_t> all;
      for (const std::string& line : seg[i]) {
        const std::vector<int32_t> ids = d.encode_line(line, true);
        all.insert(all.end(), ids.begin(), ids.end());
      }
      c.add_line(all);
      text::save_token_cache((dir / names[i]).string(), h.value(), c);
      streams[i] = std::move(c);
    }
    if (codes) text::write_bpe_codes((dir / "bpe.codes").string(), *codes);
    d.save((dir / "dict.txt").string());
    dict = std::move(d);
    if (verbose) std::fprintf(stderr, "data: %s: %zu training tokens, dictionary of %zu symbols (%.1fs)\n", ds.dataset.c_str(),
                              streams[0]->ids.size(), dict->size(), since(t0));
  }
  PreparedLm p{TextPipeline(ps, codes, *dict), {}};
  p.data.train = std::move(streams[0]->ids);
  p.data.valid = std::move(streams[1]->ids);
  if (!run_dir.empty()) {
    fs::create_directories(run_dir);
    p.pipeline.save(run_dir);
  }
  return p;
}

std::string train_split_of(const Experiment& e) {
  return or_default(e.data.train_split, data::find_dataset(e.data.dataset).train, "train", e.data.dataset);
}
std::string valid_split_of(const Experiment& e) {
  return or_default(e.data.valid_split, data::find_dataset(e.data.dataset).valid, "valid", e.data.dataset);
}
std::string test_split_of(const Experiment& e) {
  return or_default(e.data.test_split, data::find_dataset(e.data.dataset).test, "test", e.data.dataset);
}

EvalSplit read_eval_split(const Experiment& e, const std::string& split) {
  const data::DatasetSpec& d = data::find_dataset(e.data.dataset);
  EvalSplit s;
  s.name = split;
  s.source = data::read_field(e.data.dataset, split, e.data.source);
  for (const std::string& field : reference_fields(d, split, e.data.target))
    s.refs.push_back(data::read_field(e.data.dataset, split, field));
  return s;
}

PreparedSeq2Seq prepare_seq2seq(const Experiment& e, const std::string& run_dir, bool verbose) {
  const auto t0 = Clock::now();
  const DataSettings& ds = e.data;
  if (!ds.bpe_joint && (ds.bpe_merges > 0 || ds.bpe_codes))
    throw InputError("data.bpe_joint = false is not supported: source and target share one BPE and one dictionary "
                     "(the model's embeddings are joint)");
  const std::string train_split = train_split_of(e), valid_split = valid_split_of(e);
  std::vector<std::string> train_src = data::read_field(ds.dataset, train_split, ds.source);
  std::vector<std::string> train_tgt = data::read_field(ds.dataset, train_split, ds.target);
  if (ds.train_fraction < 1.0) {
    const size_t keep = std::max<size_t>(1, static_cast<size_t>(ds.train_fraction * static_cast<double>(train_src.size()) + 0.5));
    train_src.resize(keep), train_tgt.resize(keep);
  }
  std::vector<std::string> valid_src = data::read_field(ds.dataset, valid_split, ds.source);
  std::vector<std::string> valid_tgt = data::read_field(ds.dataset, valid_split, ds.target);

  PipelineSettings ps;
  ps.source_lang = language_of(ds.source), ps.target_lang = language_of(ds.target);
  ps.moses = ds.tokenizer == Tokenizer::moses;
  ps.lowercase = ds.lowercase;
  ps.bpe = ds.bpe_merges > 0 || ds.bpe_codes.has_value();
  std::optional<text::BpeCodes> given_codes;
  if (ds.bpe_codes) given_codes = text::read_bpe_codes(*ds.bpe_codes);

  // The cache key: every input line and every setting the result depends on.
  text::Hasher h;
  h.add("pillars-prepare-v1").add(ps.source_lang).add(ps.target_lang).add(uint64_t{ps.moses}).add(uint64_t{ps.lowercase});
  h.add(static_cast<uint64_t>(ds.bpe_merges)).add(given_codes ? text::format_bpe_codes(*given_codes) : "");
  h.add(static_cast<uint64_t>(ds.vocab_threshold)).add(static_cast<uint64_t>(ds.vocab_max));
  for (const auto* side : {&train_src, &train_tgt, &valid_src, &valid_tgt}) {
    h.add(static_cast<uint64_t>(side->size()));
    for (const std::string& line : *side) h.add(line);
  }
  char key[17];
  std::snprintf(key, sizeof key, "%016llx", static_cast<unsigned long long>(h.value()));
  const fs::path dir = fs::path(data::cache_root()) / "prepared" / key;
  const std::string names[4] = {"train.src", "train.tgt", "valid.src", "valid.tgt"};

  std::optional<text::BpeCodes> codes;
  std::optional<text::Dictionary> dict;
  std::vector<std::vector<int32_t>> ids[4];
  bool cached = fs::exists(dir / "dict.txt") && (!ps.bpe || fs::exists(dir / "bpe.codes"));
  if (cached) {
    for (int i = 0; i < 4 && cached; ++i) {
      auto c = text::load_token_cache((dir / (names[i] + ".bin")).string(), h.value());
      if (!c) cached = false;
      else ids[i] = to_lists(*c);
    }
  }
  if (cached) {
    dict = text::Dictionary::load((dir / "dict.txt").string());
    if (ps.bpe) codes = text::read_bpe_codes((dir / "bpe.codes").string());
    if (verbose) std::fprintf(stderr, "data: %s (%s → %s) loaded from the cache %s\n", ds.dataset.c_str(), ds.source.c_str(),
                              ds.target.c_str(), dir.c_str());
  } else {
    // 1. Tokenize (Moses) without BPE: a pipeline with no codes and an empty dictionary.
    PipelineSettings tok_only = ps;
    tok_only.bpe = false;
    const TextPipeline tokenizer(tok_only, std::nullopt, text::Dictionary());
    std::vector<std::string> seg[4] = {train_src, train_tgt, valid_src, valid_tgt};
    for (int i = 0; i < 4; ++i)
      for (std::string& line : seg[i]) line = tokenizer.segment(line, i % 2 == 0);
    if (verbose) std::fprintf(stderr, "data: tokenized %zu + %zu pairs (%.1fs)\n", train_src.size(), valid_src.size(), since(t0));
    // 2. BPE, learned jointly on the training split.
    if (ps.bpe) {
      if (given_codes) {
        codes = given_codes;
      } else {
        const auto t1 = Clock::now();
        text::WordCounts counts;
        for (int i = 0; i < 2; ++i)
          for (const std::string& line : seg[i]) text::count_words(line, counts);
        text::LearnBpeOptions lo;
        lo.num_merges = static_cast<int>(ds.bpe_merges);
        codes = text::learn_bpe(counts, lo);
        if (verbose) std::fprintf(stderr, "data: learned %zu BPE merges on %zu word types (%.1fs)\n", codes->merges.size(),
                                  counts.size(), since(t1));
      }
      text::BpeApplier bpe(*codes);
      for (auto& side : seg)
        for (std::string& line : side) line = bpe.apply_line(line);
    }
    // 3. The joint dictionary of the segmented training text.
    text::Dictionary d;
    for (int i = 0; i < 2; ++i)
      for (const std::string& line : seg[i]) d.add_line(line);
    d.finalize(ds.vocab_threshold > 0 ? ds.vocab_threshold : -1, ds.vocab_max > 0 ? ds.vocab_max : -1, 8);
    // 4. Ids, eos last.
    for (int i = 0; i < 4; ++i)
      for (const std::string& line : seg[i]) ids[i].push_back(d.encode_line(line, true));
    fs::create_directories(dir);
    for (int i = 0; i < 4; ++i) text::save_token_cache((dir / (names[i] + ".bin")).string(), h.value(), to_corpus(ids[i]));
    if (codes) text::write_bpe_codes((dir / "bpe.codes").string(), *codes);
    d.save((dir / "dict.txt").string());
    dict = std::move(d);
    if (verbose) std::fprintf(stderr, "data: dictionary of %zu symbols; cached in %s (%.1fs)\n", dict->size(), dir.c_str(), since(t0));
  }

  PreparedSeq2Seq p{TextPipeline(ps, codes, *dict), {}, std::move(valid_src), std::move(valid_tgt), 0};
  // Length limits (tokens including eos).
  const size_t max_src = static_cast<size_t>(ds.max_source_len), max_tgt = static_cast<size_t>(ds.max_target_len);
  const bool truncate = e.task == Task::summarization;
  auto fit = [&](std::vector<int32_t>& ids_, size_t limit) {
    if (ids_.size() <= limit) return true;
    if (!truncate) return false;
    truncate_keeping_eos(ids_, limit);
    return true;
  };
  for (size_t i = 0; i < ids[0].size(); ++i) {
    if (!fit(ids[0][i], max_src) || !fit(ids[1][i], max_tgt)) {
      ++p.dropped_train;
      continue;
    }
    p.data.train_src.push_back(std::move(ids[0][i]));
    p.data.train_tgt.push_back(std::move(ids[1][i]));
  }
  for (size_t i = 0; i < ids[2].size(); ++i) {
    truncate_keeping_eos(ids[2][i], max_src); // validation: truncated, never dropped
    truncate_keeping_eos(ids[3][i], max_tgt);
    p.data.valid_src.push_back(std::move(ids[2][i]));
    p.data.valid_tgt.push_back(std::move(ids[3][i]));
  }
  if (verbose && p.dropped_train > 0)
    std::fprintf(stderr, "data: dropped %lld training pairs longer than %zu/%zu tokens\n",
                 static_cast<long long>(p.dropped_train), max_src, max_tgt);
  if (!run_dir.empty()) {
    fs::create_directories(run_dir);
    p.pipeline.save(run_dir);
  }
  return p;
}

} // namespace pillars::train
