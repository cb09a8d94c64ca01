// The SVG chart library: see svg.h.
#include "report/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>

#include "report/html.h"

namespace pillars::report::svg {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// "#rrggbb" of a color given as three channels in [0, 255].
std::string hex(double r, double g, double b) {
  char buf[8];
  auto c = [](double v) { return static_cast<int>(std::lround(std::clamp(v, 0.0, 255.0))); };
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", c(r), c(g), c(b));
  return buf;
}

// Linear interpolation through color stops (each "#rrggbb", evenly spaced over [0, 1]).
std::string interpolate(const std::vector<const char*>& stops, double t) {
  t = std::clamp(std::isfinite(t) ? t : 0.0, 0.0, 1.0);
  const double pos = t * static_cast<double>(stops.size() - 1);
  const size_t i = std::min(static_cast<size_t>(pos), stops.size() - 2);
  const double f = pos - static_cast<double>(i);
  auto channel = [](const char* s, int k) {
    return static_cast<double>(std::strtol(std::string(s + 1 + 2 * k, 2).c_str(), nullptr, 16));
  };
  return hex(channel(stops[i], 0) * (1 - f) + channel(stops[i + 1], 0) * f,
             channel(stops[i], 1) * (1 - f) + channel(stops[i + 1], 1) * f,
             channel(stops[i], 2) * (1 - f) + channel(stops[i + 1], 2) * f);
}

// A rough width in pixels of `text` at the 11px chart font (for laying out legends).
double text_width(const std::string& text) { return 6.2 * static_cast<double>(text.size()); }

// <text> with the given position, extra attributes and escaped content.
std::string text(double x, double y, const std::string& content, const std::string& attrs = "") {
  return "<text x=\"" + coord(x) + "\" y=\"" + coord(y) + "\"" + (attrs.empty() ? "" : " " + attrs) + ">" +
         html::escape(content) + "</text>";
}

// <line> from (x1, y1) to (x2, y2) with extra attributes.
std::string line(double x1, double y1, double x2, double y2, const std::string& attrs) {
  return "<line x1=\"" + coord(x1) + "\" y1=\"" + coord(y1) + "\" x2=\"" + coord(x2) + "\" y2=\"" + coord(y2) + "\" " +
         attrs + "/>";
}

// <rect> at (x, y) of size w × h with a fill color and optional extra content (a <title>).
std::string rect(double x, double y, double w, double h, const std::string& fill, const std::string& inner = "") {
  std::string s = "<rect x=\"" + coord(x) + "\" y=\"" + coord(y) + "\" width=\"" + coord(w) + "\" height=\"" +
                  coord(h) + "\" fill=\"" + fill + "\"";
  return inner.empty() ? s + "/>" : s + ">" + inner + "</rect>";
}

// The opening <svg> tag of a chart of the given size; `label` is its accessible name.
std::string open_svg(double w, double h, const std::string& label, const char* cls = "chart") {
  return "<svg class=\"" + std::string(cls) + "\" width=\"" + coord(w) + "\" height=\"" + coord(h) +
         "\" viewBox=\"0 0 " + coord(w) + " " + coord(h) + "\" role=\"img\" aria-label=\"" + html::escape(label) +
         "\">";
}

// Whether a point can be drawn on the chart's y scale.
bool drawable(double x, double y, bool log) { return std::isfinite(x) && std::isfinite(y) && (!log || y > 0); }

// The legend rows of a line chart, laid out left to right within `width` from y = top; returns the
// SVG and sets `height` to the space it takes.
std::string legend_rows(const std::vector<Series>& series, double width, double top, double& height) {
  std::string out;
  double x = 10, y = top + 10;
  for (const Series& s : series) {
    const double w = 26 + text_width(s.name) + 14;
    if (x > 10 && x + w > width - 6) x = 10, y += 16;
    out += line(x, y - 4, x + 20, y - 4, "stroke=\"" + s.color + "\" stroke-width=\"2.5\"");
    out += text(x + 25, y, s.name);
    x += w;
  }
  height = series.empty() ? 0 : y - top + 8;
  return out;
}

} // namespace

// ---- ticks and scales ---------------------------------------------------------------------------

double nice_step(double span, int target) {
  if (!(span > 0) || !std::isfinite(span)) return 1;
  const double raw = span / std::max(1, target);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / magnitude; // in [1, 10)
  const double nice = f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10;
  return nice * magnitude;
}

