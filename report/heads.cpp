// The head-metrics curves and the similarity heatmaps of the report (head_metrics.jsonl): see
// sections.h.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>

#include "report/html.h"
#include "report/sections.h"

using nlohmann::json;

namespace pillars::report {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A metric of head_metrics.jsonl that gets a chart, and what it says.
struct Metric {
  const char* key;
  const char* caption;
};

// The metrics, in the order they are shown (docs/METHOD.md §7 and the GCT loss terms).
const Metric kMetrics[] = {
    {"orthogonality",
     "inter-head orthogonality Σ|QᵢᵀQⱼ|, as defined (grows with batch and length); high = low diversity"},
    {"orthogonality_norm", "inter-head orthogonality, normalized by the norms; high = low diversity"},
    {"context_nonorth", "context-vector non-orthogonality ‖CᵢᵀCⱼ‖_F, as defined; high = low diversity"},
    {"context_nonorth_norm", "context-vector non-orthogonality, normalized; high = low diversity"},
    {"output_dissimilarity", "output dissimilarity −mean cos(oᵢ, oⱼ); high = diverse"},
    {"attention_variance_mean", "intra-head attention diversity: variance of the attention weights, mean over heads"},
    {"dunn", "Dunn index of the HUDS clustering: high = compact, well separated groups"},
    {"silhouette",
     "Silhouette coefficient of the HUDS clustering (−1 … 1), standard (a head alone in its group scores 0): high = "
     "compact, well separated groups"},
    {"silhouette_ght",
     "Silhouette as the paper's Fig. 2 script computes it (a divided by the group size, a head alone scores 1): high = "
     "compact, well separated groups"},
    {"homogenization", "GCT homogenization term: heads against their group center (docs/METHOD.md §4)"},
    {"diversification", "GCT diversification term: group centers against each other (docs/METHOD.md §4)"},
};

// The update of a head_metrics line (its position in the file when it has none).
double update_of(const json& line, size_t index) {
  return number_at(line, "update").value_or(static_cast<double>(index));
}

// The modules of the run's head_metrics lines, in order of first appearance.
std::vector<std::string> module_names(const RunData& r) {
  std::vector<std::string> names;
  for (const json& line : r.head_metrics)
    for (const json& m : line["modules"]) {
      const std::string name = string_at(m, "module");
      if (!name.empty() && std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }
  return names;
}

// One more than the largest "layers.N" index among the module names (for the module colors).
int layer_count(const std::vector<std::string>& modules) {
  int layers = 1;
  for (const std::string& m : modules)
    if (const size_t at = m.find("layers."); at != std::string::npos)
      layers = std::max(layers, std::atoi(m.c_str() + at + 7) + 1);
  return layers;
}

// The entry for `module` in a head_metrics line, or null.
const json* find_module(const json& line, const std::string& module) {
  for (const json& m : line["modules"])
    if (string_at(m, "module") == module) return &m;
  return nullptr;
}

// A square-ish matrix of numbers at m[key] (null or non-numbers become NaN); empty if absent.
std::vector<std::vector<double>> matrix_at(const json& m, const char* key) {
  std::vector<std::vector<double>> out;
  const auto it = m.find(key);
  if (it == m.end() || !it->is_array()) return out;
  for (const json& row : *it) {
    std::vector<double> r;
    if (row.is_array())
      for (const json& v : row) r.push_back(v.is_number() ? v.get<double>() : kNaN);
    out.push_back(std::move(r));
  }
  return out;
}

// The integers of m[key] (anything else becomes −1); empty if absent.
std::vector<int> ints_at(const json& m, const char* key) {
  std::vector<int> out;
  const auto it = m.find(key);
  if (it == m.end() || !it->is_array()) return out;
  for (const json& v : *it) out.push_back(v.is_number_integer() ? v.get<int>() : -1);
  return out;
}

// The kept heads (original indices) of a module from prune.json, else votes.json; empty if unknown.
std::vector<int> kept_heads(const RunData& r, const std::string& module) {
  for (const json* source : {&r.prune, &r.votes})
    if (source->is_object() && source->contains("modules") && (*source)["modules"].is_array())
      for (const json& m : (*source)["modules"])
        if (string_at(m, "module") == module) return ints_at(m, "kept");
  return {};
}

// The small charts of one run: a chart per metric, a line per module.
std::string run_metric_charts(const RunData& r, size_t run_index) {
  const std::vector<std::string> modules = module_names(r);
  const int layers = layer_count(modules);
  std::string s = "<ul class=\"swatches\">";
  for (const std::string& m : modules)
    s += "<li><span class=\"sw\" style=\"background:" + svg::module_color(m, layers) + "\"></span>" + html::escape(m) +
         "</li>";
  s += "</ul>\n<div class=\"charts small\">\n";
  std::vector<std::string> missing;
  for (const Metric& metric : kMetrics) {
    svg::LineChart c;
    c.title = metric.key, c.x_label = "update", c.y_label = metric.key;
    c.width = 360, c.height = 220, c.legend = false;
    c.markers = phase_markers(r, run_color(run_index), "");
    bool any = false;
    for (const std::string& module : modules) {
      svg::Series series{module, svg::module_color(module, layers), {}, {}};
      for (size_t i = 0; i < r.head_metrics.size(); ++i)
        if (const json* m = find_module(r.head_metrics[i], module)) {
          const std::optional<double> v = number_at(*m, metric.key);
          series.x.push_back(update_of(r.head_metrics[i], i));
          series.y.push_back(v.value_or(kNaN));
          any = any || v.has_value();
        }
      c.series.push_back(std::move(series));
    }
    if (!any) {
      missing.push_back(metric.key);
      continue;
    }
    s += "<figure>" + svg::line_chart(c) + "<figcaption>" + html::escape(metric.caption) + "</figcaption></figure>\n";
  }
  s += "</div>\n";
  if (!missing.empty()) {
    std::string list;
    for (const std::string& m : missing) list += (list.empty() ? "" : ", ") + m;
    s += not_available("metrics without any value", list);
  }
  return s;
}

// The color range of a module's two matrices: [min, max], or symmetric around 0 (diverging) when
// the values have both signs.
void color_range(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b,
                 svg::Heatmap& h) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const auto* m : {&a, &b})
    for (const auto& row : *m)
      for (double v : row)
        if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  if (!(lo <= hi)) lo = 0, hi = 1;
  h.diverging = lo < 0 && hi > 0;
  if (h.diverging) hi = std::max(-lo, hi), lo = -hi;
  h.lo = lo, h.hi = hi;
}

