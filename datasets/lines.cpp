// Line splitting, split selections and the plain/ escapes; see lines.h.
#include "datasets/lines.h"

#include <algorithm>

#include "base/error.h"

namespace pillars::data {

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start < text.size()) {
    const size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) {
      lines.push_back(text.substr(start));
      break;
    }
    lines.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

namespace {

// The first line start at or after byte `pos`: pos itself if a line begins there, else just after
// the next '\n' (or the end of the text).
size_t line_start_at_or_after(std::string_view text, size_t pos) {
  if (pos == 0 || pos >= text.size()) return std::min(pos, text.size());
  if (text[pos - 1] == '\n') return pos;
  const size_t nl = text.find('\n', pos);
  return nl == std::string_view::npos ? text.size() : nl + 1;
}

} // namespace

std::vector<std::string_view> select_lines(std::string_view text, const Selection& sel) {
  switch (sel.kind) {
    case Selection::Kind::all:
      return split_lines(text);
    case Selection::Kind::modulo: {
      std::vector<std::string_view> all = split_lines(text), out;
      for (size_t i = 0; i < all.size(); ++i)
        if (std::find(sel.residues.begin(), sel.residues.end(), i % sel.modulus) != sel.residues.end())
          out.push_back(all[i]);
      return out;
    }
    case Selection::Kind::byte_range: {
      const size_t n = text.size();
      const size_t begin = line_start_at_or_after(text, n * sel.begin_percent / 100);
      const size_t end = line_start_at_or_after(text, n * sel.end_percent / 100);
      return split_lines(text.substr(begin, end - begin));
    }
  }
  return {};
}

std::string escape_field(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string unescape_field(std::string_view text, const std::string& where) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\\') {
      out += text[i];
      continue;
    }
    const char next = i + 1 < text.size() ? text[i + 1] : '\0';
    switch (next) {
      case '\\':
        out += '\\';
        break;
      case 'r':
        out += '\r';
        break;
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      default:
        throw InputError(str_cat(where, ": bad escape at byte ", i, " (only \\\\ \\r \\n \\t are used)"));
    }
    ++i;
  }
  return out;
}

} // namespace pillars::data
