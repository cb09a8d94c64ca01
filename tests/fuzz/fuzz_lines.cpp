// Fuzz target: the dataset line reader (datasets/lines.h): how read_field() cuts a field file into
// the examples of a split, and the mirror's plain/ escapes.
//
// Feeds: the input as a field file's bytes to split_lines(), to select_lines() with a modulo and a
// byte-range selection whose numbers come from the first bytes, and to unescape_field().
// Expects: InputError from unescape_field() for a backslash sequence it does not know.
// Asserts: the lines point into the text and, joined with '\n', give it back (less one final
// '\n'); selecting all gives the same lines; a modulo selection keeps exactly the lines of its
// residues; byte ranges [0, p) and [p, 100) are whole lines that together give every line once
// (a train/valid cut neither loses nor repeats an example); unescape_field() undoes
// escape_field(), and escape_field() undoes unescape_field() on text without raw CR, LF or TAB.
#include "datasets/lines.h"
#include "tests/fuzz/fuzz_common.h"

using namespace pillars;
using data::Selection;

namespace {

// The same lines: the same bytes of the text, not only equal strings.
bool same_lines(const std::vector<std::string_view>& a, const std::vector<std::string_view>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].data() != b[i].data() || a[i].size() != b[i].size()) return false;
  return true;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(fuzz::as_text(data, size));
  const std::string_view whole(text);
  const std::vector<std::string_view> lines = data::split_lines(whole);

  std::string joined;
  for (size_t i = 0; i < lines.size(); ++i) {
    fuzz::fuzz_require(
        lines[i].data() >= whole.data() && lines[i].data() + lines[i].size() <= whole.data() + whole.size(),
        "a line points outside the text");
    fuzz::fuzz_require(lines[i].find('\n') == std::string_view::npos, "a line holds a newline");
    if (i) joined += '\n';
    joined += lines[i];
  }
  fuzz::fuzz_require(joined == (!text.empty() && text.back() == '\n' ? text.substr(0, text.size() - 1) : text),
                     "the lines joined are not the text");
  fuzz::fuzz_require(same_lines(data::select_lines(whole, Selection{}), lines),
                     "selecting all lines differs from split_lines");

  const unsigned b0 = size > 0 ? data[0] : 0, b1 = size > 1 ? data[1] : 0, b2 = size > 2 ? data[2] : 0;
  Selection modulo;
  modulo.kind = Selection::Kind::modulo;
  modulo.modulus = 1 + b0 % 10;
  modulo.residues = {b1 % modulo.modulus, b2 % modulo.modulus};
  std::vector<std::string_view> expected;
  for (size_t i = 0; i < lines.size(); ++i)
    if (i % modulo.modulus == modulo.residues[0] || i % modulo.modulus == modulo.residues[1])
      expected.push_back(lines[i]);
  fuzz::fuzz_require(same_lines(data::select_lines(whole, modulo), expected),
                     "a modulo selection keeps the wrong lines");

  Selection head, tail;
  head.kind = tail.kind = Selection::Kind::byte_range;
  head.begin_percent = 0;
  head.end_percent = tail.begin_percent = b1 % 101;
  tail.end_percent = 100;
  std::vector<std::string_view> parts = data::select_lines(whole, head);
  const std::vector<std::string_view> rest = data::select_lines(whole, tail);
  parts.insert(parts.end(), rest.begin(), rest.end());
  fuzz::fuzz_require(same_lines(parts, lines), "two byte ranges that meet do not give every line once");

  fuzz::fuzz_require(data::unescape_field(data::escape_field(whole), "escape_field()") == text,
                     "unescape_field(escape_field(x)) != x");
  std::string unescaped;
  if (!fuzz::run_expecting_errors([&] { unescaped = data::unescape_field(whole, "fuzz input"); })) return 0;
  if (text.find_first_of("\r\n\t") == std::string::npos)
    fuzz::fuzz_require(data::escape_field(unescaped) == text, "escape_field(unescape_field(x)) != x");
  return 0;
}
