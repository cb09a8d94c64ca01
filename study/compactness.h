// The heads' side of a study's table: the paper's two claims about head compactness, tested on
// the study's runs.
//
//   Fig. 4, "group-constrained training makes the heads of a group alike and the groups apart":
//     per system, each measure of the heads at the end of the first phase (the mean over attention
//     modules of the run's last head measurement before any pruning), mean ± sd over seeds, and
//     against the baseline on the same seeds the paired t-test and the sign test (study/stats.h).
//       homogenization    mean cosine of a head with its group's center (1: the group is one point)
//       diversification   mean cosine between the group centers (−1: opposite)
//       silhouette, dunn  cluster quality of the heads' grouping (higher: tighter, further apart)
//
//   Fig. 2, "the more compact the heads, the better the model": across every run of the study that
//     has both numbers (all systems and seeds together, one point a model, as in the figure),
//     Spearman's rank correlation of its Silhouette coefficient, and of its Dunn index, with its
//     test score on each split (BLEU, else ROUGE-L, else the loss: lower is better there, so a
//     negative ρ is the claim's direction), with the p-value of "no monotone relation" (exact for
//     up to 9 runs, study/stats.h).
//     The runs of one system share its recipe, so a correlation across systems can come from
//     what else the systems differ in; the table says how many runs and systems went in.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace pillars::study {

// From a study table (study/table.h: its "systems", "baseline", "seeds", "splits" and "runs"):
//   {"measures": [{"measure", "systems": [{"system", "seeds", "values", "mean", "sd",
//                  "vs_baseline": {"seeds", "mean_diff", "t_p", "sign_plus", "sign_n", "sign_p"}}]}],
//    "against_scores": [{"split", "metric", "higher_is_better", "measure", "runs", "systems", "rho", "p",
//                        "p_exact"}]}
// p-values and ρ are null where the test is undefined (too few pairs, no variation).
nlohmann::json compactness_table(const nlohmann::json& table);

// The last head measurement of a run (a "runs" entry of the table) that has `measure`, or NaN.
double last_head_value(const nlohmann::json& run, const std::string& measure);

// Both parts as Markdown ("" when no run measured its heads).
std::string compactness_markdown(const nlohmann::json& compactness);

} // namespace pillars::study
