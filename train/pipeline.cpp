// See pipeline.h.
#include "train/pipeline.h"

#include "base/checksum.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <cerrno>
#include <cstring>

#include "base/error.h"
#include "base/input_file.h"
#include "base/atomic_file.h"
#include "text/moses.h"

namespace pillars::train {

namespace {
namespace fs = std::filesystem;

std::string read_text(const std::string& path) { return read_input_file(path, uint64_t{1} << 30); }
} // namespace

TextPipeline::TextPipeline(PipelineSettings settings, std::optional<text::BpeCodes> codes, text::Dictionary dictionary)
    : settings_(std::move(settings)), codes_(std::move(codes)), dict_(std::move(dictionary)) {
  PILLARS_CHECK(!settings_.bpe || codes_, "TextPipeline: BPE is on but no codes were given");
  if (settings_.bpe) bpe_ = std::make_shared<text::BpeApplier>(*codes_);
}

nlohmann::json TextPipeline::to_json() const {
  return {{"source_lang", settings_.source_lang},
          {"target_lang", settings_.target_lang},
          {"moses", settings_.moses},
          {"lowercase", settings_.lowercase},
          {"bpe", settings_.bpe},
          {"vocab", dict_.size()},
          {"dictionary", dictionary_checksum()}};
}

std::string TextPipeline::dictionary_checksum() const {
  Checksum64 c;
  for (int32_t id = 0; id < static_cast<int32_t>(dict_.size()); ++id) {
    const std::string& word = dict_.symbol(id);
    c.add(word.data(), word.size());
    c.add("\n", 1);
  }
  return c.hex();
}

void TextPipeline::save(const std::string& run_dir) const {
  io::atomic_write_file((fs::path(run_dir) / "pipeline.json").string(), to_json().dump(2) + "\n");
  dict_.save((fs::path(run_dir) / "dict.txt").string());
  if (codes_) text::write_bpe_codes((fs::path(run_dir) / "bpe.codes").string(), *codes_);
}

TextPipeline TextPipeline::load(const std::string& run_dir) {
  const std::string path = (fs::path(run_dir) / "pipeline.json").string();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_text(path));
  } catch (const nlohmann::json::exception& e) {
    throw InputError(str_cat(path, ": invalid JSON: ", e.what()));
  }
  PipelineSettings s;
  try {
    s.source_lang = j.at("source_lang").get<std::string>();
    s.target_lang = j.at("target_lang").get<std::string>();
    s.moses = j.at("moses").get<bool>();
    s.lowercase = j.at("lowercase").get<bool>();
    s.bpe = j.at("bpe").get<bool>();
  } catch (const nlohmann::json::exception& e) {
    throw InputError(str_cat(path, ": ", e.what()));
  }
  std::optional<text::BpeCodes> codes;
  if (s.bpe) codes = text::read_bpe_codes((fs::path(run_dir) / "bpe.codes").string());
  return TextPipeline(s, std::move(codes), text::Dictionary::load((fs::path(run_dir) / "dict.txt").string()));
}

std::string TextPipeline::segment(const std::string& line, bool source) const {
  std::string tokens;
  if (settings_.moses) {
    text::MosesOptions m;
    m.lang = source ? settings_.source_lang : settings_.target_lang;
    m.normalize_punctuation = true;
    m.lowercase = settings_.lowercase;
    tokens = text::moses_tokenize(line, m);
  } else {
    tokens = settings_.lowercase ? text::moses_lowercase(line) : line;
  }
  return bpe_ ? bpe_->apply_line(tokens) : tokens;
}

std::vector<int32_t> TextPipeline::ids(const std::string& segmented) const {
  return dict_.encode_line(segmented, true);
}

std::string TextPipeline::decode_target(const std::vector<int32_t>& ids) const {
  std::vector<int32_t> body = ids;
  while (!body.empty() && (body.back() == dict_.eos() || body.back() == dict_.pad())) body.pop_back();
  std::string text = dict_.decode(body);
  if (settings_.bpe) text = text::remove_bpe(text);
  return settings_.moses ? text::moses_detokenize(text, settings_.target_lang) : text;
}

std::string TextPipeline::tokenized_target(const std::vector<int32_t>& ids) const {
  std::vector<int32_t> body = ids;
  while (!body.empty() && (body.back() == dict_.eos() || body.back() == dict_.pad())) body.pop_back();
  const std::string text = dict_.decode(body);
  return settings_.bpe ? text::remove_bpe(text) : text;
}

void truncate_keeping_eos(std::vector<int32_t>& ids, size_t limit) {
  if (ids.size() <= limit || limit == 0) return;
  const int32_t last = ids.back();
  ids.resize(limit);
  ids.back() = last;
}

} // namespace pillars::train
