// MANIFEST.json reading and writing; see manifest.h.
#include "datasets/manifest.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "datasets/cache.h"
#include "base/error.h"

namespace pillars::data {

using json = nlohmann::ordered_json;

std::string manifest_path(const std::string& name) { return cache_root() + "/" + name + "/MANIFEST.json"; }

std::string manifest_json(const DatasetSpec& d) {
  json j;
  j["pillars_manifest"] = 1;
  j["name"] = d.name;
  j["task"] = enum_name(d.task);
  j["origin"] = enum_name(d.origin);
  if (!d.imported_from.empty()) j["imported_from"] = d.imported_from;
  j["description"] = d.description;
  j["sources"] = d.sources;
  j["license"] = d.license;
  j["train"] = d.train, j["valid"] = d.valid, j["test"] = d.test;
  j["escaped"] = d.escaped;
  j["notes"] = d.notes;
  j["files"] = json::array();
  for (const FileSpec& f : d.files)
    j["files"].push_back({{"path", f.path}, {"bytes", f.bytes}, {"lines", f.lines}, {"sha256", f.sha256}});
  j["splits"] = json::array();
  for (const SplitSpec& s : d.splits) {
    json fields = json::object();
    for (const NamedFile& f : s.fields) fields[f.name] = f.file;
    j["splits"].push_back({{"name", s.name}, {"examples", s.examples}, {"fields", fields}});
  }
  j["assets"] = json::object();
  for (const NamedFile& a : d.assets) j["assets"][a.name] = a.file;
  return j.dump(2) + "\n";
}

DatasetSpec parse_manifest(const std::string& text, const std::string& where) {
  try {
    const json j = json::parse(text);
    if (j.value("pillars_manifest", 0) != 1)
      throw InputError(str_cat(where, ": not a pillars dataset manifest (version 1)"));
    DatasetSpec d;
    d.name = j.at("name").get<std::string>();
    const std::string task = j.at("task").get<std::string>();
    d.task = parse_enum<Task>(task, str_cat(where, ": \"task\""));
    d.origin = enum_from_name<Origin>(j.value("origin", "imported")).value_or(Origin::imported);
    d.imported_from = j.value("imported_from", "");
    d.description = j.value("description", "");
    d.sources = j.value("sources", std::vector<std::string>{});
    const char* old_key = "licence"; // manifests written before the rename; spelling: kept
    d.license = j.value("license", j.value(old_key, ""));
    d.train = j.value("train", ""), d.valid = j.value("valid", ""), d.test = j.value("test", "");
    d.escaped = j.value("escaped", false);
    d.notes = j.value("notes", "");
    for (const json& f : j.at("files"))
      d.files.push_back({f.at("path").get<std::string>(), f.at("bytes").get<uint64_t>(), f.at("lines").get<uint64_t>(),
                         f.at("sha256").get<std::string>(), ""});
    for (const json& s : j.at("splits")) {
      SplitSpec split;
      split.name = s.at("name").get<std::string>();
      split.examples = s.at("examples").get<uint64_t>();
      for (const auto& [name, file] : s.at("fields").items()) split.fields.push_back({name, file.get<std::string>()});
      d.splits.push_back(std::move(split));
    }
    if (j.contains("assets"))
      for (const auto& [name, file] : j.at("assets").items()) d.assets.push_back({name, file.get<std::string>()});
    // Every field and asset must name a listed file, or read_field would fail later and obscurely.
    auto listed = [&](const std::string& path) {
      return std::any_of(d.files.begin(), d.files.end(), [&](const FileSpec& f) { return f.path == path; });
    };
    for (const SplitSpec& s : d.splits)
      for (const NamedFile& f : s.fields)
        if (!listed(f.file))
          throw InputError(str_cat(where, ": split ", s.name, " field ", f.name, " names unlisted file ", f.file));
    for (const NamedFile& a : d.assets)
      if (!listed(a.file)) throw InputError(str_cat(where, ": asset ", a.name, " names unlisted file ", a.file));
    return d;
  } catch (const json::exception& e) {
    throw InputError(str_cat(where, ": malformed dataset manifest: ", e.what()));
  }
}

std::vector<std::string> imported_dataset_names() {
  std::vector<std::string> names;
  std::error_code ec;
  const std::string root = cache_root();
  for (const auto& entry : std::filesystem::directory_iterator(root, ec)) {
    if (!entry.is_directory(ec)) continue;
    std::ifstream in(entry.path() / "MANIFEST.json");
    if (!in) continue;
    std::stringstream text;
    text << in.rdbuf();
    try {
      const json j = json::parse(text.str());
      if (j.value("origin", "") == "imported" && j.value("name", "") == entry.path().filename().string())
        names.push_back(j["name"].get<std::string>());
    } catch (const json::exception&) {
      // a broken manifest is reported when the dataset is used by name, not while listing
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

} // namespace pillars::data
