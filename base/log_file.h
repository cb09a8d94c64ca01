// An append-only file of whole lines (log.jsonl, head_metrics.jsonl): every line is either in the
// file complete, with its '\n', or not at all, and a write that fails stops the caller with an
// error that names the file.
//
//   io::LineFile log(run_dir + "/log.jsonl");  // opens for appending (creates it), repairs a cut tail
//   log.append(json.dump());                   // one whole line, or throws pillars::Error
//   log.append(json.dump(), /*durable=*/true); // the same, then fsync
//
// HOW A LINE IS WRITTEN. The line and its '\n' are built in memory, the file's size before it is
// taken (fstat), and the bytes go out with one write(2) loop on an O_APPEND descriptor, every return
// checked: EINTR is retried, a short write is continued where it stopped. When a write fails
// (ENOSPC, EDQUOT, EIO, ...), the file is truncated back to the size it had before the line
// (ftruncate), so the part of the line that did reach it is removed, and pillars::Error is thrown:
// "<path>: cannot append a line: No space left on device (...)". A caller never sees a cut line,
// and the file ends with the last line that was written whole.
//
// A CUT TAIL LEFT BEFORE. A process killed in the middle of a write(2), or a machine that lost
// power before its page cache reached the disk, can leave a last line without its '\n' (or a tail
// of zero bytes). Opening the file removes such a tail (everything after the last '\n'; a note on
// stderr says how many bytes), so the lines after it are not glued to half a line. The caller must
// be the file's only writer (a run directory has one: base/run_guard.h).
//
// FSYNC POLICY. append() leaves the line in the page cache, which is enough for any crash of the
// process, kill -9 included: a completed write(2) is in the file. Only an operating-system crash or
// a power loss can lose it, and on such lines a log does not need to pay an fsync (a few ms on a
// disk) per line. append(line, true) fsyncs after the line: the trainer does so for the lines that
// record a checkpoint or the end of a run, so after a power loss the log holds at least every line
// up to the last checkpoint it recorded. A failed fsync throws pillars::Error too (the line stays:
// it is whole in the page cache, and what reached the disk cannot be told).
//
// LINKS. A `path` that is a symbolic link is refused (pillars::InputError naming it), and the file is
// opened with O_NOFOLLOW: appending through a link would write into whatever file it points at.
//
// Errors: a file that cannot be opened throws pillars::InputError (missing folder, no permission,
// a directory, a symbolic link) or pillars::Error (disk full, I/O error: the run fails with exit 1, not 2). A line
// containing '\n' is a programming error (pillars::Error): it would be two lines.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace pillars::io {

class LineFile {
 public:
  explicit LineFile(std::string path);
  ~LineFile();
  LineFile(const LineFile&) = delete;
  LineFile& operator=(const LineFile&) = delete;

  // Appends `line` and a '\n' whole, or throws pillars::Error leaving the file as it was.
  void append(std::string_view line, bool durable = false);
  void sync(); // fsync; throws pillars::Error

  const std::string& path() const { return path_; }

 private:
  void repair_tail(); // removes bytes after the last '\n'

  std::string path_;
  std::string buffer_; // the line being written, reused
  int fd_ = -1;
};

} // namespace pillars::io
