// Builds "debian-synopsis" (package description -> synopsis) from the Debian 12 archive with apt.
//
// apt-get fetches the English description index (Translation-en) and the amd64 Packages index of
// `deb http://deb.debian.org/debian bookworm main` (or $PILLARS_DEBIAN_MIRROR instead of that URL)
// into a private lists folder (the system's apt state is untouched); apt-helper decompresses them. A Translation-en record is
//   Package: 0ad
//   Description-md5: d943…
//   Description-en: Real-time strategy game of ancient warfare      <- the synopsis (summary)
//    0 A.D. (pronounced "zero ey-dee") is a free, open-source, …   <- the long description (source)
//    .                                                              <- a paragraph break
// Source text: the continuation lines without their first space, " ." lines as empty lines, joined
// with '\n' (so verbatim lines, which Debian marks with two leading spaces, keep their layout).
// Records without a long description and exact (source, summary) duplicates are dropped (first kept,
// in package-name order). Split by source package, because sibling binary packages share text: the
// Source: field of the Packages index (else the package name), md5 of that name as an integer
// mod 100: 0-4 test, 5-9 valid, else train. Fields are escaped like the mirror's plain/ files.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "datasets/lines.h"
#include "datasets/md5.h"
#include "datasets/prepare.h"
#include "datasets/sha256.h"
#include "datasets/subprocess.h"
#include "base/error.h"

