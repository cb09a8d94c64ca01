// What guards a run directory and its logs, in-process (base/run_guard.h, base/log_file.h): the
// lock refuses a second writer naming the holder's PID and is not blocked by a lock file left by a
// dead process; stale temporaries of interrupted saves are removed and nothing else is; the first
// stop signal is recorded (SIGHUP among them, unless ignored at start) and a second SIGINT ends
// the process with 128 + signal, while SIGPIPE and SIGXFSZ are ignored; a log line is
// appended whole or not at all, a cut tail is repaired on open, and a write that fails (here the
// file-size limit, EFBIG) throws naming the file and leaves the file as it was; a run file that is a
// symbolic link is refused by every writer, its target left as it was.
//
// These run in every build, the sanitized one included; tests/cli_run_guard.sh, cli_kill_loop.sh
// and cli_disk_full.sh check the same behavior through the real binary (Release build only).
// Signals and resource limits are process-wide, so those cases run in a forked child that reports
// through its exit code.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "base/atomic_file.h"
#include "base/log_file.h"
#include "base/run_guard.h"
#include "tests/test_env.h"

using namespace pillars;
using pillars::testing::read_file;
using pillars::testing::ScratchDir;
using pillars::testing::write_file;
namespace fs = std::filesystem;

namespace {

// Runs `child` in a forked process and returns its exit status as the shell reports it: the
// child's exit code, or 128 + signal when a signal ended it. The child never returns into doctest.
int in_child(const std::function<int()>& child) {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(child());
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

} // namespace

TEST_CASE(
    "DirLock: a second writer is refused naming the folder and the holder's PID, and gets the lock once it is free") {
  ScratchDir dir("pillars_lock_");
  const std::string d = dir.path.string();
  {
    io::DirLock first(d);
    // flock belongs to an open file description: a second open() in the same process conflicts
    // exactly as another process would.
    std::string message;
    try {
      io::DirLock second(d);
    } catch (const InputError& e) {
      message = e.what();
    }
    CHECK(message.find(d + " is in use by another run (process " + std::to_string(::getpid())) != std::string::npos);
  }
  CHECK_NOTHROW(io::DirLock again(d)); // released by the first one's destructor
}

TEST_CASE("DirLock: a lock file left by a killed process blocks nobody") {
  ScratchDir dir("pillars_lock_");
  const std::string d = dir.path.string();
  // The child takes the lock and dies by SIGKILL without releasing it; the file stays.
  const int status = in_child([&] {
    io::DirLock held(d);
    ::raise(SIGKILL);
    return 0;
  });
  CHECK(status == 128 + SIGKILL);
  REQUIRE(fs::exists(dir.path / ".lock"));
  CHECK_NOTHROW(io::DirLock after(d));
}

TEST_CASE("remove_stale_temp_files removes NAME.tmp.PID and NAME.tmp.PID.N and nothing else") {
  ScratchDir dir("pillars_stale_");
  for (const char* name : {"checkpoint_last.safetensors.tmp.4242.7", "log.jsonl.tmp.17", "keep.safetensors",
                           "notes.tmp.txt", "plan.tmp.", ".tmp.12", "votes.tmp.3a"})
    write_file(dir.path / name, "x");
  fs::create_directory(dir.path / "folder.tmp.5"); // not a regular file: left alone
  CHECK(io::remove_stale_temp_files(dir.path.string()) == 2);
  CHECK_FALSE(fs::exists(dir.path / "checkpoint_last.safetensors.tmp.4242.7"));
  CHECK_FALSE(fs::exists(dir.path / "log.jsonl.tmp.17"));
  for (const char* kept : {"keep.safetensors", "notes.tmp.txt", "plan.tmp.", ".tmp.12", "votes.tmp.3a", "folder.tmp.5"})
    CHECK_MESSAGE(fs::exists(dir.path / kept), kept);
}

TEST_CASE(
    "stop signals: the first is recorded for the training loop, a repeated SIGTERM or SIGUSR1 changes nothing, "
    "a SIGINT then ends the process with 130") {
  const int status = in_child([] {
    install_stop_handlers();
    if (stop_signal() != 0) return 1;
    ::raise(SIGUSR1);
    if (stop_signal() != SIGUSR1) return 2; // recorded, and the process goes on
    ::raise(SIGTERM);                       // as a launcher's repeat would: the stop under way goes on
    ::raise(SIGUSR1);
    if (stop_signal() != SIGUSR1) return 3;
    ::raise(SIGINT); // Ctrl-C again: _exit(128 + SIGINT) inside the handler
    return 4;
  });
  CHECK(status == 128 + SIGINT);
  CHECK(std::string(signal_name(SIGINT)) == "SIGINT");
}

TEST_CASE(
    "stop signals: SIGHUP stops like SIGTERM and a repeat changes nothing, SIGPIPE and SIGXFSZ are ignored, so the "
    "write fails with EPIPE") {
  const int status = in_child([] {
    install_stop_handlers();
    ::raise(SIGHUP);
    if (stop_signal() != SIGHUP) return 1;
    ::raise(SIGHUP); // the terminal's hangup and the shell's: one stop
    ::raise(SIGTERM);
    if (stop_signal() != SIGHUP) return 2;
    ::raise(SIGPIPE); // ignored: the process lives on
    ::raise(SIGXFSZ);
    int fds[2];
    if (::pipe(fds) != 0) return 3;
    ::close(fds[0]); // the reader has gone
    if (::write(fds[1], "x", 1) != -1 || errno != EPIPE) return 4;
    return std::string(signal_name(SIGHUP)) == "SIGHUP" ? 0 : 5;
  });
  CHECK(status == 0);
}

TEST_CASE("stop signals: a process started with SIGHUP ignored (nohup) keeps ignoring it") {
  const int status = in_child([] {
    ::signal(SIGHUP, SIG_IGN);
    install_stop_handlers();
    ::raise(SIGHUP);
    if (stop_signal() != 0) return 1;
    ::raise(SIGTERM); // the other stop signals still work
    return stop_signal() == SIGTERM ? 0 : 2;
  });
  CHECK(status == 0);
}

TEST_CASE("LineFile appends whole lines and repairs a cut tail on open") {
  ScratchDir dir("pillars_lines_");
  const fs::path log = dir.path / "log.jsonl";
  {
    io::LineFile file(log.string());
    file.append("{\"update\":1}");
    file.append("{\"update\":2}", /*durable=*/true);
    CHECK_THROWS_AS(file.append("two\nlines"), Error);
  }
  CHECK(read_file(log) == "{\"update\":1}\n{\"update\":2}\n");
  // A crash mid-write left half a line: opening removes it, the next line starts clean.
  std::ofstream(log, std::ios::app) << "{\"upd";
  io::LineFile reopened(log.string());
  reopened.append("{\"update\":3}");
  CHECK(read_file(log) == "{\"update\":1}\n{\"update\":2}\n{\"update\":3}\n");
}

TEST_CASE("LineFile: a write that fails throws naming the file and leaves no part of the line") {
  ScratchDir dir("pillars_lines_");
  const fs::path log = dir.path / "log.jsonl";
  // In a child: a file-size limit of 64 bytes (with SIGXFSZ ignored, write(2) fails with EFBIG once
  // the limit is reached, after a short write of what still fits).
  const int status = in_child([&] {
    ::signal(SIGXFSZ, SIG_IGN);
    struct rlimit limit {
      64, 64
    };
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) return 10;
    io::LineFile file(log.string());
    file.append(std::string(40, 'a')); // 41 bytes: fits
    try {
      file.append(std::string(40, 'b')); // 23 bytes fit, then EFBIG
    } catch (const Error& e) {
      return std::string(e.what()).find(log.string() + ": cannot append a line") == std::string::npos ? 11 : 0;
    }
    return 12;
  });
  CHECK(status == 0);
  CHECK(read_file(log) == std::string(40, 'a') + "\n"); // the cut second line was truncated away
}

