// See prepare.h.
#include "train/prepare.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>

#include "datasets/cache.h"
#include "datasets/registry.h"
#include "base/error.h"
#include "base/special_tokens.h"
#include "text/token_cache.h"
#include "train/schema.h"

namespace pillars::train {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string or_default(const std::string& chosen, const std::string& fallback, const char* what,
                       const std::string& dataset) {
  if (!chosen.empty()) return chosen;
  if (fallback.empty())
    throw InputError(str_cat("dataset \"", dataset, "\" has no default ", what, " split; set data.", what, "_split"));
  return fallback;
}

// Moses has rules per language; fields like "de" or "en.tok" name theirs, summarization fields are English.
std::string language_of(const std::string& field) {
  const std::string base = field.substr(0, field.find('.'));
  return base.size() == 2 ? base : "en";
}

// Every reference field of a split: the target field, then target2, target3, ... as present.
std::vector<std::string> reference_fields(const data::DatasetSpec& d, const std::string& split,
                                          const std::string& target) {
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

// One text side to prepare: its lines, whether Moses reads it as the source language, and whether
// it is training text (BPE and the dictionary are learned on the training sides only).
struct Side {
  std::vector<std::string> lines;
  bool source = false, train = false;
};

struct Encoded {
  std::optional<text::BpeCodes> codes;
  text::Dictionary dict;
  std::vector<std::vector<std::vector<int32_t>>> ids; // per side, per line: ids with eos last
};

// A vocabulary so small (data.vocab_threshold, data.vocab_max) that most of the training text
// becomes <unk> trains a model of <unk>: refused, naming the field, when more than half of the
// training tokens (eos aside) are unknown words. (The schema's text of both fields says so.)
void check_unknown_share(const DataSettings& ds, const std::string& experiment, const std::vector<Side>& sides,
                         const std::vector<std::vector<std::vector<int32_t>>>& ids) {
  int64_t tokens = 0, unknown = 0;
  for (size_t i = 0; i < sides.size(); ++i)
    if (sides[i].train)
      for (const std::vector<int32_t>& line : ids[i])
        for (int32_t t : line)
          if (t != tokens::kEos) ++tokens, unknown += t == tokens::kUnk;
  if (tokens == 0 || 2 * unknown <= tokens) return;
  const char* field = ds.vocab_threshold > 0 ? "data.vocab_threshold" : "data.vocab_max";
  const int64_t value = ds.vocab_threshold > 0 ? ds.vocab_threshold : ds.vocab_max;
  throw schema::FieldError(
      field, str_cat("experiment \"", experiment, "\": \"", field, "\" (", value, ") turns ", unknown, " of the ",
                     tokens, " training tokens (",
                     static_cast<int>(100.0 * static_cast<double>(unknown) / static_cast<double>(tokens)),
                     " %) into <unk>; at most half may be unknown words: lower it"));
}

// The expensive part of preparation, for every task: tokenize each side (Moses, unless
// data.tokenizer is "none"), read data.bpe_codes or learn data.bpe_merges merges jointly on the
// training sides, segment every side, build the dictionary of the training sides, encode. Cached
// under $PILLARS_CACHE/prepared/<key>, the key hashing every line and every setting involved.
Encoded encode_sides(const PipelineSettings& ps, const DataSettings& ds, const std::string& experiment,
                     const std::vector<Side>& sides, bool verbose) {
  const auto t0 = Clock::now();
  std::optional<text::BpeCodes> given_codes;
  if (ds.bpe_codes) given_codes = text::read_bpe_codes(*ds.bpe_codes);
  text::Hasher h;
  h.add("pillars-prepare-v2")
      .add(ps.source_lang)
      .add(ps.target_lang)
      .add(uint64_t{ps.moses})
      .add(uint64_t{ps.lowercase});
  h.add(static_cast<uint64_t>(ds.bpe_merges)).add(given_codes ? text::format_bpe_codes(*given_codes) : "");
  h.add(static_cast<uint64_t>(ds.vocab_threshold)).add(static_cast<uint64_t>(ds.vocab_max));
  for (const Side& side : sides) {
    h.add(uint64_t{side.source}).add(uint64_t{side.train}).add(static_cast<uint64_t>(side.lines.size()));
    for (const std::string& line : side.lines) h.add(line);
  }
  char key[17];
  std::snprintf(key, sizeof key, "%016llx", static_cast<unsigned long long>(h.value()));
  const fs::path dir = fs::path(data::cache_root()) / "prepared" / key;
  auto side_file = [&](size_t i) { return (dir / ("side" + std::to_string(i) + ".bin")).string(); };

  Encoded out;
  out.ids.resize(sides.size());
  bool cached = fs::exists(dir / "dict.txt") && (!ps.bpe || fs::exists(dir / "bpe.codes"));
  for (size_t i = 0; i < sides.size() && cached; ++i) {
    const auto c = text::load_token_cache(side_file(i), h.value());
    if (!c)
      cached = false;
    else
      out.ids[i] = to_lists(*c);
  }
  if (cached) {
    out.dict = text::Dictionary::load((dir / "dict.txt").string());
    if (ps.bpe) out.codes = text::read_bpe_codes((dir / "bpe.codes").string());
    if (verbose) std::fprintf(stderr, "data: %s loaded from the cache %s\n", ds.dataset.c_str(), dir.c_str());
    return out;
  }
  // 1. Tokenize (Moses) without BPE: a pipeline with no codes and an empty dictionary.
  PipelineSettings tok_only = ps;
  tok_only.bpe = false;
  const TextPipeline tokenizer(tok_only, std::nullopt, text::Dictionary());
  std::vector<std::vector<std::string>> seg;
  size_t lines = 0;
  for (const Side& side : sides) {
    seg.push_back(side.lines);
    for (std::string& line : seg.back()) line = tokenizer.segment(line, side.source);
    lines += side.lines.size();
  }
  if (verbose) std::fprintf(stderr, "data: %s: tokenized %zu lines (%.1fs)\n", ds.dataset.c_str(), lines, since(t0));
  // 2. BPE, learned jointly on the training sides.
  if (ps.bpe) {
    if (given_codes) {
      out.codes = given_codes;
    } else {
      const auto t1 = Clock::now();
      text::WordCounts counts;
      for (size_t i = 0; i < sides.size(); ++i)
        if (sides[i].train)
          for (const std::string& line : seg[i]) text::count_words(line, counts);
      text::LearnBpeOptions lo;
      lo.num_merges = static_cast<int>(ds.bpe_merges);
      out.codes = text::learn_bpe(counts, lo);
      if (verbose)
        std::fprintf(stderr, "data: learned %zu BPE merges on %zu word types (%.1fs)\n", out.codes->merges.size(),
                     counts.size(), since(t1));
    }
    text::BpeApplier bpe(*out.codes);
    for (auto& side : seg)
      for (std::string& line : side) line = bpe.apply_line(line);
  }
  // 3. The joint dictionary of the segmented training text.
  for (size_t i = 0; i < sides.size(); ++i)
    if (sides[i].train)
      for (const std::string& line : seg[i]) out.dict.add_line(line);
  out.dict.finalize(ds.vocab_threshold > 0 ? ds.vocab_threshold : -1, ds.vocab_max > 0 ? ds.vocab_max : -1, 8);
  // 4. Ids, eos last; then the cache (a dictionary that makes the training text mostly <unk> is
  // refused first, so it is never cached).
  for (size_t i = 0; i < sides.size(); ++i)
    for (const std::string& line : seg[i]) out.ids[i].push_back(out.dict.encode_line(line, true));
  check_unknown_share(ds, experiment, sides, out.ids);
  fs::create_directories(dir);
  for (size_t i = 0; i < sides.size(); ++i) text::save_token_cache(side_file(i), h.value(), to_corpus(out.ids[i]));
  if (out.codes) text::write_bpe_codes((dir / "bpe.codes").string(), *out.codes);
  out.dict.save((dir / "dict.txt").string());
  if (verbose)
    std::fprintf(stderr, "data: dictionary of %zu symbols; cached in %s (%.1fs)\n", out.dict.size(), dir.c_str(),
                 since(t0));
  return out;
}

// The first train_fraction of the lines (at least one).
void keep_fraction(std::vector<std::string>& lines, double fraction) {
  if (fraction < 1.0)
    lines.resize(std::max<size_t>(1, static_cast<size_t>(fraction * static_cast<double>(lines.size()) + 0.5)));
}

PipelineSettings pipeline_settings(const DataSettings& ds, const std::string& source_lang,
                                   const std::string& target_lang) {
  PipelineSettings ps;
  ps.source_lang = source_lang, ps.target_lang = target_lang;
  ps.moses = ds.tokenizer == Tokenizer::moses;
  ps.lowercase = ds.lowercase;
  ps.bpe = ds.bpe_merges > 0 || ds.bpe_codes.has_value();
  return ps;
}

void save_pipeline(const TextPipeline& pipeline, const std::string& run_dir) {
  if (run_dir.empty()) return;
  fs::create_directories(run_dir);
  pipeline.save(run_dir);
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
  const DataSettings& ds = e.data;
  std::vector<Side> sides(2);
  sides[0] = {data::read_field(ds.dataset, train_split_of(e), "text"), false, true};
  keep_fraction(sides[0].lines, ds.train_fraction);
  sides[1] = {data::read_field(ds.dataset, valid_split_of(e), "text"), false, false};
  const PipelineSettings ps = pipeline_settings(ds, "en", "en");
  Encoded enc = encode_sides(ps, ds, e.name, sides, verbose);
  PreparedLm p{TextPipeline(ps, enc.codes, enc.dict), {}};
  for (const auto& line : enc.ids[0]) p.data.train.insert(p.data.train.end(), line.begin(), line.end());
  for (const auto& line : enc.ids[1]) p.data.valid.insert(p.data.valid.end(), line.begin(), line.end());
  if (verbose) std::fprintf(stderr, "data: %zu training tokens\n", p.data.train.size());
  save_pipeline(p.pipeline, run_dir);
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

// Length limits that drop every training pair (translation drops the pairs longer than the limits)
// leave nothing to train on: refused, naming the limit that dropped them.
[[noreturn]] void refuse_emptied_split(const DataSettings& ds, const std::string& experiment,
                                       const std::vector<std::vector<int32_t>>& src,
                                       const std::vector<std::vector<int32_t>>& tgt) {
  size_t shortest_src = SIZE_MAX, shortest_tgt = SIZE_MAX;
  for (const auto& s : src) shortest_src = std::min(shortest_src, s.size());
  for (const auto& t : tgt) shortest_tgt = std::min(shortest_tgt, t.size());
  const bool source = shortest_src > static_cast<size_t>(ds.max_source_len);
  const bool target = shortest_tgt > static_cast<size_t>(ds.max_target_len);
  if (!source && !target)
    throw schema::FieldError(
        "data.max_source_len",
        str_cat("experiment \"", experiment, "\": \"data.max_source_len\" (", ds.max_source_len,
                ") and \"data.max_target_len\" (", ds.max_target_len, ") together drop every one of the ", src.size(),
                " training pairs, so none is left"));
  const char* field = source ? "data.max_source_len" : "data.max_target_len";
  throw schema::FieldError(
      field, str_cat("experiment \"", experiment, "\": \"", field, "\" (",
                     source ? ds.max_source_len : ds.max_target_len, ") is shorter than every one of the ", src.size(),
                     " training ", source ? "sources" : "targets", " (the shortest has ",
                     source ? shortest_src : shortest_tgt, " tokens, eos included), so no training pair is left"));
}

PreparedSeq2Seq prepare_seq2seq(const Experiment& e, const std::string& run_dir, bool verbose) {
  const DataSettings& ds = e.data;
  if (!ds.bpe_joint && (ds.bpe_merges > 0 || ds.bpe_codes))
    throw InputError(
        "data.bpe_joint = false is not supported: source and target share one BPE and one dictionary "
        "(the model's embeddings are joint)");
  const std::string train_split = train_split_of(e), valid_split = valid_split_of(e);
  std::vector<Side> sides(4); // train source, train target, valid source, valid target
  sides[0] = {data::read_field(ds.dataset, train_split, ds.source), true, true};
  sides[1] = {data::read_field(ds.dataset, train_split, ds.target), false, true};
  keep_fraction(sides[0].lines, ds.train_fraction);
  keep_fraction(sides[1].lines, ds.train_fraction);
  sides[2] = {data::read_field(ds.dataset, valid_split, ds.source), true, false};
  sides[3] = {data::read_field(ds.dataset, valid_split, ds.target), false, false};
  const PipelineSettings ps = pipeline_settings(ds, language_of(ds.source), language_of(ds.target));
  Encoded enc = encode_sides(ps, ds, e.name, sides, verbose);
  auto& ids = enc.ids;

  PreparedSeq2Seq p{TextPipeline(ps, enc.codes, enc.dict), {}, std::move(sides[2].lines), std::move(sides[3].lines), 0};
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
  if (p.data.train_src.empty() && !ids[0].empty()) refuse_emptied_split(ds, e.name, ids[0], ids[1]);
  for (size_t i = 0; i < ids[2].size(); ++i) {
    truncate_keeping_eos(ids[2][i], max_src); // validation: truncated, never dropped
    truncate_keeping_eos(ids[3][i], max_tgt);
    p.data.valid_src.push_back(std::move(ids[2][i]));
    p.data.valid_tgt.push_back(std::move(ids[3][i]));
  }
  if (verbose && p.dropped_train > 0)
    std::fprintf(stderr, "data: dropped %lld training pairs longer than %zu/%zu tokens\n",
                 static_cast<long long>(p.dropped_train), max_src, max_tgt);
  save_pipeline(p.pipeline, run_dir);
  return p;
}

} // namespace pillars::train

namespace pillars::train {

EncodedPairs encode_eval_pairs(const Experiment& e, const TextPipeline& pipeline, const EvalSplit& data, size_t limit) {
  EncodedPairs p;
  const size_t n = limit > 0 ? std::min(limit, data.source.size()) : data.source.size();
  for (size_t i = 0; i < n; ++i) {
    p.src.push_back(pipeline.encode_source(data.source[i]));
    p.tgt.push_back(pipeline.ids(pipeline.segment(data.refs[0][i], false)));
    truncate_keeping_eos(p.src.back(), static_cast<size_t>(e.data.max_source_len));
    truncate_keeping_eos(p.tgt.back(), static_cast<size_t>(e.data.max_target_len));
  }
  return p;
}

} // namespace pillars::train
