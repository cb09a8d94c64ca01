// Getting a registered file onto the local disk, verified: the cache, then the offline mirror
// ($PILLARS_DATA), then a pinned download URL (curl), else an InputError that says what is missing,
// where it looked and how to get it. read_field / resolve_file (registry.h) use this; `pillars data
// prepare` and `data list` use the finer-grained calls below.
//
//   data::Materialized m = data::materialize(spec, spec.file("raw/train.de"));
//   m.path     // <cache>/multi30k-de-en/raw/train.de, verified against the registry's sha256
//   m.source   // cache (already there), mirror (decompressed now) or download (fetched now)
//
// Verification: a file written into the cache is hashed while it is written and committed (temp
// file + rename) only if its size and sha256 match the registry; a mismatch throws pillars::Error
// naming the file, where it came from, and the expected and actual hash and size — there is never
// a silent fallback to another source. A cache hit is trusted through its stamp (cache.h); a
// cached file whose stamp no longer matches is rehashed, and replaced from the mirror if it fails.
#pragma once
#include <functional>
#include <string>

#include "datasets/cache.h"
#include "datasets/registry.h"

namespace pillars::data {

enum class FileSource { cache, mirror, download };
const char* file_source_name(FileSource source);

struct Materialized {
  std::string path;
  FileSource source = FileSource::cache;
};

// `rehash`: ignore the stamp and hash the cached copy again (`pillars data prepare --verify`).
Materialized materialize(const DatasetSpec& dataset, const FileSpec& file, bool rehash = false);

// Where a file would come from, without hashing or downloading anything.
enum class Availability { cached, mirror, download, missing };
Availability availability(const DatasetSpec& dataset, const FileSpec& file);

// The mirror's copy of a file: "<PILLARS_DATA>/<dataset>/<relpath>.xz" or the plain file; "" if none.
std::string mirror_copy(const std::string& dataset, const std::string& relpath);

// Writes what `produce` emits into `dest` atomically, counting and hashing it; commits only if it
// matches `expected` (size and sha256), else throws Error naming `origin` and both hashes. Then
// stamps the file as verified. Returns the facts of what was written.
FileFacts install_verified(const std::string& dest, const FileSpec& expected, const std::string& what,
                           const std::string& origin,
                           const std::function<void(const std::function<void(const char*, size_t)>&)>& produce);

} // namespace pillars::data
