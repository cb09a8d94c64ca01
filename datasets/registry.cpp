// Registry lookups: the built-in table, imported datasets (found through their manifests in the
// cache) and "did you mean" messages. See registry.h.
#include "datasets/registry.h"

#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>

#include "datasets/manifest.h"
#include "datasets/registry_table.h"
#include "base/error.h"

namespace pillars::data {

const std::vector<DatasetSpec>& builtin_datasets() {
  static const std::vector<DatasetSpec> all = {
      table::multi30k_de_en(),
      table::iwslt14_de_en(),
      table::wikitext_2(),
      table::wikitext_103(),
      table::ptb(),
      table::tinyshakespeare(),
      table::sotu(),
      table::samsum(),
      table::dialogsum(),
      table::aeslc(),
      table::bbc_news_summary(),
      table::debian_synopsis(),
  };
  return all;
}

// ---- "did you mean" ----------------------------------------------------------------------------

namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

std::string join(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

} // namespace

std::string unknown_name_message(const std::string& what, const std::string& name,
                                 const std::vector<std::string>& valid) {
  std::string msg = str_cat("unknown ", what, " \"", name, "\"");
  if (!valid.empty()) {
    const auto nearest = std::min_element(valid.begin(), valid.end(), [&](const std::string& a, const std::string& b) {
      return edit_distance(name, a) < edit_distance(name, b);
    });
    // Suggest only what is plausibly a typo or a shortening ("wikitext2", "valid" for "val",
    // "train" for "train-sample"), not whatever happens to be least unlike "nonsense".
    const bool close =
        edit_distance(name, *nearest) <= std::max<size_t>(2, name.size() / 3) ||
        (!name.empty() && (nearest->find(name) != std::string::npos || name.find(*nearest) != std::string::npos));
    if (close) msg += str_cat("; did you mean \"", *nearest, "\"?");
    msg += str_cat(close ? " Valid: " : "; valid: ", join(valid));
  } else {
    msg += " (there are none)";
  }
  return msg;
}

// ---- DatasetSpec lookups ----------------------------------------------------------------------

const SplitSpec& DatasetSpec::split(const std::string& split_name) const {
  for (const SplitSpec& s : splits)
    if (s.name == split_name) return s;
  std::vector<std::string> valid;
  for (const SplitSpec& s : splits) valid.push_back(s.name);
  throw InputError(str_cat(name, ": ", unknown_name_message("split", split_name, valid), split_hint.empty() ? "" : ". ",
                           split_hint));
}

const NamedFile& DatasetSpec::field(const std::string& split_name, const std::string& field_name) const {
  const SplitSpec& s = split(split_name);
  for (const NamedFile& f : s.fields)
    if (f.name == field_name) return f;
  std::vector<std::string> valid;
  for (const NamedFile& f : s.fields) valid.push_back(f.name);
  throw InputError(str_cat(name, " split ", split_name, ": ", unknown_name_message("field", field_name, valid)));
}

const FileSpec& DatasetSpec::file(const std::string& relpath) const {
  for (const FileSpec& f : files)
    if (f.path == relpath) return f;
  std::vector<std::string> valid;
  for (const FileSpec& f : files) valid.push_back(f.path);
  throw InputError(str_cat(name, ": ", unknown_name_message("file", relpath, valid)));
}

const std::string& DatasetSpec::asset(const std::string& asset_name) const {
  for (const NamedFile& a : assets)
    if (a.name == asset_name) return a.file;
  std::vector<std::string> valid;
  for (const NamedFile& a : assets) valid.push_back(a.name);
  throw InputError(str_cat(name, ": ", unknown_name_message("asset", asset_name, valid)));
}

// ---- imported datasets --------------------------------------------------------------------------

namespace {

// Parsed manifests, keyed by path + size + mtime so that a re-import (or a test pointing
// PILLARS_CACHE elsewhere) is seen. Entries are never erased: find_dataset hands out references.
const DatasetSpec* load_imported(const std::string& name) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<DatasetSpec>> loaded;
  const std::string path = manifest_path(name);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return nullptr;
  const std::string key = str_cat(path, "|", st.st_size, "|", st.st_mtim.tv_sec, ".", st.st_mtim.tv_nsec);
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = loaded.find(key); it != loaded.end()) return it->second.get();
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  auto spec = std::make_unique<DatasetSpec>(parse_manifest(text.str(), path));
  if (spec->name != name)
    throw InputError(str_cat(path, ": the manifest is for dataset \"", spec->name, "\", not \"", name, "\""));
  return loaded.emplace(key, std::move(spec)).first->second.get();
}

} // namespace

std::vector<std::string> dataset_names() {
  std::set<std::string> names;
  for (const DatasetSpec& d : builtin_datasets()) names.insert(d.name);
  for (const std::string& n : imported_dataset_names()) names.insert(n);
  return {names.begin(), names.end()};
}

const DatasetSpec& find_dataset(const std::string& name) {
  for (const DatasetSpec& d : builtin_datasets())
    if (d.name == name) return d;
  // An imported name is a folder name in the cache: refuse anything that could leave it.
  if (!name.empty() && name.find('/') == std::string::npos && name[0] != '.')
    if (const DatasetSpec* d = load_imported(name)) return *d;
  throw InputError(unknown_name_message("dataset", name, dataset_names()) +
                   ". Register your own with `pillars data import DIR --name NAME --source L1 --target L2`");
}

} // namespace pillars::data
