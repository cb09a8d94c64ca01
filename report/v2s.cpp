// The Voting-to-Stay part of the report: votes, groups and kept heads (votes.json) and the pruning
// summary (prune.json). See sections.h.
#include <algorithm>
#include <set>

#include "report/html.h"
#include "report/sections.h"

using nlohmann::json;

namespace pillars::report {

namespace {

// The integers of m[key] (anything else becomes −1); empty if absent.
std::vector<int64_t> integers(const json& m, const char* key) {
  std::vector<int64_t> out;
  const auto it = m.find(key);
  if (it == m.end() || !it->is_array()) return out;
  for (const json& v : *it) out.push_back(v.is_number_integer() ? v.get<int64_t>() : -1);
  return out;
}

// "h1, h5" for a list of head indices ("none" when empty).
std::string head_list(const std::vector<int64_t>& heads) {
  std::string s;
  for (int64_t h : heads) s += (s.empty() ? "h" : ", h") + std::to_string(h);
  return s.empty() ? "none" : s;
}

// The "modules" array of a votes/prune object, or an empty array.
const json& modules_of(const json& j) {
  static const json empty = json::array();
  if (!j.is_object()) return empty;
  const auto it = j.find("modules");
  return it != j.end() && it->is_array() ? *it : empty;
}

// A field of an object as text for the page ("?" when absent; numbers and strings only).
std::string field_text(const json& j, const char* key) {
  if (const auto v = number_at(j, key)) return html::number(*v);
  return html::escape(string_at(j, key, "?"));
}

// The votes table of one run: a row per module, a cell per head with its group, its votes (and a
// bar scaled to the module's most-voted head); kept heads highlighted.
std::string votes_table(const json& votes) {
  std::string s = "<p class=\"meta\">Rule <code>" + field_text(votes, "rule") + "</code>, feature map " +
                  field_text(votes, "feature_map") + ", " + field_text(votes, "groups") + " groups, " +
                  field_text(votes, "batches") +
                  " batches voted.</p>\n<table class=\"votes\">\n"
                  "<tr><th>module</th><th class=\"num\">heads</th><th>kept</th><th colspan=\"99\">per head: group · "
                  "votes</th></tr>\n";
  for (const json& m : modules_of(votes)) {
    const std::vector<int64_t> v = integers(m, "votes"), g = integers(m, "groups"), kept = integers(m, "kept");
    const std::set<int64_t> keep(kept.begin(), kept.end());
    const int64_t most = v.empty() ? 0 : std::max<int64_t>(1, *std::max_element(v.begin(), v.end()));
    const size_t heads = std::max(v.size(), g.size());
    s += "<tr><td class=\"mono\">" + html::escape(string_at(m, "module", "?")) + "</td><td class=\"num\">" +
         field_text(m, "heads") + "</td><td>" + head_list(kept) + "</td>";
    for (size_t h = 0; h < heads; ++h) {
      const int64_t votes_h = h < v.size() ? v[h] : -1, group = h < g.size() ? g[h] : -1;
      const double width = votes_h > 0 ? 100.0 * static_cast<double>(votes_h) / static_cast<double>(most) : 0;
      s += "<td class=\"head" + std::string(keep.count(static_cast<int64_t>(h)) ? " kept" : "") + "\">h" +
           std::to_string(h) + "<br>g" + (group >= 0 ? std::to_string(group) : "?") + " · " +
           (votes_h >= 0 ? std::to_string(votes_h) : "?") +
           "<span class=\"bar\" style=\"width:" + html::fixed(width, 0) + "%\"></span></td>";
    }
    s += "</tr>\n";
  }
  return s + "</table>\n";
}

// "44.0M → 29.9M (−32.1%)" for two parameter counts; "n/a" when either is missing.
std::string before_after(const json& prune, const char* before, const char* after) {
  const auto b = number_at(prune, before), a = number_at(prune, after);
  if (!b || !a) return "n/a";
  std::string s = "<span title=\"" + html::fixed(*b, 0) + " → " + html::fixed(*a, 0) + "\">" + html::count(*b) + " → " +
                  html::count(*a);
  if (*b > 0) s += " (" + html::fixed(100.0 * (*a - *b) / *b, 1) + "%)";
  return s + "</span>";
}

// The pruning summary of one run.
std::string prune_summary(const json& prune) {
  std::string s =
      "<p class=\"meta\">Pruned from <code>" + html::escape(string_at(prune, "from", "?")) + "</code>.</p>\n";
  s += "<table><tr><th>parameters</th><th>before → after</th></tr>\n<tr><td>without embeddings</td><td>" +
       before_after(prune, "params_before_no_embeddings", "params_after_no_embeddings") +
       "</td></tr>\n<tr><td>all</td><td>" + before_after(prune, "params_before", "params_after") +
       "</td></tr></table>\n";
  s += "<table><tr><th>module</th><th class=\"num\">heads before</th><th class=\"num\">kept</th><th>kept "
       "heads</th></tr>\n";
  for (const json& m : modules_of(prune)) {
    const std::vector<int64_t> kept = integers(m, "kept");
    s += "<tr><td class=\"mono\">" + html::escape(string_at(m, "module", "?")) + "</td><td class=\"num\">" +
         field_text(m, "heads_before") + "</td><td class=\"num\">" + std::to_string(kept.size()) + "</td><td>" +
         head_list(kept) + "</td></tr>\n";
  }
  return s + "</table>\n";
}

} // namespace

std::string v2s_section(const std::vector<RunData>& runs) {
  std::string s =
      "<section id=\"v2s\"><h2>Voting-to-Stay and pruning</h2>\n<p class=\"note\">votes.json: in every batch of "
      "the voting pass, the head nearest each HUDS group center gets a vote; kept heads are highlighted. "
      "prune.json: the heads physically removed from the model.</p>\n";
  for (const RunData& r : runs) {
    s += "<h3>" + html::escape(r.name) + "</h3>\n<h4>votes</h4>\n";
    s += r.votes.is_null() ? not_available("votes.json", "the run did not vote") : votes_table(r.votes);
    s += "<h4>pruning</h4>\n";
    s += r.prune.is_null() ? not_available("prune.json", "the run was not pruned") : prune_summary(r.prune);
  }
  return s + "</section>\n";
}

} // namespace pillars::report
