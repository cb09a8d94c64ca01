// File resolution: cache → mirror → download → a helpful error. See resolve.h.
#include "datasets/resolve.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

#include "datasets/subprocess.h"
#include "datasets/xz.h"
#include "base/error.h"
#include "base/atomic_file.h"

namespace pillars::data {

namespace fs = std::filesystem;

namespace {

bool is_regular_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// What a path that exists but is no plain file is, for the message that refuses it ("" when it is
// a plain file or does not exist).
std::string not_a_plain_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return "";
  if (S_ISFIFO(st.st_mode)) return "a FIFO";
  if (S_ISDIR(st.st_mode)) return "a folder";
  if (S_ISSOCK(st.st_mode)) return "a socket";
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) return "a device";
  return "not a regular file";
}

void make_parent_dirs(const std::string& path) {
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  if (ec)
    io::throw_path_error(ec.value(), str_cat("cannot create the cache folder ", fs::path(path).parent_path().string(),
                                             ": ", ec.message(), " (set PILLARS_CACHE to a writable folder)"));
}

// Streams a plain file through `sink` in 1 MiB pieces.
void stream_file(const std::string& path, const std::function<void(const char*, size_t)>& sink) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(str_cat(path, ": cannot open"));
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    if (in.gcount() > 0) sink(buf.data(), static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) throw Error(str_cat(path, ": read failed"));
}

std::string label(const DatasetSpec& d, const FileSpec& f) { return d.name + "/" + f.path; }

// How to obtain a file the user does not have, by origin.
std::string how_to_get(const DatasetSpec& d) {
  switch (d.origin) {
    case Origin::prepared:
      return str_cat("run `pillars data prepare ", d.name, "` (needs network: ", d.sources.empty() ? "" : d.sources[0],
                     ")");
    case Origin::imported:
      return str_cat("re-run `pillars data import ", d.imported_from.empty() ? "DIR" : d.imported_from, " --name ",
                     d.name, " ...`");
    case Origin::mirror:
      break;
  }
  return "set PILLARS_DATA to a copy of the offline dataset mirror (the folder holding " + d.name +
         "/), or import your own copy with `pillars data import DIR --name NAME ...`";
}

// Downloads `f.url` with curl into the cache and verifies it. Throws Error on any failure.
Materialized download(const DatasetSpec& d, const FileSpec& f, const std::string& dest) {
  make_parent_dirs(dest);
  const std::string tmp = io::atomic_temp_path(dest) + ".download";
  struct Cleanup {
    std::string a, b;
    ~Cleanup() { ::unlink(a.c_str()), ::unlink(b.c_str()); }
  } cleanup{tmp, tmp + ".gunzip"};
  std::fprintf(stderr, "pillars: downloading %s from %s\n", label(d, f).c_str(), f.url.c_str());
  const std::vector<std::string> curl = {"curl", "-fsSL", "--retry", "2", "--connect-timeout", "30", "-o", tmp, f.url};
  if (const int rc = run_program(curl); rc != 0)
    throw Error(str_cat("downloading ", label(d, f), " failed: `", command_line(curl), "` exited with ", rc,
                        " (no network?). Alternatively ", how_to_get(d), "."));
  std::string payload = tmp;
  if (f.url.size() > 3 && f.url.compare(f.url.size() - 3, 3, ".gz") == 0) { // served gzipped: unpack
    const std::vector<std::string> gunzip = {"gzip", "-dc", tmp};
    if (const int rc = run_program(gunzip, cleanup.b); rc != 0)
      throw Error(str_cat("downloading ", label(d, f), ": `", command_line(gunzip), "` failed with exit ", rc));
    payload = cleanup.b;
  }
  install_verified(dest, f, label(d, f), f.url, [&](const auto& sink) { stream_file(payload, sink); });
  return {dest, FileSource::download};
}

} // namespace

const char* file_source_name(FileSource source) {
  switch (source) {
    case FileSource::cache:
      return "cache";
    case FileSource::mirror:
      return "mirror";
    case FileSource::download:
      return "download";
  }
  return "?";
}

std::string mirror_copy(const std::string& dataset, const std::string& relpath) {
  const std::string root = mirror_root();
  if (root.empty()) return "";
  const std::string base = root + "/" + dataset + "/" + relpath;
  // A mirror's file that is there but is no plain file (a FIFO would block the reader, a folder
  // cannot be read) is refused by name, not reported as missing.
  for (const std::string& path : {base + ".xz", base})
    if (const std::string what = not_a_plain_file(path); !what.empty())
      throw InputError(str_cat(path, " is ", what,
                               ", not a plain file: the data mirror (PILLARS_DATA) must hold the "
                               "dataset's files as regular files (or links to them)"));
  if (is_regular_file(base + ".xz")) return base + ".xz";
  if (is_regular_file(base)) return base;
  return "";
}

