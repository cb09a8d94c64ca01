// The cache folder, the mirror folder and verified-stamps; see cache.h.
#include "datasets/cache.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "base/error.h"
#include "base/atomic_file.h"

namespace pillars::data {

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

std::string strip_trailing_slashes(std::string s) {
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

} // namespace

std::string cache_root() {
  if (const std::string c = env("PILLARS_CACHE"); !c.empty()) return strip_trailing_slashes(c);
  if (const std::string x = env("XDG_CACHE_HOME"); !x.empty()) return strip_trailing_slashes(x) + "/pillars";
  const std::string home = env("HOME");
  if (home.empty()) throw InputError("no cache folder for datasets: set PILLARS_CACHE (or XDG_CACHE_HOME or HOME)");
  return strip_trailing_slashes(home) + "/.cache/pillars";
}

std::string cache_path(const std::string& dataset, const std::string& relpath) {
  return cache_root() + "/" + dataset + "/" + relpath;
}

std::string mirror_root() { return strip_trailing_slashes(env("PILLARS_DATA")); }

bool downloads_disabled() {
  const std::string v = env("PILLARS_OFFLINE");
  return !v.empty() && v != "0";
}

// ---- stamps ----------------------------------------------------------------------------------

namespace {

struct Identity {
  uint64_t bytes = 0;
  int64_t mtime_ns = 0;
};

bool identity_of(const std::string& path, Identity& id) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  id.bytes = static_cast<uint64_t>(st.st_size);
  id.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
  return true;
}

std::string stamp_path(const std::string& path) { return path + ".sha256-ok"; }

} // namespace

bool stamp_matches(const std::string& path, const std::string& sha256) {
  Identity id;
  if (sha256.empty() || !identity_of(path, id)) return false;
  std::ifstream in(stamp_path(path));
  std::string sha;
  uint64_t bytes = 0;
  int64_t mtime_ns = 0;
  if (!(in >> sha >> bytes >> mtime_ns)) return false;
  return sha == sha256 && bytes == id.bytes && mtime_ns == id.mtime_ns;
}

void write_stamp(const std::string& path, const std::string& sha256) {
  Identity id;
  if (!identity_of(path, id)) throw Error(str_cat(path, ": cannot stat the file just verified"));
  // Temp file + rename, but no fsync (unlike io::AtomicFile): a stamp lost or garbled by a crash
  // only costs a rehash, and skipping two fsyncs per file halves the time to fill a cache. The
  // file it vouches for was fsync'ed before its own rename, so a surviving stamp never covers
  // unwritten data.
  const std::string target = stamp_path(path), temp = io::atomic_temp_path(target);
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out << sha256 << ' ' << id.bytes << ' ' << id.mtime_ns << '\n';
    if (!out.flush()) throw Error(str_cat(temp, ": cannot write the verification stamp"));
  }
  if (std::rename(temp.c_str(), target.c_str()) != 0) {
    const int err = errno;
    std::remove(temp.c_str());
    throw Error(str_cat(target, ": cannot write the verification stamp: ", std::strerror(err)));
  }
}

// ---- facts -----------------------------------------------------------------------------------

void FactsCounter::update(const char* data, size_t n) {
  sha_.update(data, n);
  facts_.bytes += n;
  facts_.lines += static_cast<uint64_t>(std::count(data, data + n, '\n'));
  if (n > 0) facts_.unterminated = data[n - 1] != '\n';
}

FileFacts FactsCounter::finish() {
  facts_.sha256 = sha_.hex();
  return facts_;
}

FileFacts file_facts(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(str_cat(path, ": cannot open: ", std::strerror(errno)));
  FactsCounter counter;
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    if (in.gcount() > 0) counter.update(buf.data(), static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) throw Error(str_cat(path, ": read failed"));
  return counter.finish();
}

std::string human_bytes(uint64_t bytes) {
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(1);
  if (bytes < 1000)
    os << bytes << " B";
  else if (bytes < 1000000)
    os << bytes / 1e3 << " kB";
  else if (bytes < 1000000000)
    os << bytes / 1e6 << " MB";
  else
    os << bytes / 1e9 << " GB";
  return os.str();
}

} // namespace pillars::data
