// The sections of the report page (internal to report/): each takes the runs and returns the
// section's HTML, saying "not available" for what a run lacks. report.cpp puts them together.
#pragma once
#include <string>
#include <vector>

#include "report/run.h"
#include "report/svg.h"

namespace pillars::report {

// The color of the i-th run in every chart and table.
std::string run_color(size_t i);

// A paragraph saying that something is not available, and why (both escaped).
std::string not_available(const std::string& what, const std::string& why = "");

// The phase starts of a run as chart markers (labeled "<prefix>phase").
std::vector<svg::Marker> phase_markers(const RunData& run, const std::string& color, const std::string& prefix);

// report.cpp: the table comparing the runs, and the training/validation curves.
std::string runs_section(const std::vector<RunData>& runs);
std::string curves_section(const std::vector<RunData>& runs);

// heads.cpp: head-diversity metrics over updates, and the similarity heatmaps.
std::string head_metrics_section(const std::vector<RunData>& runs);
std::string similarity_section(const std::vector<RunData>& runs);

// study.cpp: a study's comparison (`pillars study --table`'s table.json) with Fig. 2 and Fig. 4.
std::string study_section(const nlohmann::json& table);

// v2s.cpp: votes, groups and kept heads (votes.json), and the pruning summary (prune.json).
std::string v2s_section(const std::vector<RunData>& runs);

} // namespace pillars::report
