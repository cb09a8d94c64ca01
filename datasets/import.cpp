// Importing a user's parallel corpus into the cache; see import.h.
#include "datasets/import.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include "datasets/cache.h"
#include "datasets/manifest.h"
#include "datasets/sha1.h"
#include "base/error.h"
#include "base/utf8.h"
#include "base/atomic_file.h"

namespace pillars::data {

namespace fs = std::filesystem;

namespace {

bool valid_name(const std::string& name) {
  if (name.empty() || name[0] == '.' || name.size() > 100) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
           c == '.';
  });
}

// subword-nmt marks a word continued by the next token with "@@ "; plain tokenized text never has it.
bool has_bpe_markers(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string head(1 << 20, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  return head.find("@@ ") != std::string::npos;
}

// Is the file text? Fed the file's bytes in chunks of any size, it throws InputError naming the
// file and the line at the first NUL byte or the first byte that is not well-formed UTF-8
// (base/utf8.h): the tokenizer and BPE assume UTF-8, and a binary file given by mistake would
// otherwise be imported as a "corpus" of garbage lines.
class TextCheck {
 public:
  explicit TextCheck(std::string path) : path_(std::move(path)) {}

  void update(const char* data, size_t n) {
    std::string text = carry_ + std::string(data, n);
    carry_.clear();
    // A character cut by the chunk's end waits for the next chunk: walk back over at most three
    // continuation bytes to the lead byte of the last character and keep it if it is incomplete.
    size_t cut = text.size();
    for (size_t back = 0; back < 4 && back < text.size(); ++back) {
      const auto c = static_cast<unsigned char>(text[text.size() - 1 - back]);
      if ((c & 0xC0) == 0x80) continue; // a continuation byte
      const size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
      if (need > back + 1) cut = text.size() - 1 - back;
      break;
    }
    carry_ = text.substr(cut);
    text.resize(cut);
    check(text);
  }

  void finish() {
    if (!carry_.empty()) check(carry_); // a character the file's end cut short
  }

 private:
  void check(const std::string& text) {
    const size_t nul = text.find('\0');
    const size_t bad = std::min(nul, invalid_utf8_at(text));
    if (bad != std::string::npos) {
      const size_t line_start = bad == 0 ? 0 : text.rfind('\n', bad - 1) + 1; // npos + 1 == 0
      const uint64_t line =
          lines_ +
          static_cast<uint64_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(bad), '\n')) + 1;
      const uint64_t column = (line == lines_ + 1 ? column_ : 0) + (bad - line_start) + 1;
      throw InputError(
          str_cat("data import: ", path_, ", line ", line, ": ",
                  bad == nul ? "a NUL byte" : str_cat("not valid UTF-8 (byte 0x", hex_byte(text[bad]), ")"),
                  " at byte ", column, " of the line; a corpus is UTF-8 text, one sentence per line"));
    }
    const size_t newlines = static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
    column_ = newlines == 0 ? column_ + text.size() : text.size() - text.rfind('\n') - 1;
    lines_ += newlines;
  }

  std::string path_;
  std::string carry_;   // the start of a character the last chunk cut
  uint64_t lines_ = 0;  // lines checked so far
  uint64_t column_ = 0; // bytes of the current line checked so far
};

// Copies src to dest (atomically), returning what was copied; the file must be text (TextCheck).
FileFacts copy_counting(const std::string& src, const std::string& dest) {
  std::ifstream in(src, std::ios::binary);
  if (!in) throw InputError(str_cat(src, ": cannot open"));
  fs::create_directories(fs::path(dest).parent_path());
  io::AtomicFile out(dest);
  FactsCounter counter;
  TextCheck text(src);
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const size_t n = static_cast<size_t>(in.gcount());
    text.update(buf.data(), n);
    counter.update(buf.data(), n);
    out.write(buf.data(), n);
  }
  if (in.bad()) throw Error(str_cat(src, ": read failed"));
  text.finish();
  out.commit();
  return counter.finish();
}

