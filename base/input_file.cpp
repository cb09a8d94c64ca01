// See input_file.h.
#include "base/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/error.h"

namespace pillars {

namespace {

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

[[noreturn]] void refuse(const std::string& path, const std::string& why) {
  throw InputError(path + ": cannot read: " + why);
}

// An open descriptor of a regular file, closed at scope exit.
struct RegularFile {
  int fd = -1;
  uint64_t size = 0;
  explicit RegularFile(const std::string& path) {
    fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) refuse(path, std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      const int err = errno;
      ::close(fd);
      refuse(path, std::strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {
      ::close(fd);
      refuse(path, str_cat("it is ", kind_of(st.st_mode), ", not a regular file"));
    }
    size = static_cast<uint64_t>(st.st_size);
  }
  ~RegularFile() { ::close(fd); }
  RegularFile(const RegularFile&) = delete;
  RegularFile& operator=(const RegularFile&) = delete;
};

} // namespace

void check_regular_file(const std::string& path) { RegularFile file(path); }

std::string read_input_file(const std::string& path, uint64_t max_bytes) {
  RegularFile file(path);
  if (file.size > max_bytes)
    refuse(path, str_cat("the file has ", file.size, " bytes, more than the ", max_bytes, " allowed"));
  std::string text;
  text.reserve(static_cast<size_t>(file.size));
  char buf[65536];
  // Read to the end, not to the size fstat gave: a file that grows meanwhile is still bounded.
  for (ssize_t n; (n = ::read(file.fd, buf, sizeof buf)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      refuse(path, std::strerror(errno));
    }
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > max_bytes) refuse(path, str_cat("the file has more than the ", max_bytes, " bytes allowed"));
  }
  return text;
}

} // namespace pillars
