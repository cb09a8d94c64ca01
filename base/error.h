// Errors. The engine throws pillars::Error with a message that names what was wrong (a file, a
// field, a shape); the CLI turns it into a message and an exit code. PILLARS_CHECK is for
// conditions a caller can violate (bad shapes, corrupt files), not for internal invariants only.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace pillars {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// Bad input from the user (a file, an experiment, a command-line value): the CLI exits with 2.
struct InputError : Error {
  using Error::Error;
};

namespace detail {
inline void append(std::ostringstream&) {}
template <class T, class... R>
void append(std::ostringstream& os, const T& first, const R&... rest) {
  os << first;
  append(os, rest...);
}
} // namespace detail

template <class... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream os;
  detail::append(os, args...);
  return os.str();
}

} // namespace pillars

#define PILLARS_CHECK(cond, ...)                                          \
  do {                                                                    \
    if (!(cond)) throw ::pillars::Error(::pillars::str_cat(__VA_ARGS__)); \
  } while (0)