namespace pillars::data {

namespace fs = std::filesystem;

namespace {

// PILLARS_DEBIAN_MIRROR may name another mirror of the same archive (e.g. a local one).
constexpr const char* kDefaultMirror = "http://deb.debian.org/debian";
constexpr const char* kAptHelper = "/usr/lib/apt/apt-helper";
// The inputs the registry's frozen files were built from (Debian 12.15, InRelease of 2026-07-11).
// A different hash is reported; only the output checksums decide whether prepare succeeds.
constexpr const char* kTranslationSha256 = "62f59c3cdca9786e4f7adf9002f9f5729a684adcb4667e58e448dec9b5a46c7f";
constexpr const char* kPackagesSha256 = "515e692f2c4121c6fcec444ef100cc18f79a991910615f3a88c8b7becfc94d2f";

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

// The list file whose name contains `marker` (apt names them after the URL), decompressed.
std::string cat_index(const std::string& lists, const std::string& marker, const std::string& dest) {
  for (const auto& entry : fs::directory_iterator(lists)) {
    const std::string name = entry.path().filename().string();
    if (name.find(marker) == std::string::npos) continue;
    const std::vector<std::string> cat = {kAptHelper, "cat-file", entry.path().string()};
    if (const int rc = run_program(cat, dest); rc != 0)
      throw Error(str_cat("prepare debian-synopsis: `", command_line(cat), "` failed (exit ", rc, ")"));
    return read_all(dest);
  }
  throw Error(str_cat("prepare debian-synopsis: apt-get update fetched no *", marker,
                      "* index (offline, or the Debian mirror unreachable? apt's messages are above)"));
}

std::string field_value(std::string_view line, size_t colon) {
  std::string_view v = line.substr(colon + 1);
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t' || v.back() == '\r')) v.remove_suffix(1);
  return std::string(v);
}

// Package -> source package name, from a Packages index.
std::map<std::string, std::string> source_names(const std::string& packages) {
  std::map<std::string, std::string> source;
  std::string package;
  for (std::string_view line : split_lines(packages)) {
    if (line.rfind("Package:", 0) == 0) {
      package = field_value(line, 7);
      source.emplace(package, package);
    } else if (line.rfind("Source:", 0) == 0 && !package.empty()) {
      std::string s = field_value(line, 6); // "Source: name (version)" when versions differ
      source[package] = s.substr(0, s.find(' '));
    }
  }
  return source;
}

struct Pair {
  std::string package, summary, source_text;
};

std::vector<Pair> description_pairs(const std::string& translation) {
  std::vector<Pair> pairs;
  Pair cur;
  bool in_description = false;
  size_t continuation_lines = 0; // of the current Description-en
  auto finish = [&] {
    if (!cur.package.empty() && !cur.summary.empty() && !cur.source_text.empty()) pairs.push_back(cur);
    cur = Pair{};
    in_description = false;
    continuation_lines = 0;
  };
  for (std::string_view line : split_lines(translation)) {
    if (line.empty()) {
      finish();
    } else if (line[0] == ' ' || line[0] == '\t') {
      if (!in_description) continue;
      const std::string_view text = line.substr(1);
      if (continuation_lines++ > 0) cur.source_text += '\n';
      if (text != ".") cur.source_text += text;
    } else {
      const size_t colon = line.find(':');
      const std::string_view key = line.substr(0, colon);
      in_description = key == "Description-en";
      if (key == "Package")
        cur.package = field_value(line, colon);
      else if (in_description)
        cur.summary = field_value(line, colon);
    }
  }
  finish();
  return pairs;
}

} // namespace

void build_debian_synopsis(const std::string& work, const std::string& out, const Progress& progress) {
  if (find_program("apt-get").empty() || !fs::exists(kAptHelper))
    throw Error("prepare debian-synopsis: needs apt-get and /usr/lib/apt/apt-helper (a Debian or Ubuntu system)");
  const std::string lists = work + "/lists", parts = work + "/sources.list.d";
  fs::create_directories(lists + "/partial");
  fs::create_directories(parts);
  fs::create_directories(work + "/cache/archives/partial");
  const char* mirror_env = std::getenv("PILLARS_DEBIAN_MIRROR");
  const std::string sources_line =
      str_cat("deb ", mirror_env && *mirror_env ? mirror_env : kDefaultMirror, " bookworm main");
  std::ofstream(work + "/sources.list") << sources_line << '\n';

  // Private lists/cache/sources: the system's apt state is neither read nor changed. Sandbox user
  // root: the work folder may sit under a home directory the _apt user cannot enter.
  const std::vector<std::string> update = {"apt-get",
                                           "update",
                                           "-q",
                                           "-o",
                                           "Dir::State::Lists=" + lists,
                                           "-o",
                                           "Dir::Etc::SourceList=" + work + "/sources.list",
                                           "-o",
                                           "Dir::Etc::SourceParts=" + parts,
                                           "-o",
                                           "Dir::Cache=" + work + "/cache",
                                           "-o",
                                           "Acquire::Languages=en",
                                           "-o",
                                           "APT::Architectures=amd64",
                                           "-o",
                                           "APT::Architecture=amd64",
                                           "-o",
                                           "APT::Sandbox::User=root",
                                           "-o",
                                           "Debug::NoLocking=true"};
  progress(str_cat("  apt-get update (", sources_line, ", Translation-en + Packages, private lists folder)"));
  if (const int rc = run_program(update); rc != 0)
    throw Error(str_cat("prepare debian-synopsis: `apt-get update` with a private lists folder failed (exit ", rc,
                        "; offline?). apt's messages are above."));

  const std::string translation = cat_index(lists, "_i18n_Translation-en", work + "/Translation-en");
  const std::string packages = cat_index(lists, "_binary-amd64_Packages", work + "/Packages");
  const std::string tsha = sha256_hex(translation), psha = sha256_hex(packages);
  if (tsha != kTranslationSha256 || psha != kPackagesSha256)
    progress(str_cat(
        "  note: the archive's indexes differ from those the registry was frozen with (Debian 12.15): "
        "Translation-en ",
        tsha == kTranslationSha256 ? "same" : "changed", ", Packages ", psha == kPackagesSha256 ? "same" : "changed"));

  const std::map<std::string, std::string> source = source_names(packages);
  std::vector<Pair> pairs = description_pairs(translation);
  std::stable_sort(pairs.begin(), pairs.end(), [](const Pair& a, const Pair& b) { return a.package < b.package; });
  std::set<std::pair<std::string, std::string>> seen;

  const char* splits[3] = {"train", "valid", "test"};
  std::ofstream files[3][3]; // [split][id, source, summary]
  for (int s = 0; s < 3; ++s) {
    files[s][0].open(str_cat(out, "/", splits[s], ".id"), std::ios::binary);
    files[s][1].open(str_cat(out, "/", splits[s], ".source"), std::ios::binary);
    files[s][2].open(str_cat(out, "/", splits[s], ".summary"), std::ios::binary);
  }
  size_t counts[3] = {0, 0, 0}, duplicates = 0;
  for (const Pair& p : pairs) {
    if (!seen.emplace(p.source_text, p.summary).second) {
      ++duplicates;
      continue;
    }
    const auto it = source.find(p.package);
    const std::string& src = it != source.end() ? it->second : p.package;
    const unsigned bucket = md5_mod(src, 100);
    const int s = bucket < 5 ? 2 : bucket < 10 ? 1 : 0;
    files[s][0] << escape_field(p.package) << '\n';
    files[s][1] << escape_field(p.source_text) << '\n';
    files[s][2] << escape_field(p.summary) << '\n';
    ++counts[s];
  }
  for (auto& split_files : files)
    for (auto& f : split_files) {
      f.close();
      if (!f) throw Error(str_cat("prepare debian-synopsis: writing into ", out, " failed"));
    }
  progress(str_cat("  ", pairs.size(), " described packages, ", duplicates, " duplicate pairs dropped: train ",
                   counts[0], ", valid ", counts[1], ", test ", counts[2]));
}

} // namespace pillars::data
