// See decoding_options.h.
#include "tools/decoding_options.h"

#include "decode/search.h"
#include "train/limits.h"

namespace pillars::cli {

void add_decoding_options(CLI::App* cmd, DecodingOverrides* flags) {
  cmd->add_option("--beam", flags->beam, "beam size, 1 = greedy (default: the run's eval.beam)")
      ->check(CLI::Range(int64_t{1}, decode::kMaxBeam));
  cmd->add_option("--lenpen", flags->lenpen, "length penalty: log-probability / length^lenpen (default: eval.lenpen)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-len-a", flags->max_len_a,
                  "max target length = a * source length + b (default: eval.max_len_a)")
      ->check(CLI::Range(0.0, 1000.0));
  cmd->add_option("--max-len-b", flags->max_len_b, "see --max-len-a (default: eval.max_len_b)")
      ->check(CLI::Range(int64_t{0}, limits::kMaxOutputLength));
  cmd->add_option("--batch", flags->batch, "sentences per decoding batch (default: eval.batch_sentences)")
      ->check(CLI::Range(int64_t{1}, limits::kMaxSentences));
}

} // namespace pillars::cli
