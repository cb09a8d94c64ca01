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
// Links: a `path` that is a symbolic link (a dangling one included) is refused with InputError
// naming it, when the AtomicFile is made and again just before the rename: a rename would replace
// the link, not write through it, but a link in a run folder is someone's doing, and removing it
// silently is no better than writing through it (refuse_symlink below). The folders above `path`
// may be links; only its last component is checked.
//
// Limits: the temporary name includes the process id and a counter, so two threads of one process
// may write the same `path` at the same time; the last rename wins. The new file gets the default
// permissions (0666 minus the umask), not those of the old file.
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

// Throws InputError "<path> is a symbolic link (to T); ..." when the last component of `path` is a
// symbolic link, dangling or not. Nothing happens when `path` does not exist. Every writer of a run
// file calls it (AtomicFile, io::LineFile, io::DirLock), and opens with O_NOFOLLOW where it can.
void refuse_symlink(const std::string& path);

// Whether a failed create, write or rename (its errno) is the storage's failure rather than the
// user's path: a full disk (blocks or inodes), a quota, a read-only file system or an I/O error.
// Those are exit 1 (a run-time failure); a path that cannot be made (no such folder, a file in the
// way, no permission) is exit 2 (bad input).
bool is_storage_failure(int err);
// Throws Error(message) for a storage failure, InputError(message) otherwise.
[[noreturn]] void throw_path_error(int err, const std::string& message);

} // namespace pillars::io
