// The report page, the runs table and the curves: see report.h and sections.h.
#include "report/report.h"

#include <algorithm>
#include <optional>

#include "report/html.h"
#include "report/sections.h"

using nlohmann::json;

namespace pillars::report {

namespace {

// One curve of every run as chart series (runs without points are left out).
std::vector<svg::Series> run_series(const std::vector<RunData>& runs, std::vector<Point> RunData::*curve) {
  std::vector<svg::Series> out;
  for (size_t i = 0; i < runs.size(); ++i) {
    const std::vector<Point>& points = runs[i].*curve;
    if (points.empty()) continue;
    svg::Series s{runs[i].name, run_color(i), {}, {}};
    for (const Point& p : points) s.x.push_back(p.update), s.y.push_back(p.value);
    out.push_back(std::move(s));
  }
  return out;
}

// A figure with the chart of one curve over all runs, or a "not available" paragraph when no run
// has a point of it.
std::string curve_figure(const std::vector<RunData>& runs, std::vector<Point> RunData::*curve, const std::string& title,
                         const std::string& y_label, const std::string& missing) {
  svg::LineChart c;
  c.title = title, c.x_label = "update", c.y_label = y_label;
  c.series = run_series(runs, curve);
  if (c.series.empty()) return "<figure>" + not_available(title, missing) + "</figure>";
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto m = phase_markers(runs[i], run_color(i), runs.size() > 1 ? runs[i].name + ": " : "");
    c.markers.insert(c.markers.end(), m.begin(), m.end());
  }
  return "<figure>" + svg::line_chart(c) + "</figure>";
}

// The table cell of a number from eval_<split>.json.
std::string eval_cell(const RunData& r, const char* key, int decimals) {
  return html::number_cell(number_at(r.eval, key), decimals);
}

// The best (lowest) validation loss of a run, if it validated.
std::optional<double> best_valid_loss(const RunData& r) {
  std::optional<double> best;
  for (const Point& p : r.valid_loss)
    if (!best || p.value < *best) best = p.value;
  return best;
}

// The last update a run logged.
std::optional<double> last_update(const RunData& r) {
  std::optional<double> u;
  for (const json& line : r.log)
    if (const auto v = number_at(line, "update")) u = u ? std::max(*u, *v) : *v;
  return u;
}

// A table cell holding a large number in short form, the exact value and its source as tooltip.
std::string count_cell(std::optional<double> v, const std::string& source) {
  if (!v) return html::number_cell(v, 0);
  return "<td class=\"num\" title=\"" + html::escape(html::fixed(*v, 0) + " (" + source + ")") + "\">" +
         html::count(*v) + "</td>";
}

// The experiment's name and task from config.json ("n/a" when absent).
std::string config_cells(const RunData& r) {
  const std::string name = string_at(r.config, "name"), task = string_at(r.config, "task");
  auto cell = [](const std::string& s) {
    return s.empty() ? std::string("<td class=\"na\">n/a</td>") : "<td>" + html::escape(s) + "</td>";
  };
  return cell(name) + cell(task);
}

} // namespace

std::string run_color(size_t i) { return svg::palette(i); }

std::string not_available(const std::string& what, const std::string& why) {
  return "<p class=\"na\">" + html::escape(what) + ": not available" +
         (why.empty() ? "" : " (" + html::escape(why) + ")") + "</p>";
}

std::vector<svg::Marker> phase_markers(const RunData& run, const std::string& color, const std::string& prefix) {
  std::vector<svg::Marker> out;
  for (const PhaseStart& p : run.phases) out.push_back({p.update, prefix + p.phase, color});
  return out;
}

