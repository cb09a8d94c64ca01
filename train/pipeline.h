// The text pipeline of a run: raw text ↔ token ids, both ways, as the experiment configured it.
//
//   source line ─ Moses tokenizer (source language) ─ BPE ─ dictionary ─ ids + eos   encode_source
//   ids ─ dictionary ─ remove "@@ " ─ Moses detokenizer (target language) ─ text      decode_target
//
// The same object prepares the training data (train/prepare.h), scores validation BLEU, and
// serves `pillars translate` and `pillars eval`. It is saved in the run directory as
// pipeline.json + dict.txt (+ bpe.codes), so a checkpoint can be used without the experiment file.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "text/bpe.h"
#include "text/dictionary.h"

namespace pillars::train {

struct PipelineSettings {
  std::string source_lang = "en", target_lang = "en"; // Moses language rules ("de", "en", ...)
  bool moses = true;                                  // tokenize raw text (false: the text is already tokenized)
  bool lowercase = false;
  bool bpe = true; // apply bpe.codes
};

class TextPipeline {
 public:
  TextPipeline(PipelineSettings settings, std::optional<text::BpeCodes> codes, text::Dictionary dictionary);
  // Reads pipeline.json, dict.txt and bpe.codes from a run directory.
  static TextPipeline load(const std::string& run_dir);
  void save(const std::string& run_dir) const;

  // Tokenized and BPE-segmented text (what the dictionary sees), one side.
  std::string segment(const std::string& line, bool source) const;
  // Ids of a segmented line, eos appended.
  std::vector<int32_t> ids(const std::string& segmented) const;
  std::vector<int32_t> encode_source(const std::string& raw_line) const { return ids(segment(raw_line, true)); }
  // Model output (ids, eos optional at the end) → detokenized text.
  std::string decode_target(const std::vector<int32_t>& ids) const;
  // The same, stopping before detokenization: what fairseq's tokenized BLEU compares.
  std::string tokenized_target(const std::vector<int32_t>& ids) const;

  const text::Dictionary& dictionary() const { return dict_; }
  // A checksum of the dictionary's words in id order (base/checksum.h): recorded in every
  // checkpoint (to_json()'s "dictionary"), so a checkpoint used with another run's dict.txt is
  // refused instead of decoding nonsense (train/checkpoint.h, check_vocabulary).
  std::string dictionary_checksum() const;
  const PipelineSettings& settings() const { return settings_; }
  nlohmann::json to_json() const;

 private:
  PipelineSettings settings_;
  std::optional<text::BpeCodes> codes_;
  std::shared_ptr<text::BpeApplier> bpe_; // applier caches segmentations (mutable state)
  text::Dictionary dict_;
};

// ids (eos last) longer than `limit` keep their first limit − 1 ids and the eos.
void truncate_keeping_eos(std::vector<int32_t>& ids, size_t limit);

} // namespace pillars::train