// Files whose identity we know: the canonical IWSLT'14 train files (fairseq prepare-iwslt14.sh,
// johntzwei/nmt_iwslt@7750e75), known only by their git blob ids (iwslt14-de-en's PROVENANCE).
struct KnownBlob {
  const char* blob;
  const char* what;
};
constexpr KnownBlob kKnownBlobs[] = {
    {"30660ed508af1be868cfd3f09a0bd7d71b4517c6",
     "the canonical IWSLT'14 train.de (fairseq prepare-iwslt14.sh, tokenized + lowercased)"},
    {"3b48a76e28ede930fd5e177dce14686147a10ee3",
     "the canonical IWSLT'14 train.en (fairseq prepare-iwslt14.sh, tokenized + lowercased)"},
    {"f0a0c7d52fa302aed605f8e0fabe10217cf7b336", "the canonical IWSLT'14 train.de with fairseq's 10k BPE"},
    {"6cec12532b28da3d5f9b7251f8011f6d84604738", "the canonical IWSLT'14 train.en with fairseq's 10k BPE"},
};

// "identical to iwslt14-de-en/valid.de" / "the canonical ..." / "" for an imported file.
std::string recognize(const std::string& path, const FileFacts& facts) {
  for (const DatasetSpec& d : builtin_datasets())
    for (const FileSpec& f : d.files)
      if (f.sha256 == facts.sha256) return str_cat("identical to ", d.name, "/", f.path);
  if (facts.bytes < 1000000) return ""; // the known blobs are all large: skip the second hash
  const std::string blob = git_blob_id(path);
  for (const KnownBlob& k : kKnownBlobs)
    if (blob == k.blob) return str_cat(k.what, " (git blob ", blob, ")");
  return "";
}

// One parallel file set found in DIR (or DIR/tmp): split -> language -> relative path.
using Layout = std::map<std::string, std::map<std::string, std::string>>;

Layout scan(const std::string& dir, const std::string& prefix, const std::string& src, const std::string& tgt) {
  Layout layout;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir + "/" + prefix, ec)) {
    if (!entry.is_regular_file()) continue;
    const std::string file = entry.path().filename().string();
    const size_t dot = file.find('.');
    if (dot == std::string::npos || dot == 0 || file.find('.', dot + 1) != std::string::npos)
      continue; // "split.lang" only
    const std::string split = file.substr(0, dot), lang = file.substr(dot + 1);
    if (lang == src || lang == tgt) layout[split][lang] = prefix + file;
  }
  return layout;
}

} // namespace