std::vector<double> nice_ticks(double lo, double hi, int target) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) return {0, 1};
  if (lo > hi) std::swap(lo, hi);
  if (lo == hi) {
    const double pad = lo == 0 ? 1 : std::fabs(lo) * 0.1;
    lo -= pad, hi += pad;
  }
  const double step = nice_step(hi - lo, target);
  const double first = std::floor(lo / step + 1e-9), last = std::ceil(hi / step - 1e-9);
  std::vector<double> ticks;
  for (double k = first; k <= last; k += 1) {
    const double v = k * step;
    // k·step rounded to the step's precision, so that 0.1·3 prints as 0.3, and −0 becomes 0.
    const double digits = std::pow(10.0, std::max(0.0, -std::floor(std::log10(step)) + 2));
    ticks.push_back(std::round(v * digits) / digits + 0.0);
  }
  return ticks;
}

std::vector<double> log_ticks(double lo, double hi) {
  if (!(lo > 0) || !(hi > lo) || !std::isfinite(hi)) return {1, 10};
  const int first = static_cast<int>(std::floor(std::log10(lo) + 1e-9));
  const int last = static_cast<int>(std::ceil(std::log10(hi) - 1e-9));
  const int decades = std::max(1, last - first);
  const int every = (decades + 7) / 8; // at most 8 intervals
  const int end = std::max(last, first + 1);
  std::vector<double> ticks;
  int k = first;
  for (; k < end; k += every) {
    const double p = std::pow(10.0, k);
    ticks.push_back(p);
    if (decades < 2)
      for (double m : {2.0, 5.0}) ticks.push_back(m * p);
  }
  ticks.push_back(std::pow(10.0, k)); // the first tick at or above hi
  return ticks;
}

bool spans_decades(const std::vector<double>& values, double decades) {
  double lo = kInf, hi = -kInf;
  for (double v : values) {
    if (!std::isfinite(v)) continue;
    if (v <= 0) return false;
    lo = std::min(lo, v), hi = std::max(hi, v);
  }
  return lo < hi && hi / lo > std::pow(10.0, decades);
}

double Scale::operator()(double v) const {
  double t;
  if (log) {
    const double l = std::log10(lo), h = std::log10(hi);
    t = h > l ? (std::log10(std::max(v, lo)) - l) / (h - l) : 0.5;
  } else {
    t = hi > lo ? (v - lo) / (hi - lo) : 0.5;
  }
  return px_lo + t * (px_hi - px_lo);
}

Axis make_axis(double lo, double hi, bool log, double px_lo, double px_hi, int target_ticks) {
  Axis a;
  a.ticks = log ? log_ticks(lo, hi) : nice_ticks(lo, hi, target_ticks);
  a.scale = {a.ticks.front(), a.ticks.back(), px_lo, px_hi, log};
  return a;
}

// ---- colors ------------------------------------------------------------------------------------