std::string runs_section(const std::vector<RunData>& runs) {
  std::string s =
      "<section id=\"runs\"><h2>Runs</h2>\n<div class=\"wide\"><table "
      "class=\"runs\">\n<tr><th>run</th><th>experiment</th><th>task</th>"
      "<th class=\"num\">updates</th><th class=\"num\">best valid loss</th>"
      "<th class=\"num\">parameters<br>(no embeddings)</th><th class=\"num\">FLOPs per<br>target token</th>"
      "<th class=\"num\">sentences/s</th><th class=\"num\">BLEU</th><th class=\"num\">ROUGE-1</th>"
      "<th class=\"num\">ROUGE-2</th><th class=\"num\">ROUGE-L</th><th class=\"num\">perplexity</th>"
      "<th>evaluation</th></tr>\n";
  for (size_t i = 0; i < runs.size(); ++i) {
    const RunData& r = runs[i];
    s += "<tr><td class=\"run\" title=\"" + html::escape(r.dir) +
         "\"><span class=\"sw\" style=\"display:inline-block;width:10px;height:10px;background:" + run_color(i) +
         "\"></span> " + html::escape(r.name) + "</td>";
    s += config_cells(r);
    s += html::number_cell(last_update(r), 0) + html::number_cell(best_valid_loss(r), 3);
    s += count_cell(r.model.parameters, r.model.parameters_source);
    s += count_cell(r.model.flops_per_token, "model config of " + r.model.flops_source);
    s += eval_cell(r, "sentences_per_second", 1) + eval_cell(r, "bleu", 2) + eval_cell(r, "rouge1", 2) +
         eval_cell(r, "rouge2", 2) + eval_cell(r, "rougeL", 2) + eval_cell(r, "ppl", 2);
    if (r.eval.is_null())
      s += "<td class=\"na\">n/a</td>";
    else
      s += "<td class=\"mono\">" + html::escape(r.eval_file) + " (" + html::escape(string_at(r.eval, "split", "?")) +
           (number_at(r.eval, "beam") ? ", beam " + html::number(*number_at(r.eval, "beam")) : std::string()) +
           ")</td>";
    s += "</tr>\n";
  }
  s +=
      "</table></div>\n<p class=\"note\">Parameters exclude the token embeddings and an untied output projection (the "
      "paper's "
      "accounting): counted on the evaluated checkpoint, else taken from prune.json, else counted on checkpoint_best / "
      "_avg / _last; hover a number for its source. " +
      html::escape(kFlopsMethod) + " Evaluation numbers come from eval_&lt;split&gt;.json; n/a = not available.</p>\n";
  for (const RunData& r : runs)
    for (const std::string& note : r.notes)
      s += "<p class=\"note\">" + html::escape(r.name) + ": " + html::escape(note) + "</p>\n";
  return s + "</section>\n";
}

std::string curves_section(const std::vector<RunData>& runs) {
  std::string s = "<section id=\"curves\"><h2>Training and validation</h2>\n<div class=\"charts\">\n";
  s += curve_figure(runs, &RunData::train_loss, "training loss", "loss", "no \"train\" lines in log.jsonl");
  s += curve_figure(runs, &RunData::valid_loss, "validation loss", "loss", "no \"valid\" lines in log.jsonl");
  s += curve_figure(runs, &RunData::valid_ppl, "validation perplexity", "perplexity", "no \"ppl\" in the valid lines");
  s += curve_figure(runs, &RunData::valid_bleu, "validation BLEU", "BLEU", "no \"bleu\" in the valid lines");
  s += curve_figure(runs, &RunData::valid_rouge, "validation ROUGE", "ROUGE", "no \"rouge\" in the valid lines");
  s += "</div>\n<p class=\"note\">Training loss is the mean over each logging window; validation BLEU decodes greedily "
       "on a subset (train.valid_max_sentences). Dashed vertical lines mark where a training phase begins.</p>\n";
  return s + "</section>\n";
}

int count_charts(const std::string& html) {
  int n = 0;
  for (size_t at = html.find("<svg class=\"chart\""); at != std::string::npos;
       at = html.find("<svg class=\"chart\"", at + 1))
    ++n;
  return n;
}

std::string render_report(const std::vector<RunData>& runs, const ReportOptions& options) {
  std::string names;
  for (const RunData& r : runs) names += (names.empty() ? "" : ", ") + r.name;
  const std::string title = !options.title.empty()    ? options.title
                            : options.study.is_null() ? "Pillars report: " + names
                                                      : "Pillars study: " + options.study.value("study", std::string());
  std::string body = "<header><h1>" + html::escape(title) + "</h1>\n<p class=\"meta\">";
  if (!options.study.is_null()) body += "The study's table (<code>pillars study --table</code>). ";
  if (!runs.empty()) {
    body += std::to_string(runs.size()) + " run(s): ";
    for (size_t i = 0; i < runs.size(); ++i)
      body += (i ? ", " : "") + std::string("<code>") + html::escape(runs[i].dir) + "</code>";
    body += ". ";
  }
  body += "Written by <code>pillars report</code>; Grouped Head Attention (Ni et al., ACL 2023).</p>\n<nav>";
  if (!options.study.is_null()) body += "<a href=\"#study\">Study</a>";
  if (!runs.empty())
    body +=
        "<a href=\"#runs\">Runs</a><a href=\"#curves\">Curves</a><a href=\"#head-metrics\">Head metrics</a>"
        "<a href=\"#similarity\">Head similarity</a><a href=\"#v2s\">Voting and pruning</a>";
  body += "</nav></header>\n";
  if (!options.study.is_null()) body += study_section(options.study);
  if (!runs.empty())
    body += runs_section(runs) + curves_section(runs) + head_metrics_section(runs) + similarity_section(runs) +
            v2s_section(runs);
  body += "<div id=\"render-check\" data-expected=\"" + std::to_string(count_charts(body)) +
          "\" data-ok=\"0\">render check: not run (the page's script did not run)</div>\n";
  return html::page(title, body);
}

} // namespace pillars::report