// The heatmap of one module at one measurement. `kept`: original indices of the heads left after
// pruning (used for the labels when the matrix has exactly that many heads).
std::string similarity_map(const json& line, size_t index, const json& module, const std::vector<int>& kept,
                           const std::string& when, const svg::Heatmap& range) {
  svg::Heatmap h = range;
  h.values = matrix_at(module, "similarity");
  h.groups = ints_at(module, "labels");
  h.title = when + ": update " + html::number(update_of(line, index));
  if (const auto e = number_at(line, "epoch")) h.title += ", epoch " + html::number(*e);
  const bool renumbered = !kept.empty() && kept.size() == h.values.size() && number_at(module, "heads") &&
                          static_cast<size_t>(*number_at(module, "heads")) == kept.size();
  for (size_t i = 0; i < h.values.size(); ++i)
    h.labels.push_back(svg::head_label(renumbered ? kept[i] : static_cast<int64_t>(i)));
  return svg::heatmap(h);
}

// The first-vs-last heatmaps of every module of one run.
std::string run_similarity(const RunData& r) {
  const json& first = r.head_metrics.front();
  const json& last = r.head_metrics.back();
  const size_t last_index = r.head_metrics.size() - 1;
  std::string s = "<p class=\"meta\">Feature map " + html::escape(string_at(first, "feature_map", "?")) + ", " +
                  (number_at(first, "groups") ? html::number(*number_at(first, "groups")) : std::string("?")) +
                  " HUDS groups. Left: the first measurement; right: the last" +
                  (r.head_metrics.size() == 1 ? std::string(" (the same: only one measurement)") : std::string()) +
                  ". Colored chips next to the head labels are the HUDS group labels.</p>\n";
  s += "<div class=\"modules\">\n";
  for (const std::string& module : module_names(r)) {
    const json* a = find_module(first, module);
    const json* b = find_module(last, module);
    s += "<div class=\"module\"><h4>" + html::escape(module) + "</h4><div class=\"pair\">";
    const auto ma = a ? matrix_at(*a, "similarity") : std::vector<std::vector<double>>{};
    const auto mb = b ? matrix_at(*b, "similarity") : std::vector<std::vector<double>>{};
    svg::Heatmap range;
    color_range(ma, mb, range);
    s += ma.empty() ? not_available("similarity at the first measurement")
                    : similarity_map(first, 0, *a, {}, "first", range);
    s += mb.empty() ? not_available("similarity at the last measurement")
                    : similarity_map(last, last_index, *b, kept_heads(r, module), "last", range);
    s += "</div></div>\n";
  }
  return s + "</div>\n";
}

} // namespace

std::string head_metrics_section(const std::vector<RunData>& runs) {
  std::string s =
      "<section id=\"head-metrics\"><h2>Head metrics</h2>\n<p class=\"note\">Per attention module, measured on a "
      "held-out batch (head_metrics.jsonl). A y axis marked “log” is logarithmic (the values span more than "
      "two decades).</p>\n";
  for (size_t i = 0; i < runs.size(); ++i) {
    s += "<h3>" + html::escape(runs[i].name) + "</h3>\n";
    s += runs[i].head_metrics.empty() ? not_available("head_metrics.jsonl", "the run measured no head metrics")
                                      : run_metric_charts(runs[i], i);
  }
  return s + "</section>\n";
}

std::string similarity_section(const std::vector<RunData>& runs) {
  std::string s =
      "<section id=\"similarity\"><h2>Head similarity (HUDS)</h2>\n<p class=\"note\">The similarity matrices "
      "HUDS clusters, before and after group-constrained training; heads of one group should form "
      "blocks of high similarity after GCT. After pruning, heads keep their original numbers.</p>\n";
  for (const RunData& r : runs) {
    s += "<h3>" + html::escape(r.name) + "</h3>\n";
    s += r.head_metrics.empty() ? not_available("head similarity", "no head_metrics.jsonl") : run_similarity(r);
  }
  return s + "</section>\n";
}

} // namespace pillars::report
