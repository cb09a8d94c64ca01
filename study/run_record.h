// One run of a study on disk: where its files are, and the study's record of what is done.
//
//   study_run.json   {"system": "ght", "seed": 2, "trained": true,
//                     "evaluated": ["test_2016_flickr"], "commands": ["pillars train …", …]}
//
// The record is written (atomically) after each step that succeeded, so it never claims a step
// that did not finish. It is read back as untrusted input: a record that is not what the study
// wrote (bad JSON, wrong types, another system or seed) is an InputError naming the file.
#pragma once
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "train/experiment.h"

namespace pillars::study {

struct RunPaths {
  std::string dir;       // STUDY_DIR/<system>/s<seed>: the run (`pillars train --out`)
  std::string final_dir; // dir, or dir/pruned for a system that prunes: the model that is tested
  std::string record;    // dir/study_run.json
  std::string log;       // STUDY_DIR/logs/<system>-s<seed>.log
  std::string system;
  int64_t seed = 0;
};
RunPaths run_paths(const std::string& study_dir, const std::string& system, int64_t seed, bool prunes);

struct RunRecord {
  bool trained = false;
  std::set<std::string> evaluated;   // test splits with an eval_<split>.json from the study
  std::vector<std::string> commands; // every step that succeeded, as a shell would run it
};
// The record, or an empty one when the file does not exist.
RunRecord read_run_record(const RunPaths& p);
void write_run_record(const RunPaths& p, const RunRecord& r);

// The settings a run was made with (its config.json) against those the study gives it, as
// "key (run value in the run, study value in the study)"; empty when they agree. Paths that a
// run folder rewrites (model.init_from, data.bpe_codes) are not compared.
std::vector<std::string> config_differences(const std::string& run_dir, const Experiment& expected);

// A finished run's head_metrics.jsonl (and its pruned/ one) stored as head_metrics.jsonl.xz: the
// pairwise matrices of every validation make the file about 1.5 MB for a 3,000-update Multi30k run,
// about 0.4 MB compressed, and a study commits its runs. The compressed file is written atomically
// and read back before the plain one is removed; a link, or a plain file beside an existing .xz
// (a run continued after it was packed), is left as it is. `pillars report` reads either form.
void compress_head_metrics(const RunPaths& p);

// A finished run continued to a larger budget (the study file's "updates" raised after it ran).
// continue_problem: "" when the run can go on from where it stopped, else why not: its learning
// rate decays over the budget (experiment e's schedule is cosine or linear, so the continued run
// is not the one trained to the new budget), or a checkpoint it continues from is gone
// (checkpoints are not kept in the repository). pruned_by_prune: the run is a "prune_from"
// system's (`pillars prune --resume` continues its fine-tuning), whose first phase is its source's.
std::string continue_problem(const RunPaths& p, const Experiment& e, bool pruned_by_prune);
// Prepares such a run to continue: its evaluations at the old budget (final_dir/eval_*) move into
// final_dir/evaluated_at_<reached>/ (never overwriting a file there), and its packed head metrics are
// unpacked (checked to read back the same) so that training appends to them. Returns the folder the
// evaluations went to. Call it before the record says the run is unfinished: repeated after a
// crash, it finds nothing left to move.
std::string reopen_run(const RunPaths& p, int64_t reached);

// A pruning system prunes its source run's first phase, the source's checkpoint_last. Where that
// checkpoint went with the machine that trained the source (checkpoints are not kept in the
// repository), the runner trains the first phase again into phase1_dir (SOURCE/phase1/) and
// checks it with first_phase_difference: "" when its log.jsonl has, at every update of the
// source's first phase, the losses, learning rate, GCT term and validation BLEU the source's
// log.jsonl has (the same numbers as written, so the same arithmetic), else what differs first.
std::string phase1_dir(const RunPaths& p);
std::string first_phase_difference(const RunPaths& p);

// The last update a run's logs mention (phase 2's log continues phase 1's count), 0 without one.
int64_t latest_update(const RunPaths& p);

} // namespace pillars::study
