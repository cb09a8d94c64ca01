// Atomic file replacement: a reader (or a crash) sees either the old file or the complete new one,
// never a half-written file.
//
//   {
//     io::AtomicFile f(path);         // creates "<path>.tmp.<pid>" in the same directory
//     f.write(header.data(), header.size());
//     f.write(buffer, n);
//     f.commit();                     // fsync, rename over `path`, fsync the directory
//   }                                 // not committed (an exception, an early return)? the
//                                     // destructor deletes the temporary file; `path` is untouched
//
//   io::atomic_write_file(path, json.dump(2));   // the same, for bytes already in memory
//
// How it works: rename(2) within one file system atomically replaces the directory entry. The data
// is fsync'ed before the rename, so after a power loss the entry never points at unwritten blocks;
// the directory is fsync'ed after it, so the rename itself is durable.
//
// Limits: the temporary name includes the process id only, so two threads of one process must not
// write the same `path` at the same time. If `path` is a symbolic link, the link itself is replaced.
// The new file gets the default permissions (0666 minus the umask), not those of the old file.
//
// Errors: a path that cannot be created or replaced (missing directory, no permission, `path` is a
// directory) throws pillars::InputError; a failed write or fsync (disk full, I/O error) throws
// pillars::Error, and so does a create or rename that fails for the disk's sake (ENOSPC: no
// blocks or no inodes; EDQUOT; EIO). Every message starts with `path`.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace pillars::io {

class AtomicFile {
 public:
  explicit AtomicFile(std::string path); // opens the temporary file for writing
  ~AtomicFile();                         // removes the temporary file unless committed
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, size_t bytes); // all of it, or throws
  void write(std::string_view bytes) { write(bytes.data(), bytes.size()); }
  void commit(); // fsync + close + rename over the final path + fsync the directory

  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return temp_path_; }

 private:
  void discard() noexcept; // close and delete the temporary file

  std::string path_;
  std::string temp_path_;
  int fd_ = -1;
  bool committed_ = false;
};

// Replaces the file at `path` with `bytes`, atomically (see above).
void atomic_write_file(const std::string& path, std::string_view bytes);

// A fresh temporary name for `path`: "<path>.tmp.<pid>.<n>", n counting up within the process.
std::string atomic_temp_path(const std::string& path);

} // namespace pillars::io
