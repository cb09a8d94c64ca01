// BPE codes files (subword-nmt format), word counting and BPE removal; see bpe.h.
#include <fstream>
#include <sstream>

#include "base/input_file.h"
#include "base/error.h"
#include "base/atomic_file.h"
#include "text/bpe.h"

namespace pillars::text {

namespace {

constexpr std::string_view kStripChars = "\r\n ";

std::string_view strip(std::string_view s, std::string_view chars) {
  size_t b = s.find_first_not_of(chars);
  if (b == std::string_view::npos) return {};
  size_t e = s.find_last_not_of(chars);
  return s.substr(b, e - b + 1);
}

// The version in "#version: 0.2": apply_bpe.py takes the last whitespace-separated field, drops
// trailing ".0" groups and splits the rest on ".".
void parse_version(std::string_view first_line, const std::string& name, BpeCodes& codes) {
  std::string_view line = strip(first_line, " \t\r\n");
  size_t sp = line.find_last_of(" \t");
  std::string_view field = sp == std::string_view::npos ? line.substr(9) : line.substr(sp + 1);
  if (field == "byte") throw InputError(str_cat(name, ": byte-level BPE codes are not supported"));
  std::vector<int> parts;
  std::string num;
  for (size_t i = 0; i <= field.size(); ++i) {
    if (i == field.size() || field[i] == '.') {
      if (num.empty() || num.size() > 6)
        throw InputError(str_cat(name, ": line 1: bad BPE codes version '", first_line, "'"));
      parts.push_back(std::stoi(num));
      num.clear();
    } else if (field[i] >= '0' && field[i] <= '9') {
      num += field[i];
    } else {
      throw InputError(str_cat(name, ": line 1: bad BPE codes version '", first_line, "'"));
    }
  }
  while (parts.size() > 1 && parts.back() == 0) parts.pop_back();
  codes.version_major = parts[0];
  codes.version_minor = parts.size() > 1 ? parts[1] : 0;
  if (parts.size() > 2 || !((codes.version_major == 0 && codes.version_minor == 1) ||
                            (codes.version_major == 0 && codes.version_minor == 2)))
    throw InputError(
        str_cat(name, ": BPE codes version '", field, "' is not supported (0.1 or 0.2; byte-level codes are not)"));
}

} // namespace

BpeCodes parse_bpe_codes(std::string_view text, const std::string& name) {
  BpeCodes codes;
  size_t pos = 0, line_no = 1;
  if (text.starts_with("#version:")) {
    size_t nl = text.find('\n');
    parse_version(text.substr(0, nl), name, codes);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    line_no = 2;
  } else {
    codes.version_major = 0; // no header: the original format
    codes.version_minor = 1;
  }
  // codes.read().rstrip('\n').split('\n'), each item.strip('\r\n ').split(' ') of two units.
  std::string_view body = text.substr(pos);
  while (!body.empty() && body.back() == '\n') body.remove_suffix(1);
  if (body.empty()) return codes;
  size_t start = 0;
  for (;; ++line_no) {
    size_t nl = body.find('\n', start);
    std::string_view item =
        strip(body.substr(start, nl == std::string_view::npos ? body.size() - start : nl - start), kStripChars);
    size_t sp = item.find(' ');
    if (sp == std::string_view::npos || sp == 0 || sp + 1 == item.size() ||
        item.find(' ', sp + 1) != std::string_view::npos)
      throw InputError(str_cat(name, ": line ", line_no,
                               ": a BPE merge must be exactly two units separated by one space, got '", item, "'"));
    codes.merges.emplace_back(std::string(item.substr(0, sp)), std::string(item.substr(sp + 1)));
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
  return codes;
}

BpeCodes read_bpe_codes(const std::string& path) {
  check_regular_file(path); // a FIFO would block, a device never end (base/input_file.h)
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(str_cat(path, ": cannot open BPE codes file"));
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_bpe_codes(ss.str(), path);
}

std::string format_bpe_codes(const BpeCodes& codes) {
  std::string out = str_cat("#version: ", codes.version_major, ".", codes.version_minor, "\n");
  for (const auto& [a, b] : codes.merges) {
    out += a;
    out += ' ';
    out += b;
    out += '\n';
  }
  return out;
}

void write_bpe_codes(const std::string& path, const BpeCodes& codes) {
  io::atomic_write_file(path, format_bpe_codes(codes));
}

void count_words(std::string_view line, WordCounts& counts) {
  std::string_view s = strip(line, kStripChars);
  size_t start = 0;
  while (start <= s.size()) {
    size_t sp = s.find(' ', start);
    if (sp == std::string_view::npos) sp = s.size();
    if (sp > start) ++counts[std::string(s.substr(start, sp - start))];
    start = sp + 1;
  }
}

std::string remove_bpe(std::string_view line, std::string_view separator) {
  // s/(@@ )|(@@ ?$)//g, one left-to-right pass as sed makes it.
  std::string out;
  out.reserve(line.size());
  const size_t k = separator.size();
  size_t i = 0;
  while (i < line.size()) {
    if (k && line.compare(i, k, separator) == 0) {
      size_t after = i + k;
      if (after < line.size() && line[after] == ' ') {
        i = after + 1;
        continue;
      }
      if (after == line.size()) break;
    }
    out += line[i++];
  }
  return out;
}

} // namespace pillars::text
