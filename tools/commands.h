// The `pillars` subcommands. Each registers itself on the CLI11 app and returns the handler that
// runs when it was chosen. Exit codes: 0 success, 1 run-time failure, 2 bad usage or bad input.
#pragma once
#include <functional>

#include <CLI/CLI.hpp>

namespace pillars::cli {

struct Command {
  CLI::App* app;             // the subcommand, to ask whether it was chosen
  std::function<int()> run;  // what runs when it was
};

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

} // namespace pillars::cli
