// The decoding flags that `pillars eval` and `pillars translate` share: --beam, --lenpen,
// --max-len-a, --max-len-b and --batch, each overriding the run's `eval` setting of the same name
// when given. An unset flag keeps its sentinel (0 or -1), which no valid value takes.
#pragma once
#include <cstdint>

#include <CLI/CLI.hpp>

namespace pillars::cli {

struct DecodingOverrides {
  int64_t beam = 0;       // eval.beam when 0
  int64_t batch = 0;      // eval.batch_sentences when 0
  int64_t max_len_b = -1; // eval.max_len_b when -1
  double lenpen = -1;     // eval.lenpen when -1
  double max_len_a = -1;  // eval.max_len_a when -1
};

// Adds the five flags to `cmd`, in that order, with their ranges; `flags` receives them and must
// outlive the parsing (the command's options struct holds it).
void add_decoding_options(CLI::App* cmd, DecodingOverrides* flags);

} // namespace pillars::cli
