// pillars — the one binary: train, prune, eval, report, bench… (subcommands in tools/cmd_*.cpp).
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/run_guard.h"
#include "tools/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"pillars — a deep-learning engine for Grouped Head Attention (Ni et al., ACL 2023)", "pillars"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("pillars 0.1"));
  const std::vector<pillars::cli::Command> commands = {
      pillars::cli::add_train_command(app),
      pillars::cli::add_prune_command(app),
      pillars::cli::add_eval_command(app),
      pillars::cli::add_translate_command(app),
      pillars::cli::add_generate_command(app),
      pillars::cli::add_metrics_command(app),
      pillars::cli::add_bench_command(app),
      pillars::cli::add_data_command(app),
      pillars::cli::add_graph_command(app),
      pillars::cli::add_schema_command(app),
      pillars::cli::add_report_command(app),
  };

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  try {
    for (const auto& command : commands)
      if (command.app->parsed()) return command.run();
  } catch (const pillars::Stopped& e) { // SIGTERM, SIGINT or SIGUSR1, honoured after a save
    std::fprintf(stderr, "pillars: %s\n", e.what());
    return 128 + e.signal;
  } catch (const pillars::InputError& e) {
    std::fprintf(stderr, "pillars: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pillars: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
