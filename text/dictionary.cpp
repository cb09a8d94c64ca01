// fairseq's Dictionary; see dictionary.h.
#include "text/dictionary.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "base/input_file.h"
#include "base/error.h"
#include "base/atomic_file.h"
#include "text/unicode.h"

namespace pillars::text {

namespace {

// str.isspace() of Python: what str.split() and the regex \s of fairseq's tokenize_line use.
bool py_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

} // namespace

std::vector<std::string> split_whitespace(std::string_view line) {
  std::vector<std::string> words;
  bool ascii = std::all_of(line.begin(), line.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
  if (ascii) { // the common case, without decoding
    size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() && py_space(static_cast<unsigned char>(line[i]))) ++i;
      size_t start = i;
      while (i < line.size() && !py_space(static_cast<unsigned char>(line[i]))) ++i;
      if (i > start) words.emplace_back(line.substr(start, i - start));
    }
    return words;
  }
  std::u32string u = utf8_decode(line);
  size_t i = 0;
  while (i < u.size()) {
    while (i < u.size() && py_space(u[i])) ++i;
    size_t start = i;
    while (i < u.size() && !py_space(u[i])) ++i;
    if (i > start) words.push_back(utf8_encode(std::u32string_view(u).substr(start, i - start)));
  }
  return words;
}

Dictionary::Dictionary() {
  add_symbol("<s>", 1);
  add_symbol("<pad>", 1);
  add_symbol("</s>", 1);
  add_symbol("<unk>", 1);
}

int32_t Dictionary::add_symbol(const std::string& word, int64_t n) {
  auto it = indices_.find(word);
  if (it != indices_.end()) {
    counts_[it->second] += n;
    return it->second;
  }
  int32_t id = int32_t(symbols_.size());
  indices_.emplace(word, id);
  symbols_.push_back(word);
  counts_.push_back(n);
  return id;
}

void Dictionary::add_line(std::string_view line) {
  for (const std::string& w : split_whitespace(line)) add_symbol(w, 1);
  add_symbol(symbols_[eos()], 1);
}

void Dictionary::finalize(int64_t threshold, int64_t nwords, int padding_factor) {
  if (nwords <= 0) nwords = int64_t(size());
  const size_t ns = size_t(nspecial());
  std::vector<size_t> order;
  for (size_t i = ns; i < symbols_.size(); ++i) order.push_back(i);
  // Counter(dict(sorted(zip(symbols, counts)))).most_common(n): by count descending, and for
  // equal counts in the order of the sorted words.
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (counts_[a] != counts_[b]) return counts_[a] > counts_[b];
    return symbols_[a] < symbols_[b];
  });
  std::vector<std::string> symbols(symbols_.begin(), symbols_.begin() + ns);
  std::vector<int64_t> counts(counts_.begin(), counts_.begin() + ns);
  const int64_t take = std::max<int64_t>(0, nwords - int64_t(ns));
  for (int64_t k = 0; k < take && k < int64_t(order.size()); ++k) {
    size_t i = order[size_t(k)];
    if (counts_[i] < threshold) break;
    symbols.push_back(symbols_[i]);
    counts.push_back(counts_[i]);
  }
  symbols_ = std::move(symbols);
  counts_ = std::move(counts);
  indices_.clear();
  for (size_t i = 0; i < symbols_.size(); ++i) indices_.emplace(symbols_[i], int32_t(i));
  // pad_to_multiple_: add_symbol("madeupword%04d", 0) until the size divides (a name that is
  // already a word only adds 0 to its count, and the next name is tried).
  if (padding_factor > 1) {
    for (int i = 0; size() % size_t(padding_factor) != 0; ++i) {
      char name[32];
      std::snprintf(name, sizeof name, "madeupword%04d", i);
      add_symbol(name, 0);
    }
  }
}

int32_t Dictionary::index(const std::string& word) const {
  auto it = indices_.find(word);
  return it == indices_.end() ? unk() : it->second;
}

