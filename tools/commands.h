// The `pillars` subcommands. Each registers itself on the CLI11 app and returns the handler that
// runs when it was chosen. Exit codes: 0 success, 1 run-time failure, 2 bad usage or bad input.
#pragma once
#include <functional>

#include <CLI/CLI.hpp>

#include "base/enum_names.h"
#include "base/error.h"
#include "engine/tensor.h"
#include "runtime/cuda_device.h"
#include "train/limits.h"

namespace pillars::cli {

struct Command {
  CLI::App* app;            // the subcommand, to ask whether it was chosen
  std::function<int()> run; // what runs when it was
};

// A --device flag's word as a Device, refused (InputError, exit 2) when it names a GPU this
// machine does not have.
inline Device device_flag(const std::string& word) {
  const Device d = parse_enum<Device>(word, "--device");
  if (d == Device::cuda && cuda_device_count() == 0)
    throw InputError(str_cat("--device cuda: no CUDA device here (", cuda_unavailable_reason(), ")"));
  return d;
}

// The --threads flag of every subcommand: 0 (all cores) up to limits::kMaxThreads, checked when
// the command line is parsed (CLI11 names the flag: "--threads: Value 100000 not in range ...").
inline CLI::Validator threads_range() { return CLI::Range(int64_t{0}, limits::kMaxThreads); }

// --allow-unchecked, on every command that loads checkpoints: load one without a "pillars.checksum"
// (another tool's file, or an edited one) instead of refusing it (train/checkpoint.h).
void add_allow_unchecked_flag(CLI::App* cmd);

// --overwrite of `train` and `prune` (train::SessionOptions::overwrite).
void add_overwrite_flag(CLI::App* cmd, bool& overwrite);

Command add_bench_command(CLI::App& app);
Command add_data_command(CLI::App& app);
Command add_graph_command(CLI::App& app);
Command add_schema_command(CLI::App& app);
Command add_train_command(CLI::App& app);
Command add_eval_command(CLI::App& app);
Command add_translate_command(CLI::App& app);
Command add_generate_command(CLI::App& app);
Command add_metrics_command(CLI::App& app);
Command add_prune_command(CLI::App& app);
Command add_report_command(CLI::App& app);
Command add_study_command(CLI::App& app);

} // namespace pillars::cli
