// The study section of `pillars report --study DIR`: what `pillars study --table` computed
// (DIR/table.json, study/table.h), drawn.
//
//   the comparison   per test split and metric: mean ± sd over seeds, Δ against the baseline
//                    with the paired t-test and the sign test, and each seed's paired-bootstrap
//                    interval
//   Fig. 2           the paper's figure: the test metric against the heads' compactness
//                    (Silhouette and homogenization at the last measurement before pruning), one
//                    dot per run, a color per system; under it Spearman's ρ across the runs
//   Fig. 4           homogenization and diversification against updates, one line per run
//   validation       the validation metric against updates, one line per run (has it levelled off?)
#include <cmath>

#include "report/html.h"
#include "report/sections.h"
#include "study/compactness.h"

namespace pillars::report {

using nlohmann::json;

namespace {

std::string p_text(const json& p) {
  if (!p.is_number()) return "n/a";
  return p.get<double>() < 0.001 ? "&lt;0.001" : html::fixed(p.get<double>(), 3);
}
std::string signed_text(double v, int decimals) {
  std::string text = html::fixed(v, decimals);
  if (v >= 0) text.insert(text.begin(), '+');
  return text;
}

// One table per split and metric.
std::string comparison_tables(const json& t) {
  std::string s;
  for (const json& sp : t["splits"])
    for (const json& m : sp["metrics"]) {
      const std::string metric = m["metric"].get<std::string>();
      const int dec = metric == "loss" ? 4 : metric == "sentences_per_second" ? 1 : 2;
      s += "<h3>" + html::escape(sp["split"].get<std::string>()) + ": " + html::escape(metric) +
           (m["higher_is_better"].get<bool>() ? " (higher is better)" : " (lower is better)") + "</h3>\n";
      s += "<div class=\"wide\"><table class=\"runs\"><tr><th>system</th><th class=\"num\">seeds</th><th "
           "class=\"num\">mean ± sd</th>"
           "<th class=\"num\">Δ mean</th><th class=\"num\">t-test p</th><th class=\"num\">sign test</th>"
           "<th>per seed: Δ [95 % interval] p (paired bootstrap)</th></tr>\n";
      size_t i = 0;
      for (const json& row : m["systems"]) {
        const size_t n = row["values"].size();
        s +=
            "<tr><td class=\"run\"><span class=\"sw\" style=\"display:inline-block;width:10px;height:10px;background:" +
            run_color(i++) + "\"></span> " + html::escape(row["system"].get<std::string>()) +
            "</td><td class=\"num\">" + std::to_string(n) + "</td><td class=\"num\">" +
            (n ? html::fixed(row["mean"].get<double>(), dec) +
                     (n > 1 ? " ± " + html::fixed(row["sd"].get<double>(), dec) : "")
               : "n/a") +
            "</td>";
        if (!row.contains("vs_baseline")) {
          s += "<td colspan=\"4\">baseline</td></tr>\n";
          continue;
        }
        const json& v = row["vs_baseline"];
        const bool paired = !v["seeds"].empty();
        std::string boot;
        for (const json& b : v["bootstrap"])
          boot += (boot.empty() ? "" : "; ") + std::string("s") + std::to_string(b["seed"].get<int64_t>()) + " " +
                  signed_text(b["diff"].get<double>(), dec) + " [" + signed_text(b["low"].get<double>(), dec) + ", " +
                  signed_text(b["high"].get<double>(), dec) + "] " + p_text(b["p"]);
        s += "<td class=\"num\">" + (paired ? signed_text(v["mean_diff"].get<double>(), dec) : "n/a") +
             "</td><td class=\"num\">" + (paired ? p_text(v["t_p"]) : "n/a") + "</td><td class=\"num\">" +
             (paired ? std::to_string(v["sign_plus"].get<int64_t>()) + "/" +
                           std::to_string(v["sign_n"].get<int64_t>()) + ", " + p_text(v["sign_p"])
                     : "n/a") +
             "</td><td class=\"mono\">" + (boot.empty() ? "n/a" : boot) + "</td></tr>\n";
      }
      s += "</table></div>\n";
    }
  return s;
}

size_t system_index(const json& t, const std::string& name) {
  for (size_t i = 0; i < t["systems"].size(); ++i)
    if (t["systems"][i] == name) return i;
  return 0;
}

// Fig. 2: the main metric of the first split against a compactness measure, a dot per run.
std::string compactness_chart(const json& t, const char* key, const std::string& label) {
  if (t["splits"].empty() || t["splits"][0]["metrics"].empty()) return not_available("Fig. 2", "no evaluated run yet");
  const std::string split = t["splits"][0]["split"].get<std::string>();
  const std::string metric = t["splits"][0]["metrics"][0]["metric"].get<std::string>();
  svg::LineChart c;
  c.title = metric + " (" + split + ") against " + label;
  c.x_label = label + " (mean over modules, last measurement)";
  c.y_label = metric;
  c.y_scale = svg::YScale::linear;
  for (size_t i = 0; i < t["systems"].size(); ++i)
    c.series.push_back({t["systems"][i].get<std::string>(), run_color(i), {}, {}});
  for (const json& run : t["runs"]) {
    const double x = study::last_head_value(run, key);
    const json& e = run["eval"].contains(split) ? run["eval"][split] : json();
    if (!std::isfinite(x) || !e.is_object() || !e.contains(metric) || !e[metric].is_number()) continue;
    svg::Series& s = c.series[system_index(t, run["system"].get<std::string>())];
    s.x.insert(s.x.end(), {x, x}); // a gap after every point: dots, not a line
    s.y.insert(s.y.end(), {e[metric].get<double>(), NAN});
  }
  return svg::line_chart(c);
}

// Under Fig. 2: the table's test of it, Spearman's ρ across the runs per split and measure
// (study/compactness.h), a line each.
std::string correlation_notes(const json& t) {
  if (!t.contains("compactness")) return "";
  std::string s;
  for (const json& a : t["compactness"]["against_scores"])
    s += "<p class=\"note\">" + html::escape(a["split"].get<std::string>()) + ", " +
         html::escape(a["metric"].get<std::string>()) + " against " + html::escape(a["measure"].get<std::string>()) +
         ": Spearman's ρ " + (a["rho"].is_number() ? signed_text(a["rho"].get<double>(), 3) : "n/a") + ", p " +
         p_text(a["p"]) + (a.value("p_exact", false) ? " (exact)" : "") + " over " +
         std::to_string(a["runs"].get<int64_t>()) + " runs of " + std::to_string(a["systems"].get<int64_t>()) +
         " systems</p>\n";
  return s;
}

// Fig. 4: a compactness measure against updates, a line per run.
std::string curve_chart(const json& t, const char* key, const std::string& label) {
  svg::LineChart c;
  c.title = label + " against updates";
  c.x_label = "update";
  c.y_label = label + " (mean over modules)";
  c.y_scale = svg::YScale::linear;
  for (const json& run : t["runs"]) {
    svg::Series s{run["system"].get<std::string>() + " s" + std::to_string(run["seed"].get<int64_t>()),
                  run_color(system_index(t, run["system"].get<std::string>())),
                  {},
                  {}};
    for (const json& p : run["heads"])
      if (p[key].is_number()) s.x.push_back(p["update"].get<double>()), s.y.push_back(p[key].get<double>());
    c.series.push_back(std::move(s));
  }
  return svg::line_chart(c);
}

// Validation curves, a line per run: where the "levelled off" rule of the table is judged.
std::string valid_chart(const json& t) {
  svg::LineChart c;
  c.title = "validation against updates";
  c.x_label = "update";
  c.y_scale = svg::YScale::linear;
  for (const json& run : t["runs"]) {
    svg::Series s{run["system"].get<std::string>() + " s" + std::to_string(run["seed"].get<int64_t>()),
                  run_color(system_index(t, run["system"].get<std::string>())),
                  {},
                  {}};
    for (const json& p : run["valid"]) {
      c.y_label = "validation " + p["metric"].get<std::string>();
      s.x.push_back(p["update"].get<double>()), s.y.push_back(p["value"].get<double>());
    }
    c.series.push_back(std::move(s));
  }
  return svg::line_chart(c);
}

} // namespace

std::string study_section(const json& t) {
  std::string s = "<section id=\"study\"><h2>Study " + html::escape(t.value("study", "")) + "</h2>\n";
  if (!t.value("description", "").empty()) s += "<p>" + html::escape(t["description"].get<std::string>()) + "</p>\n";
  s += "<p class=\"meta\">Every run " + std::to_string(t.value("updates", int64_t{0})) + " updates; baseline " +
       html::escape(t.value("baseline", "")) + "; device " + html::escape(t.value("device", "")) + ", isa " +
       html::escape(t.value("isa", "")) + ", " + std::to_string(t.value("threads", int64_t{0})) +
       " thread(s). Δ = system − baseline.</p>\n";
  s += comparison_tables(t);
  s += "<h3>Validation during training</h3>\n<div class=\"charts\">" + valid_chart(t) + "</div>\n";
  s += "<h3>The metric against the heads' compactness (the paper's Fig. 2)</h3>\n<div class=\"charts\">" +
       compactness_chart(t, "silhouette", "Silhouette") + compactness_chart(t, "homogenization", "homogenization") +
       "</div>\n" + correlation_notes(t);
  s += "<h3>Compactness during training (the paper's Fig. 4)</h3>\n<div class=\"charts\">" +
       curve_chart(t, "homogenization", "homogenization") + curve_chart(t, "diversification", "diversification") +
       "</div>\n";
  for (const json& r : t["missing"])
    s += "<p class=\"note\">Not finished: " + html::escape(r["system"].get<std::string>()) + " s" +
         std::to_string(r["seed"].get<int64_t>()) + "</p>\n";
  for (const json& r : t["excluded"])
    s += "<p class=\"note\">Left out: " + html::escape(r["system"].get<std::string>()) + " s" +
         std::to_string(r["seed"].get<int64_t>()) + ": " + html::escape(r["reason"].get<std::string>()) + "</p>\n";
  return s + "</section>\n";
}

} // namespace pillars::report
