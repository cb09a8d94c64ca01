// A small SVG chart library for `pillars report`: scales with "nice" ticks (linear and
// logarithmic), line charts with a legend and vertical markers, heatmaps with a color bar.
// Every function returns a self-contained <svg> element as a string (no ids, no external
// references), so charts can be pasted into a page in any number.
//
//   LineChart c;
//   c.title = "training loss";  c.x_label = "update";  c.y_label = "loss";
//   c.series.push_back({"vanilla", palette(0), {10, 20, 30}, {9.5, 8.7, 7.9}});
//   c.markers.push_back({20, "gct", palette(0)});
//   std::string svg = line_chart(c);      // <svg class="chart" …>…</svg>
//
// Scales: linear axes get ticks at 1, 2 or 5 × 10^k steps, and the axis is widened to the first
// and last tick; a logarithmic axis (chosen automatically when positive values span more than two
// decades) gets a tick per decade and says "log" on the chart. Non-finite values are gaps.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace pillars::report::svg {

// ---- ticks and scales ---------------------------------------------------------------------------

// The "nice" step for covering a range of `span` with about `target` intervals: 1, 2 or 5 × 10^k
// (Heckbert, "Nice numbers for graph labels", Graphics Gems 1990).
double nice_step(double span, int target);

// Tick positions k·step covering [lo, hi] (the first at or below lo, the last at or above hi),
// step = nice_step(hi − lo, target). A degenerate range (lo == hi) is widened around its value.
std::vector<double> nice_ticks(double lo, double hi, int target = 5);

// Ticks for a logarithmic axis over [lo, hi] (0 < lo < hi): the powers of ten from the decade at or
// below lo to the one at or above hi; every n-th decade when there would be more than 8; with 2×
// and 5× each decade added when the range covers less than two decades.
std::vector<double> log_ticks(double lo, double hi);

// True when every finite value is > 0 and the largest is more than 10^decades times the smallest:
// such data is drawn on a log axis.
bool spans_decades(const std::vector<double>& values, double decades = 2.0);

// A map from data values to pixels: [lo, hi] → [px_lo, px_hi], linear or logarithmic (lo > 0).
struct Scale {
  double lo = 0, hi = 1;
  double px_lo = 0, px_hi = 1;
  bool log = false;
  // The pixel position of v (values outside [lo, hi] extrapolate; v ≤ 0 on a log scale maps to lo).
  double operator()(double v) const;
};

// An axis: a scale whose domain was widened to its ticks, and the ticks.
struct Axis {
  Scale scale;
  std::vector<double> ticks;
};

// The axis for data in [lo, hi] drawn between the pixels px_lo and px_hi.
Axis make_axis(double lo, double hi, bool log, double px_lo, double px_hi, int target_ticks = 5);

// ---- colors ------------------------------------------------------------------------------------

// The i-th color of a 10-color categorical palette (Tableau 10), "#rrggbb"; repeats after 10.
std::string palette(size_t i);

// A color for an attention module by its name: the hue says the kind (encoder self-attention
// blue, decoder self-attention green, decoder cross-attention orange, anything else purple), the
// lightness (and a small turn of the hue) the layer (darker = lower layer) out of `layers` layers.
std::string module_color(const std::string& module, int layers);

// The color at t ∈ [0, 1] of a sequential map (viridis-like, dark blue → yellow) or, when
// `diverging`, of a blue → white → red map (white at t = 0.5).
std::string color_map(double t, bool diverging);

// ---- line charts --------------------------------------------------------------------------------

// One line: points (x[i], y[i]); a non-finite y breaks the line (a gap).
struct Series {
  std::string name;
  std::string color;
  std::vector<double> x, y;
};

// A vertical dashed line at x with a label (e.g. the start of a training phase).
struct Marker {
  double x = 0;
  std::string label;
  std::string color = "#777";
};

enum class YScale { automatic, linear, log };

struct LineChart {
  std::string title, x_label, y_label;
  std::vector<Series> series;
  std::vector<Marker> markers;
  int width = 440, height = 260;      // of the plot with its axes; the legend adds rows below
  YScale y_scale = YScale::automatic; // automatic: log when spans_decades(all y values)
  bool legend = true;                 // draw the series names below the plot
};

// The chart as <svg class="chart" …>. A chart without any finite point says "no data" instead.
std::string line_chart(const LineChart& chart);

// ---- heatmaps -----------------------------------------------------------------------------------

struct Heatmap {
  std::string title;
  std::vector<std::vector<double>> values; // rows × columns (rows may be ragged: missing = blank)
  std::vector<std::string> labels;         // one per row/column ("h0", …); may be empty
  std::vector<int> groups;                 // a group per row/column (drawn as colored chips); may be empty
  double lo = 0, hi = 1;                   // the color scale's range
  bool diverging = false;                  // blue–white–red around the middle of [lo, hi]
  int cell = 0;                            // cell size in pixels; 0 = chosen from the size
};

// The heatmap as <svg class="chart" …> with a color bar; each cell has a tooltip with its value.
std::string heatmap(const Heatmap& map);

// "h3": the label of head 3.
std::string head_label(int64_t head);

// Strings for SVG attribute values: a coordinate with at most 2 decimals ("12.5").
std::string coord(double v);

} // namespace pillars::report::svg