std::string palette(size_t i) {
  static const char* colors[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                 "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
  return colors[i % 10];
}

std::string module_color(const std::string& module, int layers) {
  int hue = 280; // other
  if (module.find("encoder_attn") != std::string::npos)
    hue = 28;
  else if (module.rfind("decoder", 0) == 0)
    hue = 135;
  else if (module.rfind("encoder", 0) == 0)
    hue = 212;
  int layer = 0;
  const size_t at = module.find("layers.");
  if (at != std::string::npos) layer = std::atoi(module.c_str() + at + 7);
  const double t = layers > 1 ? std::clamp(static_cast<double>(layer) / (layers - 1), 0.0, 1.0) : 0.0;
  // Lower layers darker; the hue also turns a little with the layer, so that neighbors differ.
  char buf[40];
  std::snprintf(buf, sizeof buf, "hsl(%d,70%%,%d%%)", hue + static_cast<int>(std::lround(40 * (t - 0.5))),
                static_cast<int>(std::lround(24 + 44 * t)));
  return buf;
}

std::string color_map(double t, bool diverging) {
  if (diverging) return interpolate({"#3b4cc0", "#8db0fe", "#f2f2f2", "#f49a7b", "#b40426"}, t);
  return interpolate({"#440154", "#3b528b", "#21918c", "#5ec962", "#fde725"}, t);
}

// ---- line charts --------------------------------------------------------------------------------

std::string line_chart(const LineChart& c) {
  const double W = c.width, H = c.height;
  const double left = 62, right = W - 16, top = 30, bottom = H - 42;
  // The y scale: log when asked for, or (automatic) when the data spans decades.
  std::vector<double> ys, xs;
  for (const Series& s : c.series)
    for (size_t i = 0; i < std::min(s.x.size(), s.y.size()); ++i)
      if (std::isfinite(s.x[i]) && std::isfinite(s.y[i])) xs.push_back(s.x[i]), ys.push_back(s.y[i]);
  const bool log = c.y_scale == YScale::log || (c.y_scale == YScale::automatic && spans_decades(ys));
  if (log) ys.erase(std::remove_if(ys.begin(), ys.end(), [](double v) { return v <= 0; }), ys.end());

  double legend_height = 0;
  const std::string legend = c.legend ? legend_rows(c.series, W, H, legend_height) : "";
  std::string out = open_svg(W, H + legend_height, c.title);
  out += text(left, 17, c.title, "class=\"title\"");
  if (ys.empty()) {
    out += rect(left, top, right - left, bottom - top, "#fafafa");
    out += text((left + right) / 2, (top + bottom) / 2, "no data", "text-anchor=\"middle\" class=\"axis-label\"");
    return out + "</svg>";
  }
  for (const Marker& m : c.markers) xs.push_back(m.x);
  const auto [ylo, yhi] = std::minmax_element(ys.begin(), ys.end());
  const auto [xlo, xhi] = std::minmax_element(xs.begin(), xs.end());
  const Axis y = make_axis(*ylo, *yhi, log, bottom, top, 5);
  const Axis x = make_axis(*xlo, *xhi, false, left, right, 6);

  // Grid, ticks and tick labels.
  for (double t : y.ticks) {
    const double py = y.scale(t);
    out += line(left, py, right, py, "class=\"grid\"");
    out += text(left - 5, py + 3.5, html::number(t), "text-anchor=\"end\"");
  }
  for (double t : x.ticks) {
    const double px = x.scale(t);
    out += line(px, bottom, px, bottom + 4, "class=\"axis\"");
    out += text(px, bottom + 16, html::number(t), "text-anchor=\"middle\"");
  }
  out += line(left, top, left, bottom, "class=\"axis\"") + line(left, bottom, right, bottom, "class=\"axis\"");
  out += text((left + right) / 2, bottom + 33, c.x_label, "text-anchor=\"middle\" class=\"axis-label\"");
  const std::string ylabel = c.y_label + (log ? " (log)" : "");
  out += "<text x=\"14\" y=\"" + coord((top + bottom) / 2) +
         "\" text-anchor=\"middle\" class=\"axis-label\" transform=\"rotate(-90 14 " + coord((top + bottom) / 2) +
         ")\">" + html::escape(ylabel) + "</text>";
  if (log) out += text(right, 17, "log scale", "text-anchor=\"end\" class=\"log-tag\"");

  // Markers: dashed vertical lines, labels staggered so that neighbors do not overlap.
  for (size_t i = 0; i < c.markers.size(); ++i) {
    const Marker& m = c.markers[i];
    const double px = x.scale(m.x);
    out += line(px, top, px, bottom, "stroke=\"" + m.color + "\" stroke-dasharray=\"5 3\" stroke-width=\"1.2\"");
    out += text(px + 3, top + 9 + 11 * static_cast<double>(i % 3), m.label, "class=\"marker\"");
  }

  // The series: one polyline per run of drawable points, dots where a point stands alone or the
  // series is short.
  for (const Series& s : c.series) {
    const size_t n = std::min(s.x.size(), s.y.size());
    const std::string tip = "<title>" + html::escape(s.name) + "</title>";
    std::string points;
    size_t in_segment = 0, drawn = 0;
    for (size_t i = 0; i < n; ++i) drawn += drawable(s.x[i], s.y[i], log);
    auto flush = [&] {
      if (in_segment >= 2)
        out += "<polyline fill=\"none\" stroke=\"" + s.color +
               "\" stroke-width=\"1.7\" stroke-linejoin=\"round\" points=\"" + points + "\">" + tip + "</polyline>";
      points.clear();
      in_segment = 0;
    };
    for (size_t i = 0; i < n; ++i) {
      if (!drawable(s.x[i], s.y[i], log)) {
        flush();
        continue;
      }
      const double px = x.scale(s.x[i]), py = y.scale(s.y[i]);
      if (!points.empty()) points += ' ';
      points.append(coord(px)).append(",").append(coord(py));
      ++in_segment;
      const bool alone =
          (i == 0 || !drawable(s.x[i - 1], s.y[i - 1], log)) && (i + 1 == n || !drawable(s.x[i + 1], s.y[i + 1], log));
      if (alone || drawn <= 30)
        out += "<circle cx=\"" + coord(px) + "\" cy=\"" + coord(py) + "\" r=\"2.4\" fill=\"" + s.color + "\"><title>" +
               html::escape(s.name) + ": " + html::number(s.y[i]) + " at " + html::number(s.x[i]) + "</title></circle>";
    }
    flush();
  }
  return out + legend + "</svg>";
}

// ---- heatmaps -----------------------------------------------------------------------------------

std::string heatmap(const Heatmap& m) {
  size_t n = m.values.size();
  for (const auto& row : m.values) n = std::max(n, row.size());
  const double cell = m.cell > 0 ? m.cell : std::clamp(260.0 / static_cast<double>(std::max<size_t>(n, 1)), 10.0, 28.0);
  const double gx = 56, gy = 56; // the grid's top-left corner
  const double size = cell * static_cast<double>(n);
  const double bar_x = gx + size + 16, W = bar_x + 12 + 52, H = gy + std::max(size, 60.0) + 12;
  const std::string font = cell < 18 ? " font-size=\"9\"" : "";
  auto label = [&](size_t i) { return i < m.labels.size() ? m.labels[i] : head_label(static_cast<int64_t>(i)); };
  auto group_chip = [&](size_t i, double x, double y, double w, double h) -> std::string {
    if (i >= m.groups.size() || m.groups[i] < 0) return "";
    return rect(x, y, w, h, palette(static_cast<size_t>(m.groups[i])),
                "<title>" + html::escape(label(i)) + ": group " + std::to_string(m.groups[i]) + "</title>");
  };

  std::string out = open_svg(W, H, m.title);
  out += text(8, 17, m.title, "class=\"title\"");
  // Row and column labels with their group chips.
  for (size_t i = 0; i < n; ++i) {
    const double mid = static_cast<double>(i) * cell + cell / 2;
    out += text(gx - 14, gy + mid + 3.5, label(i), "text-anchor=\"end\"" + font);
    out += group_chip(i, gx - 11, gy + mid - cell / 2 + 2, 8, cell - 4);
    out += text(gx + mid, gy - 14, label(i), "text-anchor=\"middle\"" + font);
    out += group_chip(i, gx + mid - cell / 2 + 2, gy - 11, cell - 4, 8);
  }
  // The cells.
  const double span = m.hi > m.lo ? m.hi - m.lo : 1;
  for (size_t r = 0; r < m.values.size(); ++r)
    for (size_t c = 0; c < m.values[r].size(); ++c) {
      const double v = m.values[r][c];
      const std::string fill = std::isfinite(v) ? color_map((v - m.lo) / span, m.diverging) : "#eeeeee";
      const std::string tip =
          "<title>" + html::escape(label(r)) + " · " + html::escape(label(c)) + ": " + html::number(v) + "</title>";
      out += rect(gx + static_cast<double>(c) * cell, gy + static_cast<double>(r) * cell, cell, cell, fill, tip);
    }
  // The color bar, top = hi, with three labels.
  const double bar_h = std::max(size, 60.0);
  const int steps = 40;
  for (int k = 0; k < steps; ++k) {
    const double t = 1 - (k + 0.5) / steps;
    out += rect(bar_x, gy + bar_h * k / steps, 12, bar_h / steps + 0.5, color_map(t, m.diverging));
  }
  out += text(bar_x + 16, gy + 8, html::number(m.hi));
  out += text(bar_x + 16, gy + bar_h / 2 + 3.5, html::number((m.lo + m.hi) / 2));
  out += text(bar_x + 16, gy + bar_h, html::number(m.lo));
  return out + "</svg>";
}

std::string head_label(int64_t head) {
  std::string s = "h";
  s += std::to_string(head);
  return s;
}

std::string coord(double v) {
  if (!std::isfinite(v)) v = 0;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  std::string s = buf;
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s == "-0" ? "0" : s;
}

} // namespace pillars::report::svg