DatasetSpec import_translation(const ImportOptions& opt, const Progress& progress) {
  if (!valid_name(opt.name))
    throw InputError(str_cat("data import: bad dataset name \"", opt.name,
                             "\" (letters, digits, '-', '_', '.'; not starting with '.')"));
  for (const DatasetSpec& d : builtin_datasets())
    if (d.name == opt.name)
      throw InputError(str_cat("data import: \"", opt.name, "\" is a built-in dataset; choose another name"));
  if (opt.name == "prepared") // <cache>/prepared/ holds the trainer's binarised data (train/prepare.cpp)
    throw InputError("data import: \"prepared\" is reserved for the cache's own use; choose another name");
  if (opt.source.empty() || opt.target.empty() || opt.source == opt.target ||
      opt.source.find('.') != std::string::npos || opt.target.find('.') != std::string::npos)
    throw InputError(str_cat("data import: --source and --target must be two different language codes (got \"",
                             opt.source, "\", \"", opt.target, "\")"));
  if (!fs::is_directory(opt.dir)) throw InputError(str_cat("data import: ", opt.dir, " is not a directory"));
  const std::string final_dir = cache_root() + "/" + opt.name;
  if (fs::exists(final_dir) && !opt.force)
    throw InputError(str_cat("data import: ", final_dir, " already exists (dataset \"", opt.name,
                             "\" was imported before); pass --force to replace it"));

  // Find the files: top level, plus tmp/ (fairseq's tokenized text before BPE).
  const std::string dir = fs::absolute(opt.dir).lexically_normal().string();
  Layout layout = scan(dir, "", opt.source, opt.target);
  const Layout tmp = scan(dir, "tmp/", opt.source, opt.target);
  if (layout.empty()) {
    std::string seen;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) seen += " " + entry.path().filename().string();
    throw InputError(str_cat("data import: no <split>.", opt.source, " / <split>.", opt.target, " files in ", dir,
                             " (found:", seen.empty() ? " nothing" : seen, ")"));
  }

  DatasetSpec d;
  d.name = opt.name;
  d.task = Task::translation;
  d.origin = Origin::imported;
  d.imported_from = dir;
  d.description = str_cat("imported ", opt.source, "-", opt.target, " parallel text from ", dir);
  d.sources = {dir};
  d.license = "as the original";

  const std::string staging = str_cat(cache_root(), "/.staging/", opt.name, ".", ::getpid());
  struct RemoveOnFailure {
    std::string path;
    ~RemoveOnFailure() {
      std::error_code ec;
      if (!path.empty()) fs::remove_all(path, ec);
    }
  } cleanup{staging};
  fs::create_directories(staging);

  std::map<std::string, SplitSpec> splits;
  auto add_layout = [&](const Layout& l, bool required) {
    for (const auto& [split, langs] : l) {
      if (langs.size() < 2) {
        if (!required) continue; // tmp/ also holds one-sided intermediate files
        const std::string& lang = langs.count(opt.source) ? opt.target : opt.source;
        throw InputError(
            str_cat("data import: ", dir, "/", langs.begin()->second, " has no partner ", split, ".", lang));
      }
      const std::string& a = langs.at(opt.source);
      const std::string& b = langs.at(opt.target);
      const bool bpe = has_bpe_markers(dir + "/" + a);
      const std::string suffix = bpe ? ".bpe" : "";
      if (!required && splits.count(split)) { // tmp/ adds a field only where the top level did not
        const auto& fields = splits[split].fields;
        if (std::any_of(fields.begin(), fields.end(),
                        [&](const NamedFile& f) { return f.name == opt.source + suffix; })) {
          progress(str_cat("  ", split, ": ", a, " + ", b, " skipped (the top level already gives fields ",
                           opt.source + suffix, ", ", opt.target + suffix, ")"));
          continue;
        }
      }
      FileFacts fa = copy_counting(dir + "/" + a, staging + "/" + a),
                fb = copy_counting(dir + "/" + b, staging + "/" + b);
      for (const auto& [file, facts] : {std::pair<const std::string&, const FileFacts&>{a, fa}, {b, fb}})
        if (facts.bytes == 0)
          throw InputError(str_cat("data import: ", dir, "/", file,
                                   " is empty (0 bytes): a split needs at least one sentence pair"));
      if (fa.records() != fb.records())
        throw InputError(str_cat("data import: ", dir, "/", a, " has ", fa.records(), " lines but ", dir, "/", b,
                                 " has ", fb.records(), ": the pair is not line-aligned"));
      SplitSpec& s = splits[split];
      if (s.name.empty()) s.name = split, s.examples = fa.records();
      if (s.examples != fa.records())
        throw InputError(str_cat("data import: ", dir, "/", a, " has ", fa.records(), " lines but the other ", split,
                                 " files have ", s.examples));
      s.fields.push_back({opt.source + suffix, a});
      s.fields.push_back({opt.target + suffix, b});
      d.files.push_back({a, fa.bytes, fa.lines, fa.sha256, ""});
      d.files.push_back({b, fb.bytes, fb.lines, fb.sha256, ""});
      progress(str_cat("  ", split, ": ", a, " + ", b, "  ", fa.records(), " pairs -> fields ", opt.source + suffix,
                       ", ", opt.target + suffix));
      for (const auto& [rel, facts] : {std::pair<const std::string&, const FileFacts&>{a, fa}, {b, fb}})
        if (const std::string known = recognize(staging + "/" + rel, facts); !known.empty()) {
          progress(str_cat("    ", rel, ": ", known));
          d.notes += str_cat(d.notes.empty() ? "" : " ", rel, ": ", known, ".");
        }
    }
  };
  add_layout(layout, true);
  add_layout(tmp, false); // tmp/ is optional and may hold only some splits
  if (fs::is_regular_file(dir + "/code")) {
    const FileFacts f = copy_counting(dir + "/code", staging + "/code");
    d.files.push_back({"code", f.bytes, f.lines, f.sha256, ""});
    d.assets.push_back({"bpe.codes", "code"});
    progress(str_cat("  code: BPE merges (", f.lines, " lines) -> asset bpe.codes"));
  }
  for (auto& [name, s] : splits) d.splits.push_back(std::move(s));
  auto has = [&](const char* s) { return splits.count(s) ? std::string(s) : std::string(); };
  d.train = has("train"), d.valid = has("valid"), d.test = has("test");

  // Stamps now (a rename keeps the modification time they record), then swap the folder in.
  for (const FileSpec& f : d.files) write_stamp(staging + "/" + f.path, f.sha256);
  io::atomic_write_file(staging + "/MANIFEST.json", manifest_json(d));
  std::error_code ec;
  fs::remove_all(final_dir, ec);
  fs::rename(staging, final_dir);
  cleanup.path.clear();
  return d;
}

} // namespace pillars::data
