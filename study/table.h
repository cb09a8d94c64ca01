// `pillars study STUDY.json --table`: what the finished runs of a study say, with the statistics
// that say how sure it is (study/stats.h).
//
// Before any number, the runs are checked to be comparable. A run is left out of every
// comparison, and named with the reason, when
//   - its config.json is not what the study file gives for it (the file or the code changed
//     after it ran: the differing fields are listed),
//   - it did not make exactly the study's updates (its logs' last update),
//   - its logs' machine records disagree with the study's (instruction set, threads, device,
//     precision, ranks), or it has none (a binary from before runs recorded them).
// The CPU model and the commit may differ (both are listed in the header): the arithmetic is
// the same where the instruction set and the threads are.
//
// Then, per test split and metric (BLEU or ROUGE-1/2/L, and the test loss):
//   per system     mean ± sd over its seeds
//   against the baseline, across seeds   the paired t-test and the sign test over the seeds both
//                  finished
//   against the baseline, per seed       the paired bootstrap over the test sentences (1,000
//                  resamples): Δ, its 95 % interval and p, for BLEU and ROUGE (from the
//                  hypotheses and references), and for the loss where the run wrote per-sentence
//                  losses (eval_<split>.nll)
//   and the decoding speed (sentences per second), counted only where the evaluation had the cores
//   to itself (its threads waited for a core another process held at most 5 % of their time,
//   eval_<split>.json "decode_waiting_share"; the others are named under the table), and compared
//   with the baseline's only for the seeds whose two evaluations record the same machine (CPU
//   model, instruction set, threads, device): the others are named under the table too.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "study/study_file.h"

namespace pillars::study {

// The whole comparison as JSON (written to STUDY_DIR/table.json; `pillars report` draws it).
nlohmann::json study_table(const StudySpec& s, const std::string& study_dir, int64_t bootstrap_samples = 1000);
// The same as Markdown, for a terminal or docs/RESULTS.md.
std::string table_markdown(const nlohmann::json& table);

} // namespace pillars::study
