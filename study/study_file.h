// The study file: which systems to compare, on which seeds, at what budget, on which test sets.
//
//   {
//     "description": "Does GCT move the heads?",
//     "base": "../ght/vanilla.json",            experiment file every system starts from
//     "set": {"train.valid_max_sentences": 500}, overrides for every system
//     "systems": [                               in the order the table prints them
//       {"name": "vanilla"},                     the base as it is
//       {"name": "ght", "experiment": "../ght/ght-full.json"},
//       {"name": "gct-0.2", "set": {"heads.regularizer": "gct", "heads.alpha": 0.2}},
//       {"name": "top-c", "prune_from": "ght", "set": {"prune.keep": "top_c"}}
//     ],
//     "baseline": "vanilla",                     every other system is compared with it
//     "seeds": [1, 2, 3],
//     "updates": 3000,                           the budget: every run makes exactly this many
//     "test_splits": ["test_2016_flickr", "test_2017_flickr"],
//     "device": "cpu", "precision": "fp32", "threads": 1, "isa": "avx2"
//   }
//
// Paths are relative to the study file. A system's experiment is its own "experiment" (else
// "base"), with the study's "set", then the system's "set", then the budget and the seed applied
// as `pillars train --set` overrides (budget_overrides() lists them). Everything is validated when
// the file is read, the experiments included: a bad study exits 2 naming the file and the field.
//
// A system with "prune_from" trains nothing of its own: it prunes the named system's trained
// model of the same seed (`pillars prune EXP --from STUDY_DIR/<that>/s<seed>/checkpoint_last…`:
// for a system that prunes, its first phase's end) with its own `prune` settings, and fine-tunes
// to the same budget. So several ways of choosing heads start from one shared checkpoint.
//
// "threads" and "isa" pin the arithmetic: a run's numbers depend on its thread count and on the
// CPU kernels' instruction set (kernels/cpu/cpu_features.h), so every run of a study uses the same
// ones, whatever machine continues it. "avx2" (the default) runs on every x86-64 machine seen;
// "native" takes the machine's best and ties the study to machines like it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "train/experiment.h"

namespace pillars::study {

struct SystemSpec {
  std::string name;                   // folder name and table row: [A-Za-z0-9._-]+
  std::string experiment;             // path of its experiment file (resolved against the study file)
  std::vector<std::string> overrides; // "key=json" — the study's "set", then the system's own
  std::string prune_from;             // "" or an earlier system whose trained model this one prunes
  // "" or another study's system whose runs are this one's ("../s2-table1/ght-ps": a folder of
  // s<seed> runs, relative to this study's folder): a run finished there, with the same config
  // and under the same conditions, is copied instead of trained again (runner.h).
  std::string copy_from;
};

struct StudySpec {
  std::string path; // the study file
  std::string name; // default: the file's stem
  std::string description;
  std::vector<SystemSpec> systems;
  std::string baseline;
  std::vector<int64_t> seeds;
  int64_t updates = 0;
  std::vector<std::string> test_splits; // [] = each experiment's test split
  Device device = Device::cpu;
  Precision precision = Precision::fp32;
  int64_t threads = 1;
  std::string isa = "avx2"; // avx2 | avx512 | generic | native

  const SystemSpec& system(const std::string& name) const;
};

// Reads and validates a study file (InputError naming the file and field; exit 2).
StudySpec load_study(const std::string& path);
// The same from text (tests); `origin` names it in messages, relative paths resolve against `dir`.
StudySpec parse_study(const std::string& text, const std::string& origin, const std::string& dir);

// The `pillars train --set` overrides of one run, in order: the system's, then the budget
// (train.max_updates = updates, no minute, epoch or patience limit that could end it sooner, in
// either phase of a pruning run: fine-tuning continues the schedule until the same total),
// the device and precision, and the seed.
std::vector<std::string> run_overrides(const StudySpec& s, const SystemSpec& sys, int64_t seed);
// The run's resolved experiment, exactly as `pillars train` will resolve it.
Experiment run_experiment_config(const StudySpec& s, const SystemSpec& sys, int64_t seed);

} // namespace pillars::study