// What a link in a run folder must not do: change the file it points at, or vanish unremarked.
TEST_CASE(
    "a run file that is a symbolic link is refused, naming it, by LineFile, AtomicFile, DirLock and refuse_links_in, "
    "and the target is left as it was") {
  ScratchDir dir("pillars_links_");
  const fs::path target = dir.path / "elsewhere.txt";
  write_file(target, "precious\n");
  auto refusal = [](const std::function<void()>& write) {
    try {
      write();
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(no InputError)");
  };
  auto names_link = [&](const std::string& message, const fs::path& link) {
    return message.find(link.string() + " is a symbolic link (to " + target.string() + ")") != std::string::npos;
  };
  const fs::path log = dir.path / "log.jsonl", lock = dir.path / ".lock",
                 ckpt = dir.path / "checkpoint_last.safetensors";
  for (const fs::path& link : {log, lock, ckpt}) fs::create_symlink(target, link);

  CHECK(names_link(refusal([&] { io::LineFile f(log.string()); }), log));
  CHECK(names_link(refusal([&] { io::DirLock l(dir.path.string()); }), lock));
  CHECK(names_link(refusal([&] { io::atomic_write_file(ckpt.string(), "new"); }), ckpt));
  const std::string first = refusal([&] { io::refuse_links_in(dir.path.string()); });
  CHECK(names_link(first, lock)); // ".lock" sorts first
  CHECK(first.find("(2 more links in " + dir.path.string() + ")") != std::string::npos);

  CHECK(read_file(target) == "precious\n");
  for (const fs::path& link : {log, lock, ckpt}) CHECK(fs::is_symlink(link));
  CHECK(io::remove_stale_temp_files(dir.path.string()) == 0); // the refused save left no temporary

  // A link put in place while an atomic save was being written: refused at the rename, the temporary removed.
  const fs::path late = dir.path / "config.json";
  std::string temp;
  CHECK(names_link(refusal([&] {
                     io::AtomicFile f(late.string());
                     temp = f.temp_path();
                     f.write("{}");
                     fs::create_symlink(target, late);
                     f.commit();
                   }),
                   late));
  CHECK_FALSE(fs::exists(temp));
  CHECK(read_file(target) == "precious\n");

  // A dangling link: following it would create the file it names.
  const fs::path planted = dir.path / "planted.jsonl", dangling = dir.path / "head_metrics.jsonl";
  fs::create_symlink(planted, dangling);
  CHECK(refusal([&] { io::LineFile f(dangling.string()); }).find(dangling.string() + " is a symbolic link") !=
        std::string::npos);
  CHECK_FALSE(fs::exists(planted));
}