FileFacts install_verified(const std::string& dest, const FileSpec& expected, const std::string& what,
                           const std::string& origin,
                           const std::function<void(const std::function<void(const char*, size_t)>&)>& produce) {
  make_parent_dirs(dest);
  io::AtomicFile out(dest);
  FactsCounter counter;
  produce([&](const char* p, size_t n) {
    counter.update(p, n);
    out.write(p, n);
  });
  const FileFacts got = counter.finish();
  if (got.sha256 != expected.sha256 || got.bytes != expected.bytes)
    throw Error(str_cat(what, ": checksum mismatch in ", origin, ": expected sha256 ",
                        expected.sha256.empty() ? "(none recorded)" : expected.sha256, " (", expected.bytes, " bytes, ",
                        expected.lines, " lines), got ", got.sha256, " (", got.bytes, " bytes, ", got.lines,
                        " lines). The file was not used."));
  out.commit(); // the AtomicFile's destructor removes the temporary file on every path above
  write_stamp(dest, expected.sha256);
  return got;
}

Materialized materialize(const DatasetSpec& d, const FileSpec& f, bool rehash) {
  const std::string dest = cache_path(d.name, f.path);

  // (a) the cache, trusted through its stamp or rehashed.
  std::string cache_problem;
  if (is_regular_file(dest)) {
    if (!rehash && stamp_matches(dest, f.sha256)) return {dest, FileSource::cache};
    const FileFacts got = file_facts(dest);
    if (got.sha256 == f.sha256 && got.bytes == f.bytes) {
      write_stamp(dest, f.sha256);
      return {dest, FileSource::cache};
    }
    cache_problem =
        str_cat("the cached copy ", dest, " is damaged (expected sha256 ", f.sha256, ", got ", got.sha256, ")");
  }

  // (b) the offline mirror.
  if (const std::string src = mirror_copy(d.name, f.path); !src.empty()) {
    if (!cache_problem.empty())
      std::fprintf(stderr, "pillars: %s; replacing it from %s\n", cache_problem.c_str(), src.c_str());
    const bool xz = src.size() > 3 && src.compare(src.size() - 3, 3, ".xz") == 0;
    install_verified(dest, f, label(d, f), src, [&](const auto& sink) {
      if (xz)
        xz_decompress_file(src, sink);
      else
        stream_file(src, sink);
    });
    return {dest, FileSource::mirror};
  }
  if (!cache_problem.empty())
    throw Error(str_cat(label(d, f), ": ", cache_problem, ", and there is no other copy: ", how_to_get(d)));

  // (c) a pinned download URL.
  std::string why_no_download;
  if (f.url.empty())
    why_no_download = "it has no download URL";
  else if (downloads_disabled())
    why_no_download = "downloads are disabled (PILLARS_OFFLINE is set)";
  else if (find_program("curl").empty())
    why_no_download = "curl is not installed";
  if (why_no_download.empty()) return download(d, f, dest);

  // (d) nothing: say what is missing, where we looked, and how to get it.
  const std::string root = mirror_root();
  const std::string mirror_where = root.empty()
                                       ? std::string("PILLARS_DATA is not set")
                                       : str_cat("not in the mirror (", root, "/", d.name, "/", f.path, "[.xz])");
  throw InputError(str_cat(label(d, f), " is not available: not in the cache (", dest, "), ", mirror_where, ", and ",
                           why_no_download, ". To get it: ", how_to_get(d), "."));
}

Availability availability(const DatasetSpec& d, const FileSpec& f) {
  if (is_regular_file(cache_path(d.name, f.path))) return Availability::cached;
  if (!mirror_copy(d.name, f.path).empty()) return Availability::mirror;
  if (!f.url.empty()) return Availability::download;
  return Availability::missing;
}

std::string resolve_file(const std::string& dataset, const std::string& relpath) {
  const DatasetSpec& d = find_dataset(dataset);
  return materialize(d, d.file(relpath)).path;
}

bool is_present(const std::string& dataset) {
  const DatasetSpec& d = find_dataset(dataset);
  for (const FileSpec& f : d.files) {
    const Availability a = availability(d, f);
    if (a != Availability::cached && a != Availability::mirror) return false;
  }
  return true;
}

} // namespace pillars::data
