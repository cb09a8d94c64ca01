// prepare_dataset: materialize and verify a whole dataset; build the prepared ones. See prepare.h.
#include "datasets/prepare.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "datasets/cache.h"
#include "datasets/manifest.h"
#include "datasets/registry.h"
#include "datasets/resolve.h"
#include "base/error.h"
#include "base/atomic_file.h"

namespace pillars::data {

namespace fs = std::filesystem;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string fixed(double x, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, x);
  return buf;
}

// Mirror and imported datasets: every file through materialize().
void prepare_files(const DatasetSpec& d, const Progress& progress, bool rehash) {
  size_t i = 0;
  for (const FileSpec& f : d.files) {
    const auto t0 = std::chrono::steady_clock::now();
    const Materialized m = materialize(d, f, rehash);
    progress(str_cat("  [", ++i, "/", d.files.size(), "] ", f.path, "  ", human_bytes(f.bytes), ", ", f.lines,
                     " lines  ok (", file_source_name(m.source), ", ", fixed(seconds_since(t0), 2), " s)"));
  }
}

bool all_cached_and_stamped(const DatasetSpec& d) {
  for (const FileSpec& f : d.files)
    if (!stamp_matches(cache_path(d.name, f.path), f.sha256)) return false;
  return true;
}

// Prepared datasets: build into a staging folder, check against the table, then install.
void prepare_built(const DatasetSpec& d, const Progress& progress, bool rehash) {
  if (!rehash && all_cached_and_stamped(d)) {
    progress(str_cat("  already prepared in ", cache_root(), "/", d.name, " (use --verify to rehash)"));
    return;
  }
  if (rehash) { // files present and valid need no rebuild: verify them in place
    bool all_ok = true;
    for (const FileSpec& f : d.files) {
      const std::string p = cache_path(d.name, f.path);
      const FileFacts got = fs::exists(p) ? file_facts(p) : FileFacts{};
      all_ok = all_ok && got.sha256 == f.sha256 && got.bytes == f.bytes;
      if (got.sha256 == f.sha256) write_stamp(p, f.sha256);
    }
    if (all_ok) {
      progress(str_cat("  ", d.files.size(), " files rehashed: all match the registry"));
      return;
    }
  }
  const std::string staging = str_cat(cache_root(), "/.staging/", d.name, ".", ::getpid());
  const std::string work = staging + "/work", out = staging + "/out";
  fs::create_directories(work);
  fs::create_directories(out);
  const auto t0 = std::chrono::steady_clock::now();
  try {
    if (d.name == "sotu")
      build_sotu(work, out, progress);
    else if (d.name == "debian-synopsis")
      build_debian_synopsis(work, out, progress);
    else
      throw Error(str_cat(d.name, ": no builder for this prepared dataset"));
  } catch (...) { // a failed build leaves nothing behind (a checksum mismatch below keeps its files)
    std::error_code ec;
    fs::remove_all(staging, ec);
    throw;
  }
  progress(str_cat("  built in ", fixed(seconds_since(t0), 1), " s; verifying against the registry"));

  // Check every output before installing any, so the cache never holds half a dataset version.
  DatasetSpec actual = d; // what was built, for the manifest left behind on a mismatch
  std::string mismatches;
  for (size_t i = 0; i < d.files.size(); ++i) {
    const FileSpec& f = d.files[i];
    const std::string p = out + "/" + f.path;
    if (!fs::exists(p)) {
      mismatches += str_cat("\n  ", f.path, ": not produced");
      continue;
    }
    const FileFacts got = file_facts(p);
    actual.files[i].bytes = got.bytes, actual.files[i].lines = got.lines, actual.files[i].sha256 = got.sha256;
    if (got.sha256 != f.sha256 || got.bytes != f.bytes)
      mismatches += str_cat("\n  ", f.path, ": expected ", f.bytes, " bytes, ", f.lines, " lines, sha256 ",
                            f.sha256.empty() ? "(none)" : f.sha256, "; got ", got.bytes, " bytes, ", got.lines,
                            " lines, sha256 ", got.sha256);
  }
  if (!mismatches.empty()) {
    io::atomic_write_file(out + "/MANIFEST.json", manifest_json(actual));
    throw Error(str_cat(d.name,
                        ": the rebuilt files differ from the frozen registry version (the upstream source "
                        "changed?), so they were not installed:",
                        mismatches, "\nThe built files and their MANIFEST.json are in ", out, " for inspection."));
  }
  for (const FileSpec& f : d.files) {
    const std::string dest = cache_path(d.name, f.path);
    fs::create_directories(fs::path(dest).parent_path());
    fs::rename(out + "/" + f.path, dest); // same file system: the staging folder is inside the cache
    write_stamp(dest, f.sha256);
    progress(str_cat("  ", f.path, "  ", human_bytes(f.bytes), ", ", f.lines, " lines  ok"));
  }
  io::atomic_write_file(manifest_path(d.name), manifest_json(d));
  std::error_code ec;
  fs::remove_all(staging, ec);
}

} // namespace

void prepare_dataset(const std::string& name, const Progress& progress, bool rehash) {
  const DatasetSpec& d = find_dataset(name);
  progress(str_cat(d.name, " (", enum_name(d.task), ", ", enum_name(d.origin), ", ", d.files.size(), " files)"));
  if (d.origin == Origin::prepared)
    prepare_built(d, progress, rehash);
  else
    prepare_files(d, progress, rehash);
}

} // namespace pillars::data
