// `pillars schema`: the experiment file's format.
//
//   pillars schema                                  the JSON Schema (draft 2020-12) of experiment files
//   pillars schema --markdown                       the field table (experiments/README.md shows it)
//   pillars schema --check EXP.json [--set k=v]...  validate EXP.json; print the resolved config
//                                                   (exit 0) or the first error (stderr, exit 2)
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "tools/commands.h"
#include "train/experiment.h"

namespace pillars::cli {

Command add_schema_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "schema", "Print the experiment files' JSON Schema or field table, or check an experiment file");
  struct Options {
    bool markdown = false;
    std::string check;
    std::vector<std::string> overrides;
  };
  auto opt = std::make_shared<Options>();
  auto* markdown = cmd->add_flag("--markdown", opt->markdown, "print the field table in Markdown instead");
  auto* check = cmd->add_option("--check", opt->check, "validate this experiment file and print its resolved config");
  cmd->add_option("--set", opt->overrides,
                  "with --check: override a field, KEY=VALUE (dotted key, VALUE as JSON or plain text); repeatable")
      ->needs(check)
      ->allow_extra_args(false);
  markdown->excludes(check);
  return {cmd, [opt]() {
            if (opt->markdown) {
              std::cout << experiment_markdown();
            } else if (!opt->check.empty()) {
              const Experiment e = load_experiment(opt->check, opt->overrides, default_validation_context());
              std::cout << to_json(e).dump(2) << "\n";
            } else {
              std::cout << experiment_json_schema().dump(2) << "\n";
            }
            return 0;
          }};
}

} // namespace pillars::cli
