// See compactness.h.
#include "study/compactness.h"

#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "base/error.h"
#include "study/number_text.h"
#include "study/stats.h"

namespace pillars::study {

using nlohmann::json;

namespace {

// The four measures, as head_metrics.jsonl names them, and as the tables print them.
struct Measure {
  const char* key;
  const char* label;
};
constexpr Measure kMeasures[] = {{"homogenization", "homogenization"},
                                 {"diversification", "diversification"},
                                 {"silhouette", "Silhouette"},
                                 {"dunn", "Dunn"}};
// Fig. 2's two: the cluster-quality measures the paper plots against BLEU.
constexpr Measure kFig2Measures[] = {{"silhouette", "Silhouette"}, {"dunn", "Dunn"}};

json finite_or_null(double v) { return std::isfinite(v) ? json(v) : json(); }

// A run's test score on `split`: its main metric as the table's split lists it first (BLEU for
// translation, ROUGE-1 then … for summarization, the loss for language modeling). ROUGE-L is
// preferred among the ROUGE scores, as the summary score the paper reports last.
struct Score {
  std::string metric;
  bool higher_is_better = true;
};
Score main_score(const json& split_table) {
  Score s;
  for (const json& m : split_table["metrics"]) {
    const std::string name = m["metric"].get<std::string>();
    if (name == "sentences_per_second") continue;
    if (s.metric.empty() || name == "bleu" || (name == "rougeL" && s.metric != "bleu"))
      s.metric = name, s.higher_is_better = m["higher_is_better"].get<bool>();
  }
  return s;
}

// One measure's last value in every run that has it, read once: system → seed → value.
using SeedValues = std::map<int64_t, double>;
std::map<std::string, SeedValues> last_values(const json& t, const char* measure) {
  std::map<std::string, SeedValues> out;
  for (const json& run : t["runs"]) {
    const double v = last_head_value(run, measure);
    if (std::isfinite(v)) out[run["system"].get<std::string>()].emplace(run["seed"].get<int64_t>(), v);
  }
  return out;
}

const double* value_at(const SeedValues& values, const json& seed) {
  const auto it = values.find(seed.get<int64_t>());
  return it == values.end() ? nullptr : &it->second;
}

// Fig. 4: per measure and system, the values over seeds and the paired tests against the baseline.
json measures_part(const json& t) {
  json out = json::array();
  const std::string baseline = t["baseline"].get<std::string>();
  for (const Measure& measure : kMeasures) {
    std::map<std::string, SeedValues> by_system = last_values(t, measure.key);
    if (by_system.empty()) continue;
    const SeedValues& base = by_system[baseline];
    json systems = json::array();
    for (const json& system : t["systems"]) {
      const SeedValues& mine = by_system[system.get<std::string>()];
      json seeds = json::array(), paired = json::array();
      std::vector<double> values, x, y; // x, y: this system and the baseline on the paired seeds
      for (const json& seed : t["seeds"]) {
        const double *v = value_at(mine, seed), *b = value_at(base, seed);
        if (v) values.push_back(*v), seeds.push_back(seed);
        if (v && b) x.push_back(*v), y.push_back(*b), paired.push_back(seed);
      }
      const MeanSd ms = mean_sd(values);
      json row = {{"system", system}, {"seeds", seeds}, {"values", values}, {"mean", ms.mean}, {"sd", ms.sd}};
      if (system != baseline) {
        const PairedTest tt = paired_t_test(x, y), sg = sign_test(x, y);
        row["vs_baseline"] = {{"seeds", paired},
                              {"mean_diff", tt.mean_diff},
                              {"t_p", finite_or_null(tt.p)},
                              {"sign_plus", static_cast<int64_t>(sg.statistic)},
                              {"sign_n", sg.n},
                              {"sign_p", sg.p}};
      }
      systems.push_back(row);
    }
    out.push_back({{"measure", measure.key}, {"systems", systems}});
  }
  return out;
}

// Fig. 2: per split and measure, Spearman's ρ across every run with both numbers.
json against_scores_part(const json& t) {
  json out = json::array();
  for (const json& split_table : t["splits"]) {
    const std::string split = split_table["split"].get<std::string>();
    const Score score = main_score(split_table);
    if (score.metric.empty()) continue;
    for (const Measure& measure : kFig2Measures) {
      std::vector<double> x, y;
      std::set<std::string> systems;
      for (const json& run : t["runs"]) {
        const double v = last_head_value(run, measure.key);
        const json& e = run["eval"].contains(split) ? run["eval"][split] : json();
        if (!std::isfinite(v) || !e.is_object() || !e.contains(score.metric) || !e[score.metric].is_number()) continue;
        x.push_back(v), y.push_back(e[score.metric].get<double>());
        systems.insert(run["system"].get<std::string>());
      }
      if (x.empty()) continue;
      const Correlation c = spearman(x, y);
      out.push_back({{"split", split},
                     {"metric", score.metric},
                     {"higher_is_better", score.higher_is_better},
                     {"measure", measure.key},
                     {"runs", c.n},
                     {"systems", static_cast<int64_t>(systems.size())},
                     {"rho", finite_or_null(c.rho)},
                     {"p", finite_or_null(c.p)},
                     {"p_exact", c.exact}});
    }
  }
  return out;
}

std::string label_of(const std::string& key) {
  for (const Measure& m : kMeasures)
    if (key == m.key) return m.label;
  return key;
}

} // namespace

double last_head_value(const json& run, const std::string& measure) {
  if (!run.contains("heads")) return NAN;
  const json& curve = run["heads"];
  for (auto it = curve.rbegin(); it != curve.rend(); ++it)
    if (it->contains(measure) && (*it)[measure].is_number()) return (*it)[measure].get<double>();
  return NAN;
}

json compactness_table(const json& t) {
  return {{"measures", measures_part(t)}, {"against_scores", against_scores_part(t)}};
}

std::string compactness_markdown(const json& c) {
  if (c["measures"].empty()) return "";
  // Fig. 4: one row per system, a "mean ± sd" cell per measure; then the same against the baseline.
  std::string header = "| system | seeds |", rule = "|---|---|", rows, diff_rows;
  for (const json& m : c["measures"]) {
    header += str_cat(" ", label_of(m["measure"]), " |");
    rule += "---|";
  }
  const size_t n_systems = c["measures"][0]["systems"].size();
  for (size_t i = 0; i < n_systems; ++i) {
    const std::string system = c["measures"][0]["systems"][i]["system"].get<std::string>();
    std::string cells, diff_cells;
    size_t seeds = 0;
    bool baseline = false;
    for (const json& m : c["measures"]) {
      const json& row = m["systems"][i];
      const size_t n = row["values"].size();
      seeds = std::max(seeds, n);
      const std::string mean_sd_text =
          n == 0 ? std::string("–")
                 : str_cat(fixed(row["mean"].get<double>(), 3), n > 1 ? " ± " + fixed(row["sd"].get<double>(), 3) : "");
      cells += str_cat(" ", mean_sd_text, " |");
      if (!row.contains("vs_baseline")) {
        baseline = true;
        continue;
      }
      const json& v = row["vs_baseline"];
      const std::string diff_text =
          v["seeds"].empty()
              ? std::string("–")
              : str_cat(signed_fixed(v["mean_diff"].get<double>(), 3), ", p ", p_text(v["t_p"]), "; ",
                        v["sign_plus"].get<int64_t>(), "/", v["sign_n"].get<int64_t>(), ", p ", p_text(v["sign_p"]));
      diff_cells += str_cat(" ", diff_text, " |");
    }
    if (seeds == 0) continue;
    rows += str_cat("| ", system, " | ", seeds, " |", cells, "\n");
    if (!baseline)
      diff_rows += str_cat("| ", system, " | ", c["measures"][0]["systems"][i]["vs_baseline"]["seeds"].size(), " |",
                           diff_cells, "\n");
  }
  std::string out =
      "## Heads at the end of the first phase (mean over modules; mean ± sd over seeds)\n\n"
      "Homogenization is the mean cosine of a head with its group's center (higher: groups more compact); "
      "diversification is the mean cosine between group centers (lower: groups further apart).\n\n" +
      header + "\n" + rule + "\n" + rows + "\n";
  if (!diff_rows.empty())
    out +=
        "Against the baseline on the same seeds (the paper's Fig. 4): Δ mean, paired t-test p; sign test "
        "(positive/paired seeds), p.\n\n" +
        header + "\n" + rule + "\n" + diff_rows + "\n";
  if (!c["against_scores"].empty()) {
    out +=
        "## Compactness against the test score (the paper's Fig. 2)\n\n"
        "Spearman's rank correlation across the runs (every system and seed, one point a run) of a measure at "
        "the end of the first phase with the run's test score; p tests \"no monotone relation\" (exact, over "
        "every pairing of the ranks, up to 9 runs; from Student's t above). Runs of one "
        "system share its recipe, so a correlation across systems may come from anything else they differ "
        "in.\n\n| split | score | measure | runs | systems | ρ | p |\n|---|---|---|---|---|---|---|\n";
    for (const json& a : c["against_scores"])
      out += str_cat("| ", a["split"].get<std::string>(), " | ", a["metric"].get<std::string>(),
                     a["higher_is_better"].get<bool>() ? "" : " (lower is better)", " | ", label_of(a["measure"]),
                     " | ", a["runs"].get<int64_t>(), " | ", a["systems"].get<int64_t>(), " | ",
                     a["rho"].is_number() ? signed_fixed(a["rho"].get<double>(), 3) : "n/a", " | ", p_text(a["p"]),
                     a["p_exact"].get<bool>() ? " (exact)" : "", " |\n");
    out += "\n";
  }
  return out;
}

} // namespace pillars::study
