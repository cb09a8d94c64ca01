// `pillars study STUDY.json [--table]`: compare systems over seeds at one budget (study/).
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "base/atomic_file.h"
#include "study/runner.h"
#include "study/table.h"
#include "tools/commands.h"

namespace pillars::cli {

Command add_study_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "study",
      "Run a study (systems x seeds at one budget in updates, resumable), or print its comparison with --table");
  cmd->footer(
      "A study file names its systems, seeds, budget, test splits and baseline (experiments/studies/ holds the "
      "project's; "
      "docs/STUDIES.md explains the fields). Every (system, seed) trains into DIR/<system>/s<seed>/; starting the "
      "study "
      "again skips finished runs and resumes interrupted ones. SIGTERM or Ctrl-C stops every run after a save.");
  struct Options {
    std::string file, out, device;
    int64_t jobs = 0, samples = 1000;
    bool table = false, dry_run = false, quiet = false;
  };
  auto opt = std::make_shared<Options>();
  cmd->add_option("study", opt->file, "study file (JSON)")->required();
  cmd->add_option("--out", opt->out, "study folder (default: studies/<study name>)");
  cmd->add_option("--jobs", opt->jobs, "runs at once (default: cores / the study's threads)")
      ->check(CLI::Range(int64_t{1}, int64_t{256}));
  cmd->add_option("--device", opt->device,
                  "run the whole study on this device instead of the study file's (a study folder never mixes devices: "
                  "its first start records the device; --table reads it from there)")
      ->check(CLI::IsMember(enum_names<Device>()));
  cmd->add_flag("--table", opt->table,
                "print the comparison of the finished runs (and write DIR/table.json, DIR/table.md); run nothing");
  cmd->add_option("--samples", opt->samples, "paired-bootstrap resamples for --table (default 1000)")
      ->check(CLI::Range(int64_t{10}, int64_t{100000}));
  cmd->add_flag("--dry-run", opt->dry_run, "print the commands of the steps left to run; run nothing");
  cmd->add_flag("--quiet", opt->quiet, "no progress lines");
  return {cmd, [opt]() {
            study::StudySpec s = study::load_study(opt->file);
            const std::string dir = study::study_dir_of(s, opt->out);
            // The device is a property of the study folder: --device chooses it for a new folder (and
            // a folder made on another device refuses it); without the flag, an existing folder keeps
            // the device its runs were made on, so its table compares their configs as they are.
            if (!opt->device.empty())
              s.device = device_flag(opt->device);
            else if (const auto recorded = study::recorded_device(dir))
              s.device = *recorded;
            if (opt->table) {
              if (!std::filesystem::is_directory(dir))
                throw InputError(
                    str_cat(dir, ": no such study folder (run `pillars study ", opt->file, "` first, or give --out)"));
              const nlohmann::json t = study::study_table(s, dir, opt->samples);
              const std::string md = study::table_markdown(t);
              io::atomic_write_file((std::filesystem::path(dir) / "table.json").string(), t.dump(1) + "\n");
              io::atomic_write_file((std::filesystem::path(dir) / "table.md").string(), md);
              std::printf("%s", md.c_str());
              return 0;
            }
            study::RunnerOptions o;
            o.study_dir = dir;
            o.jobs = opt->jobs;
            o.dry_run = opt->dry_run;
            o.quiet = opt->quiet;
            return study::run_study(s, o);
          }};
}

} // namespace pillars::cli
