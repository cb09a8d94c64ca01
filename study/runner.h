// Runs a study: every (system, seed) as its own `pillars train` into STUDY_DIR/<system>/s<seed>/,
// then `pillars eval` on each test split, a few at a time, resumable.
//
//   STUDY_DIR/study.json            what the study runs under: device, precision, isa, threads
//                                   (a study never mixes them: a later start that differs is refused)
//   STUDY_DIR/.lock                 one `pillars study` at a time per folder
//   STUDY_DIR/<system>/s<seed>/     the run (`pillars train --out`), its pruned/ phase inside
//   STUDY_DIR/<system>/s<seed>/study_run.json    the study's record of the run: the commands,
//                                   whether training finished, the splits evaluated
//   STUDY_DIR/logs/<system>-s<seed>.log          everything the run's processes printed
//
// Each run is a sequence of steps, each a child process of the same binary:
//   train   pillars train EXP --set …(run_overrides) --out DIR --threads T --no-eval [--resume]
//   eval    pillars eval FINAL_DIR --split S --threads T [--device cuda]   (one per split)
// A "prune_from" system's train step is `pillars prune … --from SOURCE/checkpoint_last.safetensors`;
// where a finished source's checkpoint is gone, the source first gets a step that trains its first
// phase again into SOURCE/phase1/, checked against its log (run_record.h, first_phase_difference).
// FINAL_DIR is DIR, or DIR/pruned for a system that prunes. A step that finished is never run
// again, so starting the study again continues it: finished runs are skipped, an interrupted
// training resumes from its checkpoint_last (`--resume`), missing evaluations are made.
//
// Runs start in seed order (every system's seed 1 first), so paired comparisons come early.
// --jobs runs that many at once (default: cores / threads). The environment of every child
// pins PILLARS_ISA (the study's "isa") and OMP_WAIT_POLICY=PASSIVE (idle threads of one run must
// not spin on the core another run needs).
//
// Stopping: SIGTERM, SIGINT, SIGUSR1 or SIGHUP to the study is passed to its runs as SIGTERM; each saves
// its checkpoint_last and exits (base/run_guard.h); the study then exits 128 + signal. Ctrl-C
// from a terminal reaches the runs directly too (one process group): the same graceful stop.
#pragma once
#include <optional>
#include <string>

#include "study/study_file.h"

namespace pillars::study {

struct RunnerOptions {
  std::string study_dir; // "" = studies/<name>
  int64_t jobs = 0;      // runs at once; 0 = max(1, cores / threads)
  std::string binary;    // the pillars binary for the steps ("" = this process's own)
  bool dry_run = false;  // print the steps that would run, run nothing
  bool quiet = false;    // no progress lines
};

// The study folder RunnerOptions names.
std::string study_dir_of(const StudySpec& s, const std::string& out);
// The device STUDY_DIR/study.json says its runs were made on (nullopt: no study there yet).
std::optional<Device> recorded_device(const std::string& study_dir);

// Runs what is left of the study. Returns the exit status: 0 all runs finished and evaluated,
// 1 a run failed (the others went on), 128 + signal when stopped.
int run_study(const StudySpec& s, const RunnerOptions& o);

} // namespace pillars::study
