// The largest value each size in an experiment file or on the command line may take. Every one is
// checked when the file (or the flag) is read, before anything is allocated, so an absurd request
// ("model.d_model": 1e12, "threads": 100000) is an input error naming the field, exit 2, instead
// of std::bad_alloc or a crash an hour into a run.
//
// The bounds are far above anything this engine can usefully run (the largest named config,
// lm-wt103, has d 1024, FFN 4096, 16 layers) and far below what breaks it: an int64 product of
// two of them never overflows, and an int32 index over one tensor dimension never does either.
// What the bounds cannot see, a model or a step too large for this machine's memory, is caught by
// the memory estimate (train/memory_estimate.h), which needs the settings together.
#pragma once
#include <cstdint>

namespace pillars::limits {

constexpr int64_t kMaxThreads = 1024;                // OpenMP threads (libgomp creates them all eagerly)
constexpr int64_t kMaxWidth = 65536;                 // model.d_model
constexpr int64_t kMaxHeads = 1024;                  // model.heads, heads.groups, prune.heads
constexpr int64_t kMaxFfn = 1 << 20;                 // model.ffn
constexpr int64_t kMaxLayers = 1024;                 // model.enc_layers, dec_layers, layers
constexpr int64_t kMaxSequence = 1 << 20;            // data.max_source_len, max_target_len, block_size
constexpr int64_t kMaxBatchTokens = 1 << 24;         // data.max_tokens
constexpr int64_t kMaxVocabulary = 1 << 24;          // data.bpe_merges, data.vocab_max
constexpr int64_t kMaxSentences = 1 << 20;           // eval.batch_sentences, heads.metrics_sentences
constexpr int64_t kMaxUpdateFreq = 1 << 16;          // train.update_freq: batches accumulated per update
constexpr int64_t kMaxKeepBest = 1000;               // train.keep_best: checkpoint files on disk
constexpr int64_t kMaxUpdates = int64_t{1} << 48;    // a checkpoint's epoch, batch and update counts
constexpr int64_t kMaxOutputLength = 1 << 20;        // eval.max_len_b, and max_len_a × the longest source
constexpr int64_t kMaxJsonDepth = 64;                // nesting of an experiment file (schema depth is 2)
constexpr uint64_t kMaxExperimentBytes = 16u << 20;  // an experiment file (the ready ones are < 4 KB)
constexpr uint64_t kMaxLogBytes = uint64_t{1} << 30; // a log.jsonl read back on --resume (a long run's is a few MB)

} // namespace pillars::limits
