// base/progress.h: the "decoded n/N sentences" line, rewritten in place on a terminal and written
// as whole lines (never with "\r") in a file, the final line with the rate either way.
#include <doctest/doctest.h>

#include "skip.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "base/progress.h"

using pillars::ProgressLine;

namespace {

std::string contents(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string s;
  for (int c; (c = std::fgetc(f)) != EOF;) s.push_back(static_cast<char>(c));
  return s;
}

} // namespace

TEST_CASE("progress: in a file, whole lines at most every interval, none for the last count, then the rate") {
  std::FILE* f = std::tmpfile();
  REQUIRE(f != nullptr);
  {
    ProgressLine line(f, "decoded", "sentences", std::chrono::seconds(0)); // every update is due
    line.update(64, 200);
    line.update(128, 200);
    line.update(200, 200); // the last count: finish() writes it
    line.finish(200, 0.5);
  }
  CHECK(contents(f) ==
        "decoded 64/200 sentences\ndecoded 128/200 sentences\ndecoded 200/200 sentences (400.0 sentences/s)\n");
  std::fclose(f);

  std::FILE* g = std::tmpfile();
  REQUIRE(g != nullptr);
  {
    ProgressLine line(g, "decoded", "sentences"); // 30 s between lines: none is due yet
    line.update(1, 3);
    line.update(2, 3);
    line.finish(3, 0.0); // no time measured: rate 0, not a division by zero
  }
  CHECK(contents(g) == "decoded 3/3 sentences (0.0 sentences/s)\n");
  std::fclose(g);

  ProgressLine silent(nullptr, "decoded", "sentences");
  silent.update(1, 2);
  silent.finish(2, 1.0); // nothing to write to, nothing written
}

TEST_CASE("progress: on a terminal, the count is rewritten in place") {
  const int master = posix_openpt(O_RDWR | O_NOCTTY);
  if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0) {
    if (master >= 0) close(master);
    SKIP_TEST("no pseudo-terminal here (posix_openpt)");
    return;
  }
  std::FILE* terminal = std::fopen(ptsname(master), "w");
  REQUIRE(terminal != nullptr);
  {
    ProgressLine line(terminal, "decoded", "sentences", std::chrono::seconds(0));
    line.update(1, 2);
    line.update(2, 2);
    line.finish(2, 2.0);
  }
  std::fclose(terminal);
  std::string seen;
  char buf[256];
  for (ssize_t n; (n = read(master, buf, sizeof buf)) > 0;) {
    seen.append(buf, static_cast<size_t>(n));
    if (seen.find("/s)") != std::string::npos) break;
  }
  close(master);
  // The terminal turns "\n" into "\r\n" on its way out (ONLCR).
  CHECK(seen == "\rdecoded 1/2 sentences\rdecoded 2/2 sentences\rdecoded 2/2 sentences (1.0 sentences/s)\r\n");
}
