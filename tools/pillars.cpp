// pillars — the one binary: train, prune, eval, report, bench… (subcommands in tools/cmd_*.cpp).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/run_guard.h"
#include "tools/commands.h"
#include "train/schema.h"

// What a command printed must have reached stdout: a full disk or an I/O error behind it (say
// `translate > /full/disk/out.txt`) is a run-time failure, exit 1, not a success with the output
// lost. A closed pipe is not (`| head` took what it wanted: SIGPIPE is ignored, README).
int finish_stdout(int code) {
  errno = 0;
  if (std::fflush(stdout) == 0 && !std::ferror(stdout)) return code;
  const int err = errno;
  struct stat st {};
  const bool pipe = ::fstat(STDOUT_FILENO, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode));
  if (pipe || err == EPIPE) return code; // a closed pipe: its reader took what it wanted
  std::fprintf(stderr, "pillars: error: writing to stdout failed: %s\n", err ? std::strerror(err) : "an I/O error");
  return code == 0 ? 1 : code;
}

int main(int argc, char** argv) {
  // A closed pipe never kills a command (`pillars translate ... | head -1`): writes to it fail
  // instead, quietly (stdio marks the stream's error flag), and the command ends as it would have.
  // train and prune note it in log.jsonl (base/run_guard.h). A write past `ulimit -f` fails with
  // EFBIG, and the command with exit 1 naming the file, instead of being killed by SIGXFSZ.
  std::signal(SIGPIPE, SIG_IGN);
  std::signal(SIGXFSZ, SIG_IGN);
  CLI::App app{"pillars — a deep-learning engine for Grouped Head Attention (Ni et al., ACL 2023)", "pillars"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("pillars 0.1"));
  const std::vector<pillars::cli::Command> commands = {
      pillars::cli::add_train_command(app),    pillars::cli::add_prune_command(app),
      pillars::cli::add_eval_command(app),     pillars::cli::add_translate_command(app),
      pillars::cli::add_generate_command(app), pillars::cli::add_metrics_command(app),
      pillars::cli::add_bench_command(app),    pillars::cli::add_data_command(app),
      pillars::cli::add_graph_command(app),    pillars::cli::add_schema_command(app),
      pillars::cli::add_report_command(app),   pillars::cli::add_study_command(app),
  };

  // A mistyped command: CLI11 would only say that a subcommand is required.
  if (argc > 1 && argv[1][0] != '-') {
    std::vector<std::string> names;
    for (const auto& command : commands) names.push_back(command.app->get_name());
    if (std::find(names.begin(), names.end(), argv[1]) == names.end()) {
      const std::string near = pillars::schema::nearest(argv[1], names);
      std::string known;
      for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
      std::fprintf(stderr, "pillars: unknown command \"%s\"%s (commands: %s; see pillars --help)\n", argv[1],
                   near.empty() ? "" : (" — did you mean \"" + near + "\"?").c_str(), known.c_str());
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  try {
    for (const auto& command : commands)
      if (command.app->parsed()) return finish_stdout(command.run());
  } catch (const pillars::Stopped& e) { // SIGTERM, SIGINT, SIGUSR1 or SIGHUP, honoured after a save
    if (*e.what()) std::fprintf(stderr, "pillars: %s\n", e.what()); // empty on the other ranks of a job
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