const std::string& Dictionary::symbol(int32_t id) const {
  if (id < 0 || size_t(id) >= symbols_.size()) return symbols_[size_t(unk())];
  return symbols_[size_t(id)];
}

int64_t Dictionary::count(int32_t id) const {
  PILLARS_CHECK(id >= 0 && size_t(id) < counts_.size(), "Dictionary::count: id ", id, " out of range (size ", size(),
                ")");
  return counts_[size_t(id)];
}

std::vector<int32_t> Dictionary::encode_line(std::string_view line, bool append_eos) const {
  std::vector<int32_t> ids;
  for (const std::string& w : split_whitespace(line)) ids.push_back(index(w));
  if (append_eos) ids.push_back(eos());
  return ids;
}

std::string Dictionary::decode(const std::vector<int32_t>& ids) const {
  std::string out;
  for (int32_t id : ids) {
    if (id == bos() || id == eos() || id == pad()) continue;
    if (!out.empty()) out += ' ';
    out += symbol(id);
  }
  return out;
}

std::string Dictionary::to_text() const {
  std::string out;
  for (size_t i = size_t(nspecial()); i < symbols_.size(); ++i) out += str_cat(symbols_[i], " ", counts_[i], "\n");
  return out;
}

void Dictionary::save(const std::string& path) const { io::atomic_write_file(path, to_text()); }

Dictionary Dictionary::parse(std::string_view text, const std::string& name) {
  Dictionary d;
  size_t pos = 0, line_no = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view raw = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    // line.rstrip().rsplit(" ", 1)
    std::string_view line = raw;
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r' || line.back() == '\v' ||
                             line.back() == '\f'))
      line.remove_suffix(1);
    auto bad = [&] {
      return InputError(str_cat(name, ": line ", line_no,
                                ": incorrect dictionary format, expected '<token> <cnt> [flags]': \"", raw, "\""));
    };
    size_t sp = line.rfind(' ');
    if (sp == std::string_view::npos) throw bad();
    std::string_view word = line.substr(0, sp), field = line.substr(sp + 1);
    bool overwrite = false;
    if (field == "#fairseq:overwrite") {
      overwrite = true;
      sp = word.rfind(' ');
      if (sp == std::string_view::npos) throw bad();
      field = word.substr(sp + 1);
      word = word.substr(0, sp);
    }
    size_t digits_from = (!field.empty() && (field[0] == '-' || field[0] == '+')) ? 1 : 0;
    if (field.size() == digits_from || field.size() > 19 ||
        !std::all_of(field.begin() + digits_from, field.end(), [](char c) { return c >= '0' && c <= '9'; }))
      throw bad();
    // from_chars, not stoll: 19 digits can still exceed int64 (9999999999999999999), and stoll's
    // std::out_of_range would say only "stoll" (found by tests/fuzz/fuzz_dictionary).
    int64_t count = 0;
    const char* first = field.data() + (field[0] == '+' ? 1 : 0);
    if (const auto [end, ec] = std::from_chars(first, field.data() + field.size(), count);
        ec != std::errc() || end != field.data() + field.size())
      throw bad();
    std::string w(word);
    if (d.contains(w) && !overwrite)
      throw InputError(str_cat(name, ": line ", line_no, ": duplicate word '", w,
                               "' (add #fairseq:overwrite to replace an earlier one)"));
    if (overwrite && d.contains(w)) {
      // add_symbol(overwrite=True) appends the word again as a new id and points the word at
      // it; the old entry stays in the list (decoding its id still gives the word).
      int32_t id = int32_t(d.symbols_.size());
      d.indices_[w] = id;
      d.symbols_.push_back(w);
      d.counts_.push_back(count);
    } else {
      d.add_symbol(w, count);
    }
  }
  return d;
}

Dictionary Dictionary::load(const std::string& path) {
  check_regular_file(path); // a FIFO would block, a device never end (base/input_file.h)
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(str_cat(path, ": cannot open dictionary file"));
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse(ss.str(), path);
}

} // namespace pillars::text
