// Data preparation for sequence-to-sequence tasks (translation, summarization): from the dataset
// registry's text to token ids, as the experiment's `data` section says.
//
//   PreparedSeq2Seq p = prepare_seq2seq(experiment, run_dir, /*verbose=*/true);
//   p.data.train_src[i]      // ids of training source i, eos last
//   p.pipeline               // the text pipeline (also saved into run_dir)
//
// Steps: read the source and target fields of the train/valid/test splits (datasets/registry.h);
// tokenize (Moses, per language) unless data.tokenizer is "none"; learn joint BPE with
// data.bpe_merges merges on the training split (or read data.bpe_codes); build the joint
// dictionary on the segmented training text (data.vocab_threshold, data.vocab_max, padded to a
// multiple of 8); encode. Training pairs longer than max_source_len / max_target_len tokens are
// dropped for translation (fairseq's --skip-invalid-size-inputs-valid-test) and truncated for
// summarization (the source keeps its first max_source_len − 1 tokens and its eos).
//
// The expensive part (tokenize, learn, encode) is cached under $PILLARS_CACHE/prepared/<key>/,
// where <key> hashes every input line and every setting that changes the result; a later run with
// the same data and settings loads the ids in a fraction of a second.
#pragma once
#include <string>
#include <vector>

#include "train/experiment.h"
#include "train/pipeline.h"
#include "train/trainer.h"

namespace pillars::train {

struct PreparedSeq2Seq {
  TextPipeline pipeline;
  steps::Seq2SeqData data;               // train and valid ids
  std::vector<std::string> valid_source; // raw text of the validation split
  std::vector<std::string> valid_target;
  int64_t dropped_train = 0; // training pairs over the length limits
};

PreparedSeq2Seq prepare_seq2seq(const Experiment& e, const std::string& run_dir, bool verbose);

// Language modeling: the "text" field of the train and valid splits, tokenized (unless
// data.tokenizer is "none"), BPE-segmented when data.bpe_merges > 0 (learned on train), a
// dictionary of the training text, and each split as one stream: every line's ids, then eos.
struct PreparedLm {
  TextPipeline pipeline;
  steps::LmData data;
};
PreparedLm prepare_lm(const Experiment& e, const std::string& run_dir, bool verbose);
// A split's stream with the run's pipeline (what `pillars eval` measures perplexity on).
std::vector<int32_t> lm_stream(const TextPipeline& pipeline, const std::vector<std::string>& lines);

// The raw source lines and reference sets of a split (refs[k][i]: reference k of example i; the
// summarization datasets with several references give several sets).
struct EvalSplit {
  std::string name;
  std::vector<std::string> source;
  std::vector<std::vector<std::string>> refs;
};
EvalSplit read_eval_split(const Experiment& e, const std::string& split);
// Its first `limit` pairs (0 = all) as ids: the source and the first reference, encoded with the
// run's pipeline and truncated to the experiment's length limits (eos kept).
struct EncodedPairs {
  std::vector<std::vector<int32_t>> src, tgt;
};
EncodedPairs encode_eval_pairs(const Experiment& e, const TextPipeline& pipeline, const EvalSplit& data,
                               size_t limit = 0);

// The split names after applying the dataset's defaults to the experiment's choices.
std::string train_split_of(const Experiment& e);
std::string valid_split_of(const Experiment& e);
std::string test_split_of(const Experiment& e);

} // namespace pillars::train
