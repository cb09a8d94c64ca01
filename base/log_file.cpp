// An append-only file of whole lines: see log_file.h. POSIX only (open/write/ftruncate/fsync).
#include "base/log_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/atomic_file.h"
#include "base/error.h"

namespace pillars::io {

namespace {

// A failure of the disk rather than of the user's input: the run fails (exit 1), not exit 2.
bool is_runtime_failure(int err) { return err == ENOSPC || err == EDQUOT || err == EIO; }

} // namespace

LineFile::LineFile(std::string path) : path_(std::move(path)) {
  if (path_.empty()) throw InputError("cannot append to a file with an empty path");
  refuse_symlink(path_); // a clear message; O_NOFOLLOW below holds even if a link appears meanwhile
  fd_ = ::open(path_.c_str(), O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0666);
  if (fd_ < 0) {
    const int err = errno;
    if (err == ELOOP) refuse_symlink(path_);
    const std::string message = str_cat(path_, ": cannot open for appending: ", std::strerror(err));
    if (is_runtime_failure(err)) throw Error(message);
    throw InputError(message);
  }
  try {
    repair_tail();
  } catch (...) {
    ::close(fd_);
    throw;
  }
}

LineFile::~LineFile() {
  if (fd_ >= 0) ::close(fd_); // every line was written (and checked) already; nothing is buffered here
}

void LineFile::repair_tail() {
  struct stat st {};
  if (::fstat(fd_, &st) != 0) throw Error(str_cat(path_, ": cannot stat: ", std::strerror(errno)));
  if (!S_ISREG(st.st_mode)) return; // a pipe or /dev/null: nothing to repair
  const off_t size = st.st_size;
  // Scan back from the end for the last '\n', a block at a time.
  char block[4096];
  off_t end = size, keep = 0;
  while (end > 0) {
    const off_t start = std::max<off_t>(0, end - static_cast<off_t>(sizeof block));
    const size_t want = static_cast<size_t>(end - start);
    ssize_t got;
    do got = ::pread(fd_, block, want, start);
    while (got < 0 && errno == EINTR);
    if (got != static_cast<ssize_t>(want))
      throw Error(str_cat(path_, ": cannot read its end: ", got < 0 ? std::strerror(errno) : "short read"));
    const char* nl = static_cast<const char*>(::memrchr(block, '\n', want));
    if (nl != nullptr) {
      keep = start + static_cast<off_t>(nl - block) + 1;
      break;
    }
    end = start;
  }
  if (keep == size) return;
  if (::ftruncate(fd_, keep) != 0) {
    const int err = errno;
    throw Error(str_cat(path_, ": cannot remove the cut last line (", static_cast<long long>(size - keep),
                        " bytes after the last whole line): ", std::strerror(err)));
  }
  std::fprintf(
      stderr,
      "note: %s: removed a cut last line (%lld bytes after the last whole line), left by an interrupted write\n",
      path_.c_str(), static_cast<long long>(size - keep));
}

void LineFile::append(std::string_view line, bool durable) {
  if (line.find('\n') != std::string_view::npos)
    throw Error(str_cat(path_, ": a log line must not contain a newline: ", line.substr(0, 80)));
  buffer_.assign(line);
  buffer_ += '\n';
  struct stat st {};
  if (::fstat(fd_, &st) != 0) throw Error(str_cat(path_, ": cannot stat: ", std::strerror(errno)));
  const off_t before = st.st_size; // we are the only writer: O_APPEND puts the line here
  const char* p = buffer_.data();
  size_t left = buffer_.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n > 0) {
      p += n, left -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    const int err = n < 0 ? errno : EIO; // write(2) of a regular file never returns 0 for a non-empty buffer
    // Take back what part of the line reached the file, so that it ends with a whole line.
    std::string undo;
    if (left != buffer_.size() && S_ISREG(st.st_mode) && ::ftruncate(fd_, before) != 0)
      undo = str_cat("; removing the ", buffer_.size() - left, " bytes written of it failed too (",
                     std::strerror(errno), "): the file ends with a cut line");
    throw Error(str_cat(path_, ": cannot append a line: ", std::strerror(err),
                        undo.empty() ? " (the line was not written; the file ends with its last whole line)" : undo));
  }
  if (durable) sync();
}

void LineFile::sync() {
  if (::fsync(fd_) != 0 && errno != EINVAL && errno != EROFS) // EINVAL/EROFS: a pipe or device that cannot sync
    throw Error(str_cat(path_, ": fsync failed: ", std::strerror(errno)));
}

} // namespace pillars::io
