// `pillars report`: one self-contained HTML page (inline SVG and CSS, a small inline script, no
// external URL) about one or several runs:
//
//   runs        a table comparing the runs: parameters without embeddings, FLOPs per target token,
//               decoding speed, BLEU / ROUGE / perplexity of the final evaluation
//   curves      training loss, validation loss / perplexity / BLEU / ROUGE against the update, runs
//               overlaid, training phases ("phase" in log.jsonl) as dashed vertical lines
//   head        per run, one small chart per head-diversity metric with a line per attention module
//   similarity  per run and module, the HUDS similarity matrix at the first and the last
//               measurement, heads labeled with their HUDS groups
//   v2s         per run, the Voting-to-Stay votes and groups, the heads kept, and the pruning summary
//   study       with --study: a study's comparison with its statistics, the metric against head
//               compactness (the paper's Fig. 2) and compactness against updates (Fig. 4)
//
// Every section says "not available" for what a run does not have (a vanilla run has no votes).
//
//   std::vector<RunData> runs = {load_run("runs/vanilla", ""), load_run("runs/ght", "")};
//   assign_names(runs);
//   std::string page = render_report(runs, {.title = "GHT vs vanilla"});
#pragma once
#include <string>
#include <vector>

#include "report/run.h"

namespace pillars::report {

struct ReportOptions {
  std::string title;    // "" = "Pillars report: <run names>"
  nlohmann::json study; // a study's table.json (`pillars study --table`), or null: no study section
};

// The page.
std::string render_report(const std::vector<RunData>& runs, const ReportOptions& options);

// The number of charts (<svg class="chart">) in a piece of HTML.
int count_charts(const std::string& html);

} // namespace pillars::report
