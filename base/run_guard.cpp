// Run-directory lock, stale temporaries, stop signals; see run_guard.h.
#include "base/run_guard.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "base/atomic_file.h"

namespace pillars {

namespace io {

namespace {
// The refusal of a folder whose lock another process holds, naming it by the PID it wrote.
InputError in_use(const std::string& dir, const std::string& path, const std::string& holder) {
  return InputError(str_cat(dir, " is in use by another run (process ", holder.empty() ? "?" : holder, " holds ", path,
                            "); wait for it, stop it, or choose another --out"));
}
} // namespace

DirLock::DirLock(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / ".lock").string();
  // Not through a link: the PID written below would overwrite the file it points at.
  refuse_symlink(path);
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd_ < 0 && errno == ELOOP) refuse_symlink(path);
  if (fd_ < 0)
    throw_path_error(errno, str_cat(dir, ": cannot create its lock file ", path, ": ", std::strerror(errno)));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    std::string holder;
    std::ifstream(path) >> holder; // the holder's PID, as it wrote it
    ::close(fd_);
    fd_ = -1;
    if (err == EWOULDBLOCK) throw in_use(dir, path, holder);
    throw InputError(str_cat(dir, ": cannot lock ", path, ": ", std::strerror(err)));
  }
  const std::string pid = std::to_string(static_cast<long long>(::getpid())) + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    // The lock holds without the PID in the file; only a second writer's message would miss it.
  }
}

DirLock::~DirLock() {
  if (fd_ >= 0) ::close(fd_); // closing releases the flock
}

void refuse_if_in_use(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / ".lock").string();
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return; // no lock file (or a link, which refuse_links_in names)
  // A shared lock cannot be had while a writer holds its exclusive one; it is dropped at once.
  const bool held = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);
  if (!held) return;
  std::string holder;
  std::ifstream(path) >> holder;
  throw in_use(dir, path, holder);
}

void refuse_links_in(const std::string& dir) {
  namespace fs = std::filesystem;
  std::vector<std::string> links;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec))
    if (entry.is_symlink(ec)) links.push_back(entry.path().string());
  if (links.empty()) return;
  std::sort(links.begin(), links.end()); // the same name in the message every time
  try {
    refuse_symlink(links.front());
  } catch (const InputError& err) {
    throw InputError(str_cat(err.what(), links.size() > 1 ? str_cat(" (", links.size() - 1, " more link",
                                                                    links.size() > 2 ? "s" : "", " in ", dir, ")")
                                                          : std::string()));
  }
}

void refuse_file_in_the_way(const std::string& flag, const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (fs::path p = fs::path(dir); !p.empty(); p = p.parent_path()) {
    const fs::file_status status = fs::status(p, ec); // not_found for a missing path, or one under a file
    if (fs::exists(status)) {
      if (!fs::is_directory(status))
        throw InputError(p == fs::path(dir) ? str_cat(flag, " ", dir, ": a file, not a folder")
                                            : str_cat(flag, " ", dir, ": ", p.string(),
                                                      " is a file, so no folder can be made under it"));
      return;
    }
    if (p == p.parent_path()) return; // the root
  }
}

int remove_stale_temp_files(const std::string& dir) {
  namespace fs = std::filesystem;
  int removed = 0;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const size_t at = name.rfind(".tmp.");
    if (at == std::string::npos || at == 0 || !entry.is_regular_file(ec)) continue;
    const std::string tail = name.substr(at + 5); // "<pid>" or "<pid>.<n>"
    bool numeric = !tail.empty() && std::isdigit(static_cast<unsigned char>(tail.front())) &&
                   std::isdigit(static_cast<unsigned char>(tail.back()));
    for (char c : tail) numeric = numeric && (std::isdigit(static_cast<unsigned char>(c)) || c == '.');
    if (numeric && fs::remove(entry.path(), ec)) ++removed;
  }
  return removed;
}

} // namespace io

namespace {

std::atomic<int> g_signal{0};

extern "C" void on_stop_signal(int signal_number) {
  int expected = 0;
  if (g_signal.compare_exchange_strong(expected, signal_number)) return; // the first: the loop will stop
  if (signal_number == SIGINT) ::_exit(128 + SIGINT);                    // Ctrl-C again: now
  // A repeated SIGTERM or SIGUSR1: the stop under way goes on (run_guard.h).
}

} // namespace

void install_stop_handlers() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART; // reads and writes in progress carry on; the loop polls the flag
  for (int s : {SIGTERM, SIGINT, SIGUSR1}) ::sigaction(s, &action, nullptr);
  // SIGHUP too, unless the process was started with it ignored: `nohup pillars train ...` asks
  // for a run that outlives its terminal, and that wish is kept.
  struct sigaction hup {};
  if (::sigaction(SIGHUP, nullptr, &hup) == 0 && hup.sa_handler != SIG_IGN) ::sigaction(SIGHUP, &action, nullptr);
  // Writes to a pipe whose reader has gone, or past `ulimit -f`, fail with EPIPE / EFBIG instead
  // of ending the process: the code that writes a run's files reports the failure naming the file,
  // and what goes to stdout or stderr is dropped (the run goes on; run_guard.h).
  ::signal(SIGPIPE, SIG_IGN);
  ::signal(SIGXFSZ, SIG_IGN);
}

int stop_signal() { return g_signal.load(); }

const char* signal_name(int signal_number) {
  switch (signal_number) {
    case SIGTERM:
      return "SIGTERM";
    case SIGINT:
      return "SIGINT";
    case SIGUSR1:
      return "SIGUSR1";
    case SIGHUP:
      return "SIGHUP";
    default:
      return "a signal";
  }
}

} // namespace pillars
