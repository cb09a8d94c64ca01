// The dataset layer: .xz decoding, line/escape helpers, the registry table's own consistency, file
// resolution (cache / mirror / missing / checksum mismatch), every dataset of the offline mirror
// loaded with the registry's counts, and `data import`.
//
// Every test points PILLARS_CACHE at a fresh temporary folder and sets PILLARS_OFFLINE=1, so the
// user's cache is never touched and nothing is ever downloaded. The mirror tests need
// PILLARS_DATA (`.ci/run` sets it); without it they print why they skip.
#include <doctest/doctest.h>

#include "skip.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>
#include <mutex>

#include "datasets/cache.h"
#include "datasets/import.h"
#include "datasets/lines.h"
#include "datasets/registry.h"
#include "datasets/resolve.h"
#include "datasets/sha256.h"
#include "datasets/subprocess.h"
#include "datasets/xz.h"
#include "base/error.h"

using namespace pillars;
using namespace pillars::data;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  // `base`: where to create it (the system temp folder by default).
  explicit TempDir(const fs::path& base = fs::temp_directory_path()) {
    std::random_device rd;
    path = base / ("pillars_datasets_" + std::to_string(::getpid()) + "_" + std::to_string(rd()));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

// Sets an environment variable for the scope ("" unsets it), restoring the old value after.
struct ScopedEnv {
  std::string name;
  bool had = false;
  std::string old;
  ScopedEnv(std::string n, const std::string& value) : name(std::move(n)) {
    if (const char* v = std::getenv(name.c_str())) had = true, old = v;
    if (value.empty())
      ::unsetenv(name.c_str());
    else
      ::setenv(name.c_str(), value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (had)
      ::setenv(name.c_str(), old.c_str(), 1);
    else
      ::unsetenv(name.c_str());
  }
};

// The cache's files are fsync'ed as they are installed, which on a busy VM disk costs more than
// decompressing them; a RAM-backed folder, where there is one with room for the mirror's fields
// (about 90 MB; containers often give /dev/shm only 64 MB), keeps the suite quick.
fs::path fast_temp_base() {
  std::error_code ec;
  const fs::space_info space = fs::space("/dev/shm", ec);
  const bool roomy = !ec && space.available > (512ull << 20);
  return roomy && ::access("/dev/shm", W_OK) == 0 ? fs::path("/dev/shm") : fs::temp_directory_path();
}

// A private cache, no downloads, and the given mirror ("" = none).
struct Sandbox {
  TempDir cache{fast_temp_base()};
  ScopedEnv env_cache, env_offline, env_data;
  explicit Sandbox(const std::string& mirror)
      : env_cache("PILLARS_CACHE", cache.path.string()),
        env_offline("PILLARS_OFFLINE", "1"),
        env_data("PILLARS_DATA", mirror) {}
};

std::string real_mirror() {
  const char* v = std::getenv("PILLARS_DATA");
  return v && *v && fs::is_directory(v) ? std::string(v) : std::string();
}

void write_file(const std::string& path, const std::string& bytes) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string decompress(const std::string& path) {
  std::string out;
  xz_decompress_file(path, [&](const char* p, size_t n) { out.append(p, n); });
  return out;
}

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

} // namespace

// ---- xz ------------------------------------------------------------------------------------------

TEST_CASE("xz round trip and corrupt files") {
  if (find_program("xz").empty()) {
    SKIP_TEST("the xz round trip: the xz program is not installed");
    return;
  }
  TempDir dir;
  std::string text;
  for (int i = 0; i < 20000; ++i) text += "line " + std::to_string(i * 7919 % 10007) + "\n"; // > 1 MiB output chunk
  write_file(dir / "a.txt", text);
  REQUIRE(run_program({"xz", "-k", "-6", dir / "a.txt"}) == 0);
  CHECK(decompress(dir / "a.txt.xz") == text);

  // two streams back to back decode as their concatenation, as `xz -d` does
  write_file(dir / "b.txt", "tail\n");
  REQUIRE(run_program({"xz", "-k", dir / "b.txt"}) == 0);
  write_file(dir / "ab.xz", read_file(dir / "a.txt.xz") + read_file(dir / "b.txt.xz"));
  CHECK(decompress(dir / "ab.xz") == text + "tail\n");

  const std::string good = read_file(dir / "a.txt.xz");
  std::string flipped = good;
  flipped[flipped.size() / 2] ^= 0x55;
  write_file(dir / "flipped.xz", flipped);
  write_file(dir / "truncated.xz", good.substr(0, good.size() - 20));
  write_file(dir / "notxz.xz", "this is plain text, not xz\n");
  write_file(dir / "empty.xz", "");
  for (const char* name : {"flipped.xz", "truncated.xz", "notxz.xz", "empty.xz"}) {
    const std::string msg = error_of([&] { decompress(dir / name); });
    CHECK_MESSAGE(contains(msg, dir / name), msg); // every message names the file
  }
  CHECK_THROWS_AS(decompress(dir / "flipped.xz"), InputError);
  CHECK(contains(error_of([&] { decompress(dir / "notxz.xz"); }), "not an .xz file"));
  CHECK(contains(error_of([&] { decompress(dir / "truncated.xz"); }), "truncated"));
  CHECK(contains(error_of([&] { decompress(dir / "missing.xz"); }), "cannot open"));
}

TEST_CASE("xz compression: the xz program reads what xz_compress writes, byte for byte") {
  if (find_program("xz").empty()) {
    SKIP_TEST("xz compression: the xz program is not installed");
    return;
  }
  TempDir dir;
  std::string text;
  for (int i = 0; i < 30000; ++i) text += "{\"update\": " + std::to_string(i * 7919 % 10007) + "}\n";
  const std::string packed = xz_compress(text);
  CHECK(packed.size() < text.size() / 4); // repetitive text compresses well
  write_file(dir / "c.jsonl.xz", packed);
  REQUIRE(run_program({"xz", "-d", "-k", dir / "c.jsonl.xz"}) == 0); // the independent decoder
  CHECK(read_file(dir / "c.jsonl") == text);
  CHECK(xz_read_file(dir / "c.jsonl.xz") == text);
  // The empty input and bytes that do not compress round-trip too.
  write_file(dir / "empty.xz", xz_compress(""));
  CHECK(xz_read_file(dir / "empty.xz").empty());
  std::string noise(70000, '\0');
  uint32_t x = 12345;
  for (char& ch : noise) ch = static_cast<char>((x = x * 1664525u + 1013904223u) >> 24);
  write_file(dir / "noise.xz", xz_compress(noise));
  CHECK(xz_read_file(dir / "noise.xz") == noise);
}

// ---- lines and escapes -----------------------------------------------------------------------------

TEST_CASE("line splitting, split selections and the plain escapes") {
  CHECK(split_lines("a\nb\n") == std::vector<std::string_view>{"a", "b"});
  CHECK(split_lines("a\n\nb") == std::vector<std::string_view>{"a", "", "b"});
  CHECK(split_lines("").empty());

  Selection mod;
  mod.kind = Selection::Kind::modulo, mod.modulus = 3, mod.residues = {1};
  CHECK(select_lines("0\n1\n2\n3\n4\n", mod) == std::vector<std::string_view>{"1", "4"});

  // 10 lines of 10 bytes: cuts at 45% and 55% move forward to the next line starts (50, 60)
  std::string text;
  for (int i = 0; i < 10; ++i) text += "line " + std::to_string(i) + "...\n";
  Selection range;
  range.kind = Selection::Kind::byte_range, range.begin_percent = 45, range.end_percent = 55;
  CHECK(select_lines(text, range) == std::vector<std::string_view>{"line 5..."});
  range.begin_percent = 0, range.end_percent = 50; // a cut exactly at a line start stays there
  CHECK(select_lines(text, range).size() == 5);

  const std::string raw = "a\\b\tc\r\nd\n";
  CHECK(escape_field(raw) == "a\\\\b\\tc\\r\\nd\\n");
  CHECK(unescape_field(escape_field(raw), "x") == raw);
  const std::string msg = error_of([] { unescape_field("bad \\x escape", "samsum/plain/x (train example 3)"); });
  CHECK(contains(msg, "samsum/plain/x (train example 3)"));
  CHECK_THROWS_AS(unescape_field("ends with \\", "x"), InputError);
}

// ---- the registry table ----------------------------------------------------------------------------

TEST_CASE("registry table is self-consistent") {
  std::set<std::string> names;
  for (const DatasetSpec& d : builtin_datasets()) {
    CAPTURE(d.name);
    CHECK(names.insert(d.name).second);
    CHECK(!d.sources.empty());
    CHECK(!d.license.empty());
    std::set<std::string> paths;
    for (const FileSpec& f : d.files) {
      CHECK(paths.insert(f.path).second);
      CHECK(f.sha256.size() == 64);
      CHECK(f.sha256.find_first_not_of("0123456789abcdef") == std::string::npos);
      CHECK(f.bytes > 0);
    }
    for (const std::string* def : {&d.train, &d.valid, &d.test})
      if (!def->empty()) CHECK_NOTHROW(d.split(*def));
    for (const SplitSpec& s : d.splits) {
      CAPTURE(s.name);
      CHECK(s.examples > 0);
      std::set<std::string> fields;
      for (const NamedFile& f : s.fields) {
        CHECK(fields.insert(f.name).second);
        REQUIRE_NOTHROW(d.file(f.file));
        // a whole-file split has exactly one example per line of each of its files
        if (s.select.kind == Selection::Kind::all) CHECK(d.file(f.file).lines == s.examples);
      }
      if (d.task == Task::translation) CHECK(fields.size() >= 2);
      if (d.task == Task::language_modeling) CHECK(fields.count("text"));
      if (d.task == Task::summarization) CHECK((fields.count("source") && fields.count("summary")));
    }
    for (const NamedFile& a : d.assets) CHECK_NOTHROW(d.file(a.file));
  }
  CHECK(names.size() == 12);
  // the non-official splits partition their files
  const DatasetSpec& bbc = find_dataset("bbc-news-summary");
  CHECK(bbc.split("train").examples + bbc.split("valid").examples + bbc.split("test").examples == 2225);
  const DatasetSpec& shakespeare = find_dataset("tinyshakespeare");
  CHECK(shakespeare.split("train").examples + shakespeare.split("valid").examples +
            shakespeare.split("test").examples ==
        40000);
}

TEST_CASE("unknown dataset, split or field names the nearest valid one") {
  Sandbox box("");
  std::string msg = error_of([] { find_dataset("wikitext2"); });
  CHECK(contains(msg, "did you mean \"wikitext-2\""));
  CHECK(contains(msg, "multi30k-de-en")); // the valid names are listed
  CHECK_THROWS_AS(find_dataset("nope"), InputError);

  msg = error_of([] { read_field("multi30k-de-en", "valid", "de"); });
  CHECK(contains(msg, "unknown split \"valid\""));
  CHECK(contains(msg, "did you mean \"val\""));
  CHECK(contains(msg, "test_2017_mscoco"));

  msg = error_of([] { read_field("multi30k-de-en", "train", "de_tok"); });
  CHECK(contains(msg, "did you mean \"de.tok\""));
  CHECK_THROWS_AS(read_field("samsum", "train", "dialogue"), InputError);

  msg = error_of([] { read_field("iwslt14-de-en", "train", "de"); }); // the split the mirror lacks
  CHECK(contains(msg, "train-sample"));
  CHECK(contains(msg, "pillars data import"));

  CHECK(contains(error_of([] { find_dataset("iwslt14-de-en").asset("codes"); }), "bpe.codes"));
  CHECK_THROWS_AS(find_dataset("../etc"), InputError); // never looked up as a cache folder
}

// ---- resolution -----------------------------------------------------------------------------------

TEST_CASE("a missing file is an InputError that says where it looked and what to do") {
  Sandbox box("");
  std::string msg = error_of([] { read_field("ptb", "test", "text"); });
  CHECK(contains(msg, "ptb/ptb.test.txt is not available"));
  CHECK(contains(msg, "PILLARS_DATA is not set"));
  CHECK(contains(msg, "PILLARS_OFFLINE")); // it has a URL, but downloads are off here
  CHECK(contains(msg, box.cache.path.string()));
  CHECK_THROWS_AS(read_field("ptb", "test", "text"), InputError);
  CHECK(!is_present("ptb"));

  msg = error_of([] { read_field("sotu", "train", "text"); });
  CHECK(contains(msg, "pillars data prepare sotu"));
  msg = error_of([] { resolve_file("aeslc", "plain/train.email"); });
  CHECK(contains(msg, "it has no download URL"));
}

TEST_CASE("a checksum mismatch in the mirror is an error, never a fallback") {
  TempDir mirror;
  Sandbox box(mirror.path.string());
  // A fake mirror whose ptb.valid.txt is not the registered file (stored plain, not .xz).
  const FileSpec& f = find_dataset("ptb").file("ptb.valid.txt");
  write_file(mirror / "ptb/ptb.valid.txt", " a modified file \n");
  const std::string msg = error_of([] { resolve_file("ptb", "ptb.valid.txt"); });
  CHECK(contains(msg, "checksum mismatch"));
  CHECK(contains(msg, f.sha256));                          // expected
  CHECK(contains(msg, sha256_hex(" a modified file \n"))); // actual
  CHECK(contains(msg, mirror / "ptb/ptb.valid.txt"));      // where it came from
  CHECK_THROWS_AS(resolve_file("ptb", "ptb.valid.txt"), Error);
  CHECK(!fs::exists(cache_path("ptb", "ptb.valid.txt"))); // nothing was installed
  CHECK(is_present("ptb") == false);                      // train and test are not in this mirror at all
}

TEST_CASE("the download path verifies what curl fetched") {
  if (find_program("curl").empty() || find_program("gzip").empty()) {
    SKIP_TEST("the download path: curl or gzip is not installed");
    return;
  }
  // file:// URLs exercise the real code path (curl, gunzip, verify, install) without a network.
  Sandbox box("");
  ScopedEnv online("PILLARS_OFFLINE", "");
  TempDir server;
  const std::string text = "hello\nworld\n";
  write_file(server / "a.txt", text);
  write_file(server / "b.txt", text);
  REQUIRE(run_program({"gzip", "-9", server / "b.txt"}) == 0);
  DatasetSpec d;
  d.name = "download-test";
  d.files = {{"a.txt", text.size(), 2, sha256_hex(text), "file://" + (server / "a.txt")},
             {"b.txt", text.size(), 2, sha256_hex(text), "file://" + (server / "b.txt.gz")},
             {"c.txt", text.size(), 2, sha256_hex("something else"), "file://" + (server / "a.txt")},
             {"d.txt", text.size(), 2, sha256_hex(text), "file://" + (server / "missing.txt")}};
  CHECK(availability(d, d.files[0]) == Availability::download);
  Materialized m = materialize(d, d.files[0]);
  CHECK(m.source == FileSource::download);
  CHECK(read_file(m.path) == text);
  CHECK(materialize(d, d.files[0]).source == FileSource::cache);
  CHECK(read_file(materialize(d, d.files[1]).path) == text); // served gzipped, stored plain
  std::string msg = error_of([&] { materialize(d, d.files[2]); });
  CHECK(contains(msg, "checksum mismatch"));
  CHECK(contains(msg, d.files[2].url));
  CHECK(!fs::exists(cache_path(d.name, "c.txt")));
  msg = error_of([&] { materialize(d, d.files[3]); });
  CHECK(contains(msg, "downloading download-test/d.txt failed"));
  CHECK_THROWS_AS(materialize(d, d.files[3]), Error);
}

TEST_CASE("mirror files are verified into the cache, stamped, and re-verified when changed") {
  const std::string mirror = real_mirror();
  if (mirror.empty()) {
    SKIP_TEST("the cache tests on the real mirror: PILLARS_DATA is not set");
    return;
  }
  Sandbox box(mirror);
  const FileSpec& f = find_dataset("ptb").file("ptb.valid.txt");
  const DatasetSpec& ptb = find_dataset("ptb");
  CHECK(availability(ptb, f) == Availability::mirror);
  Materialized m = materialize(ptb, f);
  CHECK(m.source == FileSource::mirror);
  CHECK(m.path == cache_path("ptb", "ptb.valid.txt"));
  CHECK(fs::exists(m.path + ".sha256-ok"));
  CHECK(materialize(ptb, f).source == FileSource::cache);
  CHECK(is_present("ptb"));

  // Damage the cached copy: the stamp no longer matches, the rehash fails, the mirror replaces it.
  std::string bytes = read_file(m.path);
  bytes[10] = bytes[10] == 'x' ? 'y' : 'x';
  write_file(m.path, bytes);
  m = materialize(ptb, f);
  CHECK(m.source == FileSource::mirror);
  CHECK(sha256_file(m.path) == f.sha256);

  // Without a mirror, a damaged cache copy is an error naming both hashes.
  write_file(m.path, bytes);
  ScopedEnv no_mirror("PILLARS_DATA", "");
  const std::string msg = error_of([&] { materialize(ptb, f); });
  CHECK(contains(msg, "damaged"));
  CHECK(contains(msg, f.sha256));
}

TEST_CASE("every dataset in the mirror loads with the registry's counts") {
  const std::string mirror = real_mirror();
  if (mirror.empty()) {
    SKIP_TEST("the mirror datasets: PILLARS_DATA is not set");
    return;
  }
  Sandbox box(mirror);
  const auto t0 = std::chrono::steady_clock::now();
  // Decompress + verify the field files on two threads first (xz decoding is most of the time);
  // the reads below then come from the cache through their stamps.
  std::vector<std::pair<const DatasetSpec*, const FileSpec*>> work;
  for (const DatasetSpec& d : builtin_datasets())
    if (d.origin == Origin::mirror && fs::is_directory(mirror + "/" + d.name))
      for (const SplitSpec& s : d.splits)
        for (const NamedFile& f : s.fields) work.emplace_back(&d, &d.file(f.file));
  std::sort(work.begin(), work.end());
  work.erase(std::unique(work.begin(), work.end()), work.end());
  std::atomic<size_t> next{0};
  std::mutex error_mutex;
  std::string first_error;
  auto worker = [&] {
    for (size_t i; (i = next++) < work.size();) {
      try {
        materialize(*work[i].first, *work[i].second);
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (first_error.empty()) first_error = e.what();
      }
    }
  };
  std::thread helper(worker);
  worker();
  helper.join();
  REQUIRE_MESSAGE(first_error.empty(), first_error);
  size_t datasets = 0, fields = 0, lines = 0;
  for (const DatasetSpec& d : builtin_datasets()) {
    if (d.origin != Origin::mirror || !fs::is_directory(mirror + "/" + d.name)) continue;
    CAPTURE(d.name);
    ++datasets;
    CHECK(is_present(d.name));
    for (const SplitSpec& s : d.splits) {
      CAPTURE(s.name);
      std::map<std::string, std::vector<std::string>> values;
      for (const NamedFile& f : s.fields) {
        values[f.name] = read_field(d.name, s.name, f.name);
        CHECK(values[f.name].size() == s.examples);
        ++fields, lines += values[f.name].size();
      }
      if (d.task == Task::translation) { // aligned pairs: same count, and no side empty where the other is not
        const auto& [first_name, first] = *values.begin();
        for (const auto& [name, v] : values) {
          REQUIRE(v.size() == first.size());
          size_t one_sided = 0;
          for (size_t i = 0; i < v.size(); ++i) one_sided += v[i].empty() != first[i].empty();
          CHECK_MESSAGE(one_sided == 0, name << " vs " << first_name);
        }
      }
    }
  }
  MESSAGE("mirror: " << datasets << " datasets, " << fields << " fields, " << lines << " lines in "
                     << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s");
  if (datasets == 0) return;

  // Spot checks against the PROVENANCE files: first lines, unescaping, the defined splits.
  CHECK(read_field("iwslt14-de-en", "valid", "de")[0] == "es ist diese pyramide .");
  CHECK(read_field("iwslt14-de-en", "valid", "en")[0] == "it &apos;s that pyramid .");
  size_t bpe_lines = 0; // the .bpe fields carry subword-nmt's continuation markers
  for (const std::string& line : read_field("iwslt14-de-en", "valid", "de.bpe")) bpe_lines += contains(line, "@@ ");
  CHECK(bpe_lines > 1000);
  const auto samsum = read_field("samsum", "train", "source");
  CHECK(contains(samsum[0], "\n")); // turns are separated by real line breaks after unescaping
  CHECK(!contains(samsum[0], "\\n"));
  const auto ids = read_field("samsum", "train", "id");
  size_t empty_dialogues = 0;
  for (size_t i = 0; i < samsum.size(); ++i)
    if (samsum[i].empty()) {
      CHECK(ids[i] == "13828807");
      ++empty_dialogues;
    }
  CHECK(empty_dialogues == 1);
  const auto shakespeare_train = read_field("tinyshakespeare", "train", "text");
  CHECK(shakespeare_train[0] == "First Citizen:");
  std::string joined;
  for (const char* s : {"train", "valid", "test"})
    for (const std::string& line : read_field("tinyshakespeare", s, "text")) joined += line + "\n";
  CHECK(joined.size() == 1115394);
  CHECK(sha256_hex(joined) == find_dataset("tinyshakespeare").file("input.txt").sha256);
  const std::vector<std::string> all_ids = [] {
    std::vector<std::string> v;
    // split_lines returns views into its argument: keep the file's text alive for the loop.
    const std::string text = read_file(resolve_file("bbc-news-summary", "ids.txt"));
    for (std::string_view l : split_lines(text)) v.emplace_back(l);
    return v;
  }();
  CHECK(read_field("bbc-news-summary", "valid", "id")[0] == all_ids[8]);
  CHECK(read_field("bbc-news-summary", "test", "id")[1] == all_ids[19]);
  CHECK(read_field("aeslc", "dev", "summary2").size() == 1960);
  CHECK(read_field("dialogsum", "test", "summary3").size() == 500);
}

// ---- import ---------------------------------------------------------------------------------------

TEST_CASE("data import round trip") {
  Sandbox box("");
  TempDir src;
  write_file(src / "train.de", "ein haus .\nzwei katzen .\ndrei hunde .\n");
  write_file(src / "train.en", "a house .\ntwo cats .\nthree dogs .\n");
  write_file(src / "valid.de", "vier\n");
  write_file(src / "valid.en", "four\n");
  write_file(src / "test.de", "fünf\nsechs"); // no final newline: still two lines
  write_file(src / "test.en", "five\nsix\n");
  write_file(src / "code", "#version: 0.2\ne n\n");
  write_file(src / "dict.de.txt", "ignored 1\n"); // not <split>.<lang>
  write_file(src / "tmp/train.de", "one-sided intermediate file\n");

  const auto quiet = [](const std::string&) {};
  ImportOptions opt{src.path.string(), "my-corpus", "de", "en"};
  const DatasetSpec spec = import_translation(opt, quiet);
  CHECK(spec.splits.size() == 3);
  CHECK(spec.train == "train");
  CHECK(read_field("my-corpus", "train", "de") ==
        std::vector<std::string>{"ein haus .", "zwei katzen .", "drei hunde ."});
  CHECK(read_field("my-corpus", "train", "en")[2] == "three dogs .");
  CHECK(read_field("my-corpus", "test", "de") == std::vector<std::string>{"fünf", "sechs"});
  CHECK(read_file(resolve_file("my-corpus", find_dataset("my-corpus").asset("bpe.codes"))) == "#version: 0.2\ne n\n");
  const std::vector<std::string> names = dataset_names();
  CHECK(std::find(names.begin(), names.end(), "my-corpus") != names.end());
  CHECK(find_dataset("my-corpus").origin == Origin::imported);
  CHECK(is_present("my-corpus"));

  // The copy is independent of the source folder, and verified like any other file.
  write_file(src / "train.de", "changed\n");
  CHECK(read_field("my-corpus", "train", "de").size() == 3);
  write_file(cache_path("my-corpus", "train.en"), "tampered\nwith\nthis\n");
  const std::string msg = error_of([] { read_field("my-corpus", "train", "en"); });
  CHECK(contains(msg, "damaged"));
  CHECK(contains(msg, "pillars data import"));

  // Again under the same name: refused without --force, accepted with it.
  CHECK_THROWS_AS(import_translation(opt, quiet), InputError);
  opt.force = true;
  write_file(src / "train.de", "ein haus .\nzwei katzen .\ndrei hunde .\n");
  CHECK_NOTHROW(import_translation(opt, quiet));
  CHECK(read_field("my-corpus", "train", "en")[0] == "a house .");

  // BPE'd text becomes "<lang>.bpe"; tmp/ (fairseq's pre-BPE text) supplies "<lang>".
  TempDir fairseq;
  write_file(fairseq / "train.de", "ein ha@@ us .\n");
  write_file(fairseq / "train.en", "a ho@@ use .\n");
  write_file(fairseq / "tmp/train.de", "ein haus .\n");
  write_file(fairseq / "tmp/train.en", "a house .\n");
  CHECK_NOTHROW(import_translation({fairseq.path.string(), "fs", "de", "en"}, quiet));
  CHECK(read_field("fs", "train", "de.bpe")[0] == "ein ha@@ us .");
  CHECK(read_field("fs", "train", "de")[0] == "ein haus .");

  // Plain text at the top level and in tmp/: the top level wins, tmp/ is skipped for that split.
  TempDir both;
  write_file(both / "train.de", "oben\n");
  write_file(both / "train.en", "top\n");
  write_file(both / "tmp/train.de", "unten\n");
  write_file(both / "tmp/train.en", "below\n");
  CHECK_NOTHROW(import_translation({both.path.string(), "both", "de", "en"}, quiet));
  CHECK(read_field("both", "train", "de")[0] == "oben");
  CHECK(find_dataset("both").files.size() == 2);
}

TEST_CASE("data import recognizes files identical to the registry's") {
  const std::string mirror = real_mirror();
  if (mirror.empty()) {
    SKIP_TEST("import recognition: PILLARS_DATA is not set");
    return;
  }
  Sandbox box(mirror);
  TempDir src;
  for (const char* lang : {"de", "en"}) // the mirror's IWSLT'14 test set, imported as a user's own
    fs::copy_file(resolve_file("iwslt14-de-en", std::string("test.") + lang), src / (std::string("test.") + lang));
  std::vector<std::string> lines;
  const DatasetSpec spec =
      import_translation({src.path.string(), "mine", "de", "en"}, [&](const std::string& l) { lines.push_back(l); });
  CHECK(contains(spec.notes, "test.de: identical to iwslt14-de-en/test.de"));
  CHECK(contains(find_dataset("mine").notes, "test.en: identical to iwslt14-de-en/test.en"));
  CHECK(read_field("mine", "test", "en") == read_field("iwslt14-de-en", "test", "en"));
  CHECK(spec.train.empty()); // no train split in this import
}

TEST_CASE("data import rejects bad input and leaves nothing behind") {
  Sandbox box("");
  TempDir src;
  const auto quiet = [](const std::string&) {};
  write_file(src / "train.de", "a\nb\n");
  write_file(src / "train.en", "a\n");
  std::string msg = error_of([&] { import_translation({src.path.string(), "bad", "de", "en"}, quiet); });
  CHECK(contains(msg, "not line-aligned"));
  CHECK(!fs::exists(box.cache / "bad"));
  CHECK_THROWS_AS(find_dataset("bad"), InputError);

  write_file(src / "train.en", "a\nb\n");
  write_file(src / "valid.de", "x\n"); // no valid.en
  msg = error_of([&] { import_translation({src.path.string(), "bad", "de", "en"}, quiet); });
  CHECK(contains(msg, "no partner valid.en"));

  CHECK_THROWS_AS(import_translation({src.path.string(), "ptb", "de", "en"}, quiet), InputError);  // built-in name
  CHECK_THROWS_AS(import_translation({src.path.string(), "../x", "de", "en"}, quiet), InputError); // not a plain name
  CHECK_THROWS_AS(import_translation({src.path.string(), "ok", "de", "de"}, quiet), InputError);   // same language
  CHECK_THROWS_AS(import_translation({src / "nope", "ok", "de", "en"}, quiet), InputError);        // no such folder
  CHECK(contains(error_of([&] {
                   import_translation({src.path.string(), "ok", "fr", "en"}, quiet);
                 }),
                 "no partner train.fr"));
}
