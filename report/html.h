// HTML building blocks for `pillars report`: escaping, number formatting, and the page skeleton
// (inline CSS, one small inline script). Nothing here fetches anything: the page is one
// self-contained file with no external URL in it.
//
//   std::string body = "<h2>" + html::escape(name) + "</h2>" + ...;
//   std::string page = html::page("My runs", body);   // <!DOCTYPE html> … </html>
//
// Every text that comes from a file (run names, module names, JSON strings) goes through escape()
// before it is written into the page, in element content and in attribute values alike.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace pillars::report::html {

// Replaces & < > " ' with character references, so that the text can stand in element content and
// in a quoted attribute value. Bytes that are not valid UTF-8 are replaced by U+FFFD (the page is
// declared UTF-8); control characters other than tab, newline and carriage return become U+FFFD too.
std::string escape(std::string_view text);

// A short, readable number: up to 4 significant digits, exponent form ("2e-05", "1.5e6") only for
// very small or very large magnitudes, "-" prefix for negatives, no trailing zeros ("0.25", "1200").
// Non-finite values print as "n/a".
std::string number(double v);

// A number with a fixed count of decimals ("35.42"), "n/a" if non-finite.
std::string fixed(double v, int decimals);

// A count with a metric suffix and one decimal: 44012544 → "44.0M", 1234 → "1.2k", 512 → "512".
std::string count(double v);

// "<td>…</td>" holding the number (with `decimals` decimals) or a greyed "n/a" when absent.
std::string number_cell(std::optional<double> v, int decimals);

// The whole document: <!DOCTYPE html>, <head> with charset, title, the inline style sheet and the
// render-check script, then `body` inside <body>. `title` is escaped here; `body` is trusted HTML.
std::string page(const std::string& title, const std::string& body);

// The render-check script (also used by page()). When the page has loaded it counts the charts
// (<svg class="chart">) whose contents have a non-empty bounding box, compares that with the
// count the page says it holds (data-expected on #render-check), and writes the result into
// #render-check: data-charts (found), data-rendered (non-empty), data-errors (uncaught script
// errors seen), data-ok ("1" when everything rendered and no error happened, else "0").
const char* render_check_script();

// The inline style sheet.
const char* style_sheet();

} // namespace pillars::report::html
