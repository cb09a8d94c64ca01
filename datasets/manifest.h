// A dataset's description as JSON: written into the cache as "<cache>/<name>/MANIFEST.json" by
// `pillars data import` (the only record of an imported dataset) and by `pillars data prepare` for
// prepared datasets (a human-readable record of what was built; the registry's table stays the
// reference for those).
//
//   {"pillars_manifest": 1, "name": "iwslt14-de-en-full", "task": "translation", "origin": "imported",
//    "imported_from": "/home/me/iwslt14.tokenized.de-en", "description": "...",
//    "train": "train", "valid": "valid", "test": "test", "escaped": false,
//    "files":  [{"path": "train.de", "bytes": 17..., "lines": 160239, "sha256": "..."}, ...],
//    "splits": [{"name": "train", "examples": 160239, "fields": {"de": "train.de", "en": "train.en"}}, ...],
//    "assets": {"bpe.codes": "code"}}
//
// Only whole-file splits are stored (Selection::Kind::all). A malformed manifest throws
// InputError naming it.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "datasets/registry.h"

namespace pillars::data {

std::string manifest_path(const std::string& name); // <cache>/<name>/MANIFEST.json
std::string manifest_json(const DatasetSpec& spec);
DatasetSpec parse_manifest(const std::string& json_text, const std::string& where);

// Names of the imported datasets in the current cache (folders holding an "imported" manifest).
std::vector<std::string> imported_dataset_names();

} // namespace pillars::data
