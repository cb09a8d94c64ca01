// Atomic file replacement: see atomic_file.h. POSIX only (open/write/fsync/rename).
#include "base/atomic_file.h"

#include <atomic>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "base/error.h"

namespace pillars::io {

namespace {

std::string errno_text(int err) { return std::strerror(err); }

// The directory holding `path` ("." for a bare file name).
std::string parent_directory(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

// Makes a completed rename durable. Best effort: the file is already in place when this runs, and
// some file systems refuse to fsync a directory, so a failure here is not reported.
void fsync_directory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

} // namespace

bool is_storage_failure(int err) { return err == ENOSPC || err == EDQUOT || err == EIO || err == EROFS; }

void throw_path_error(int err, const std::string& message) {
  if (is_storage_failure(err)) throw Error(message);
  throw InputError(message);
}

std::string atomic_temp_path(const std::string& path) {
  // Unique per writer: the process id and a per-process counter, so two threads (or two
  // processes) saving the same path never share a temporary file.
  static std::atomic<unsigned long long> next{0};
  return str_cat(path, ".tmp.", static_cast<long long>(::getpid()), ".", next.fetch_add(1));
}

void refuse_symlink(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return; // absent, or the open that follows says why
  std::error_code ec;
  const std::filesystem::path target = std::filesystem::read_symlink(path, ec);
  throw InputError(str_cat(path, " is a symbolic link", ec ? std::string() : str_cat(" (to ", target.string(), ")"),
                           "; pillars neither writes through a link nor replaces one: put the file itself there, "
                           "or remove the link"));
}

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)), temp_path_(atomic_temp_path(path_)) {
  if (path_.empty()) throw InputError("cannot write a file with an empty path");
  refuse_symlink(path_);
  fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666); // never follows a planted link
  if (fd_ < 0) {
    const int err = errno;
    throw_path_error(err, str_cat(path_, ": cannot create temporary file ", temp_path_, ": ", errno_text(err)));
  }
}

AtomicFile::~AtomicFile() {
  if (!committed_) discard();
}

void AtomicFile::discard() noexcept {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  ::unlink(temp_path_.c_str()); // may already be gone; nothing useful to do about a failure
}

void AtomicFile::write(const void* data, size_t bytes) {
  if (fd_ < 0) throw Error(str_cat(path_, ": write after the file was committed or failed"));
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::write(fd_, p, bytes);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      discard();
      throw Error(str_cat(path_, ": write to ", temp_path_, " failed: ", errno_text(err)));
    }
    p += n;
    bytes -= static_cast<size_t>(n);
  }
}

void AtomicFile::commit() {
  if (fd_ < 0) throw Error(str_cat(path_, ": commit after the file was committed or failed"));
  // 1. The data must be on disk before the name points at it.
  if (::fsync(fd_) != 0) {
    const int err = errno;
    discard();
    throw Error(str_cat(path_, ": fsync of ", temp_path_, " failed: ", errno_text(err)));
  }
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    const int err = errno;
    discard();
    throw Error(str_cat(path_, ": close of ", temp_path_, " failed: ", errno_text(err)));
  }
  // 2. Atomically replace the directory entry, unless a link was put there meanwhile.
  try {
    refuse_symlink(path_);
  } catch (...) {
    discard();
    throw;
  }
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    discard();
    throw_path_error(err, str_cat(path_, ": cannot replace the file with ", temp_path_, ": ", errno_text(err)));
  }
  committed_ = true;
  // 3. Make the rename itself durable.
  fsync_directory(parent_directory(path_));
}

void atomic_write_file(const std::string& path, std::string_view bytes) {
  AtomicFile file(path);
  file.write(bytes);
  file.commit();
}

} // namespace pillars::io
