// HTML building blocks: see html.h.
#include "report/html.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace pillars::report::html {

namespace {

// The length of the valid UTF-8 sequence starting at s[i] (1–4), or 0 if the bytes there are not
// one (a stray continuation byte, a truncated sequence, an overlong form or a surrogate).
size_t utf8_sequence_length(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80) return 1;
  size_t n = 0;
  unsigned min = 0, cp = 0;
  if ((c & 0xE0) == 0xC0)
    n = 2, min = 0x80, cp = c & 0x1F;
  else if ((c & 0xF0) == 0xE0)
    n = 3, min = 0x800, cp = c & 0x0F;
  else if ((c & 0xF8) == 0xF0)
    n = 4, min = 0x10000, cp = c & 0x07;
  else
    return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

// printf into a std::string.
template <class... A>
std::string format(const char* fmt, A... args) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, args...);
  return buf;
}

} // namespace

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    const size_t n = utf8_sequence_length(text, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD"; // U+FFFD for an invalid byte
      ++i;
      continue;
    }
    if (n > 1) {
      out.append(text.substr(i, n));
      i += n;
      continue;
    }
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F)
          out += "\xEF\xBF\xBD";
        else
          out += static_cast<char>(c);
    }
    ++i;
  }
  return out;
}

std::string number(double v) {
  if (!std::isfinite(v)) return "n/a";
  if (v == 0) return "0";
  const double a = std::fabs(v);
  std::string s = (a >= 1e-3 && a < 1e6) ? format("%.4g", v) : format("%.2e", v);
  // "1.50e-05" → "1.5e-05" → "1.5e-5"; "2.00e+06" → "2e6".
  const size_t e = s.find('e');
  if (e == std::string::npos) return s;
  std::string mantissa = s.substr(0, e), exponent = s.substr(e + 1);
  if (mantissa.find('.') != std::string::npos) {
    while (mantissa.back() == '0') mantissa.pop_back();
    if (mantissa.back() == '.') mantissa.pop_back();
  }
  const bool negative = exponent[0] == '-';
  size_t digits = (exponent[0] == '-' || exponent[0] == '+') ? 1 : 0;
  while (digits + 1 < exponent.size() && exponent[digits] == '0') ++digits;
  return mantissa + "e" + (negative ? "-" : "") + exponent.substr(digits);
}

std::string fixed(double v, int decimals) {
  if (!std::isfinite(v)) return "n/a";
  return format("%.*f", decimals, v);
}

std::string count(double v) {
  if (!std::isfinite(v)) return "n/a";
  const double a = std::fabs(v);
  if (a >= 1e12) return format("%.1fT", v / 1e12);
  if (a >= 1e9) return format("%.1fG", v / 1e9);
  if (a >= 1e6) return format("%.1fM", v / 1e6);
  if (a >= 1e3) return format("%.1fk", v / 1e3);
  return format("%.0f", v);
}

std::string number_cell(std::optional<double> v, int decimals) {
  if (!v || !std::isfinite(*v)) return "<td class=\"na\" title=\"not available\">n/a</td>";
  return "<td class=\"num\">" + fixed(*v, decimals) + "</td>";
}

const char* style_sheet() {
  return R"CSS(
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1d1d1f;
       margin: 0 auto; padding: 0 24px 48px; max-width: 1500px; background: #fff; }
h1 { font-size: 24px; margin: 24px 0 4px; }
h2 { font-size: 19px; margin: 36px 0 8px; padding-bottom: 4px; border-bottom: 1px solid #ddd; }
h3 { font-size: 16px; margin: 22px 0 6px; }
h4 { font-size: 14px; margin: 14px 0 4px; font-family: ui-monospace, monospace; }
p.meta, p.note { color: #555; margin: 4px 0; }
p.na, td.na { color: #999; }
p.na { font-style: italic; }
nav a { margin-right: 14px; }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12.5px; }
table { border-collapse: collapse; margin: 8px 0; }
th, td { padding: 3px 9px; border-bottom: 1px solid #e4e4e4; text-align: left; vertical-align: top; }
th { background: #f6f6f6; font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.charts { display: flex; flex-wrap: wrap; gap: 10px 18px; align-items: flex-start; }
figure { margin: 0; }
figcaption { color: #555; font-size: 12px; max-width: 440px; }
.small figcaption { max-width: 360px; }
svg.chart, svg.legend { display: block; }
svg text { font: 11px system-ui, sans-serif; fill: #333; }
svg text.title { font-size: 12.5px; font-weight: 600; fill: #1d1d1f; }
svg text.axis-label { fill: #555; }
svg text.log-tag { font-size: 10px; font-weight: 700; fill: #a33; }
svg text.marker { font-size: 10px; fill: #555; }
svg .grid { stroke: #ececec; }
svg .axis { stroke: #888; }
ul.swatches { list-style: none; padding: 0; margin: 4px 0 8px; display: flex; flex-wrap: wrap; gap: 2px 14px; }
ul.swatches li { font-size: 12px; font-family: ui-monospace, monospace; }
ul.swatches span.sw { display: inline-block; width: 16px; height: 3px; vertical-align: middle; margin-right: 5px; }
.pair { display: flex; gap: 12px; align-items: flex-start; flex-wrap: wrap; }
.modules { display: flex; flex-wrap: wrap; gap: 6px 36px; }
.module { margin-bottom: 10px; }
td.run { white-space: nowrap; }
div.wide { overflow-x: auto; }
table.runs { font-size: 13px; }
table.votes td { font-size: 12px; white-space: nowrap; }
td.head { min-width: 54px; }
td.head.kept { background: #e7f5e9; font-weight: 600; }
span.bar { display: block; height: 4px; background: #4e79a7; margin-top: 2px; }
td.head.kept span.bar { background: #2f8f46; }
#render-check { color: #999; font-size: 11px; margin-top: 40px; }
)CSS";
}

const char* render_check_script() {
  return R"JS(
(function () {
  var errors = 0;
  window.addEventListener('error', function () { errors += 1; });
  window.addEventListener('load', function () {
    var box = document.getElementById('render-check');
    if (!box) return;
    var charts = document.querySelectorAll('svg.chart');
    var rendered = 0;
    for (var i = 0; i < charts.length; i++) {
      var b = charts[i].getBBox();
      var r = charts[i].getBoundingClientRect();
      if (b.width > 0 && b.height > 0 && r.width > 0 && r.height > 0) rendered += 1;
    }
    var expected = parseInt(box.getAttribute('data-expected') || '-1', 10);
    var ok = errors === 0 && rendered === charts.length && charts.length === expected;
    box.setAttribute('data-charts', String(charts.length));
    box.setAttribute('data-rendered', String(rendered));
    box.setAttribute('data-errors', String(errors));
    box.setAttribute('data-ok', ok ? '1' : '0');
    box.textContent = 'render check: ' + rendered + ' of ' + charts.length + ' charts drawn (' +
                      expected + ' expected), ' + errors + ' script errors';
  });
})();
)JS";
}

std::string page(const std::string& title, const std::string& body) {
  std::string out;
  out += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += "<title>" + escape(title) + "</title>\n";
  out += "<style>" + std::string(style_sheet()) + "</style>\n";
  out += "<script>" + std::string(render_check_script()) + "</script>\n";
  out += "</head>\n<body>\n" + body + "\n</body>\n</html>\n";
  return out;
}

} // namespace pillars::report::html
