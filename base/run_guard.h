// What guards a run directory while `pillars train` (or `prune`, or `--resume`) writes into it:
// one writer at a time, temporary files of interrupted saves cleared away, and a graceful stop on
// SIGTERM, SIGINT, SIGUSR1 or SIGHUP.
//
//   io::DirLock lock(run_dir);          // throws InputError naming the folder and the holder's PID
//   io::remove_stale_temp_files(run_dir);
//   install_stop_handlers();            // the first signal asks to stop; a second SIGINT aborts
//   ... if (stop_signal() != 0) { save checkpoint_last; throw Stopped(stop_signal(), ...); }
//
// THE LOCK is flock(2) on "<dir>/.lock", exclusive and non-blocking, with the holder's PID written
// into the file for the message. The kernel releases a flock when its process dies, kill -9
// included, so a lock file left behind never blocks anyone: only a live holder does. (flock is
// advisory: it keeps out other `pillars` runs, not a user's `rm`.) A ".lock" that is a symbolic link
// is refused (InputError naming it): the PID would be written into the file it points at.
//
// THE SIGNALS. The handler only records the signal (an atomic flag); the training loop polls it
// after every update, saves checkpoint_last atomically, logs the stop and throws Stopped, which
// the CLI turns into exit code 128 + signal number (143 for SIGTERM, 130 for SIGINT, 138 for
// SIGUSR1, 129 for SIGHUP), the shell's convention for "ended by that signal". SIGHUP is what a
// closed terminal or a dropped ssh connection sends: the run saves and stops as for SIGTERM rather
// than dying mid-update, except in a process started with SIGHUP ignored (`nohup`), which keeps
// ignoring it. A SIGINT while the first signal is being honoured (Ctrl-C twice: a person who will
// not wait) ends the process at once with 130 (_exit: no save, no cleanup; the last complete
// checkpoint is still whole, since every save is an atomic rename). A second SIGTERM, SIGUSR1 or
// SIGHUP changes nothing: programs send those, and one stop may reach a process more than once (a
// scheduler signals the tasks, and the launcher it also signalled passes the signal on), so a
// repeat must not cut the save short; a program that means to end the process now sends SIGKILL.
//
// SIGNALS THAT WOULD END A RUN FOR A WRITE install_stop_handlers() ignores, so that the write fails
// with an error code instead:
//   SIGPIPE  (a write to a pipe whose reader has gone: `pillars train ... 2>&1 | head`): progress
//            lines on stdout/stderr are dropped (stdio only marks the stream's error flag) and
//            training goes on to its end; the trainer appends one "note" line per stream to
//            log.jsonl when it sees the stream's error flag (train/run_log.cpp).
//   SIGXFSZ  (a write past the file-size limit, `ulimit -f`): the write fails with EFBIG, and the
//            run stops with exit 1 naming the file, as for a full disk (an atomic save removes its
//            temporary file: base/atomic_file.h; a log line is taken back: base/log_file.h).
#pragma once
#include <string>

#include "base/error.h"

namespace pillars {

namespace io {

class DirLock {
 public:
  explicit DirLock(const std::string& dir); // the folder must exist
  ~DirLock();
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

 private:
  int fd_ = -1;
};

// Throws DirLock's "in use by another run (process P ...)" InputError when another process holds
// `dir`'s lock, without taking the lock or writing anything (no .lock: nobody holds it).
void refuse_if_in_use(const std::string& dir);

// Throws InputError naming a symbolic link directly inside `dir` (the first by name), if there is
// one. A run folder holds only files pillars wrote, and pillars makes no links; a link there would
// make a later write go through it or replace it, so a run refuses the folder before it writes
// anything (the writers refuse links too: base/atomic_file.h, base/log_file.h, DirLock).
void refuse_links_in(const std::string& dir);

// A folder pillars is to make or write into (`flag` names where the user gave it, e.g. "--out")
// must be a folder, or a place where one can be made: throws InputError when `dir` is a file, or
// when a file stands where one of its parent folders would be, so a run refuses it before it
// prepares anything rather than failing when it makes the folder. Links are followed (a link to a
// file is a file). Writes nothing.
void refuse_file_in_the_way(const std::string& flag, const std::string& dir);

// Removes "<name>.tmp.<pid>[.<n>]" files (io::AtomicFile's temporaries) left in `dir` by a
// process that died mid-save. Call it with the directory's lock held. Returns how many it removed.
int remove_stale_temp_files(const std::string& dir);

} // namespace io

// A run stopped by a signal after saving: the CLI exits with 128 + signal.
struct Stopped : Error {
  Stopped(int signal_number, const std::string& message) : Error(message), signal(signal_number) {}
  int signal;
};

// SIGTERM, SIGINT, SIGUSR1 and SIGHUP (unless ignored at start) record a stop; SIGPIPE and SIGXFSZ
// are ignored. Calling it again changes nothing.
void install_stop_handlers();
int stop_signal();                          // the first stop signal received since install_stop_handlers(), or 0
const char* signal_name(int signal_number); // "SIGTERM", ...

} // namespace pillars
