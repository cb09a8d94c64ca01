// `pillars report RUN_DIR... [-o report.html [--force]] [--title T] [--split S]`: one self-contained HTML
// page about one or several runs (curves, head metrics, HUDS similarity, votes and pruning, a table
// comparing the runs). See report/report.h for the sections and report/run.h for the files read.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <filesystem>

#include "base/atomic_file.h"
#include "base/input_file.h"
#include "report/report.h"
#include "report/run.h"
#include "tools/commands.h"
#include "tools/output_file.h"

namespace pillars::cli {

Command add_report_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("report", "Write one self-contained HTML report about one or several runs");
  cmd->footer(
      "Each RUN_DIR needs a log.jsonl; config.json, head_metrics.jsonl, votes.json, prune.json, eval_<split>.json and\n"
      "the checkpoints are used when present (a section says \"not available\" otherwise). The page has no external\n"
      "references: open it anywhere. Exit code 2 when a RUN_DIR does not exist or has no log.jsonl; a file that "
      "cannot\n"
      "be used (a damaged line, checkpoint or JSON file) is left out with a note on stderr naming it, and in the "
      "page.");
  struct Options {
    std::vector<std::string> runs;
    std::string out = "report.html", title, split, study;
    bool no_model = false, force = false;
  };
  auto opt = std::make_shared<Options>();
  cmd->add_option("RUN_DIR", opt->runs, "run directories (as `pillars train` writes them; optional with --study)");
  cmd->add_option("--study", opt->study,
                  "a study folder: draw its comparison (its table.json, from `pillars study --table`)");
  cmd->add_option("-o,--out", opt->out, "the HTML file to write (a new file, not inside a run folder)")
      ->capture_default_str();
  cmd->add_flag("--force", opt->force, "let --out replace a file that exists");
  cmd->add_option("--title", opt->title, "the page's title (default: \"Pillars report: <run names>\")");
  cmd->add_option("--split", opt->split,
                  "evaluation to show: eval_<split>.json (default: eval_test.json, else the split config.json names)");
  cmd->add_flag("--no-model", opt->no_model, "do not load checkpoints (no parameter counts or FLOPs from them)");
  add_allow_unchecked_flag(cmd);
  return {
      cmd, [opt]() {
        if (opt->runs.empty() && opt->study.empty()) throw InputError("give run directories, or --study DIR, or both");
        check_output_path(opt->out, "--out", opt->force); // before the runs are read
        nlohmann::json study;
        if (!opt->study.empty()) {
          const std::string path = opt->study + "/table.json";
          if (!std::filesystem::exists(path))
            throw InputError(str_cat("--study ", opt->study, ": no table.json (run `pillars study STUDY.json --out ",
                                     opt->study, " --table` first)"));
          try {
            study = nlohmann::json::parse(read_input_file(path, 256u << 20));
            if (!study.is_object() || !study.contains("splits") || !study.contains("runs") ||
                !study.contains("systems"))
              throw InputError("not a study table (splits, runs, systems)");
          } catch (const nlohmann::json::exception& err) {
            throw InputError(str_cat(path, ": invalid JSON: ", err.what()));
          } catch (const InputError& err) {
            throw InputError(str_cat(path, ": ", err.what()));
          }
        }
        std::vector<report::RunData> runs;
        for (const std::string& dir : opt->runs) {
          runs.push_back(report::load_run(dir, opt->split, !opt->no_model));
          // What could not be used is shown in the page, and said here, naming the file: a
          // damaged log or checkpoint does not stop the report, nor pass unnoticed.
          for (const std::string& note : runs.back().notes)
            std::fprintf(stderr, "pillars report: note: %s/%s\n", dir.c_str(), note.c_str());
        }
        report::assign_names(runs);
        const std::string page = report::render_report(runs, {opt->title, study});
        io::atomic_write_file(opt->out, page);
        std::printf("wrote %s: %zu run(s), %d charts, %zu bytes\n", opt->out.c_str(), runs.size(),
                    report::count_charts(page), page.size());
        return 0;
      }};
}

} // namespace pillars::cli
