// The token cache (text/token_cache.h): round trip, a miss on every kind of change or damage,
// the stable hash's known values, and the whole prepare flow (tokenize, BPE, dictionary, cache).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "text/bpe.h"
#include "text/dictionary.h"
#include "text/moses.h"
#include "text/token_cache.h"

using namespace pillars;
using namespace pillars::text;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("pillars_token_cache_" + std::to_string(::getpid()));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

TokenizedCorpus sample() {
  TokenizedCorpus c;
  c.add_line(std::vector<int32_t>{5, 6, 7, 2});
  c.add_line(std::vector<int32_t>{});
  c.add_line(std::vector<int32_t>{9, 2});
  return c;
}

} // namespace

TEST_CASE("token cache hash is stable FNV-1a") {
  CHECK(fnv1a64("") == 0xcbf29ce484222325ull); // the published FNV-1a 64 test vectors
  CHECK(fnv1a64("a") == 0xaf63dc4c8601ec8cull);
  CHECK(fnv1a64("foobar") == 0x85944171f73967e8ull);
  CHECK(Hasher().add("ab").add("c").value() != Hasher().add("a").add("bc").value());
  CHECK(Hasher().add("x").add(uint64_t(1)).value() == Hasher().add("x").add(uint64_t(1)).value());
}

TEST_CASE("token cache round trip and misses") {
  TempDir dir;
  std::string path = (dir.path / "train.tok").string();
  CHECK(!load_token_cache(path, 42).has_value()); // no file yet
  TokenizedCorpus c = sample();
  CHECK(c.num_lines() == 3);
  CHECK(c.line(1).empty());
  CHECK(c.line(2)[0] == 9);
  save_token_cache(path, 42, c);
  auto back = load_token_cache(path, 42);
  REQUIRE(back.has_value());
  CHECK(*back == c);
  CHECK(!load_token_cache(path, 43).has_value()); // another key: rebuild

  // Damage of any kind is a miss, never garbage.
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  auto write = [&](const std::string& b) { std::ofstream(path, std::ios::binary | std::ios::trunc) << b; };
  write(bytes.substr(0, bytes.size() - 1)); // truncated
  CHECK(!load_token_cache(path, 42).has_value());
  std::string flipped = bytes;
  flipped[flipped.size() - 2] ^= 1; // one id changed: the checksum catches it
  write(flipped);
  CHECK(!load_token_cache(path, 42).has_value());
  std::string other_version = bytes;
  other_version[8] = 2;
  write(other_version);
  CHECK(!load_token_cache(path, 42).has_value());
  write(bytes);
  CHECK(load_token_cache(path, 42).has_value());

  TokenizedCorpus empty;
  save_token_cache(path, 7, empty);
  auto e = load_token_cache(path, 7);
  REQUIRE(e.has_value());
  CHECK(e->num_lines() == 0);
}

TEST_CASE("token cache keyed prepare flow") {
  TempDir dir;
  const std::vector<std::string> raw = {"Zwei Männer stehen am Herd.", "Ein Hund läuft."};
  const std::string cache = (dir.path / "train.de.bin").string();
  int built = 0;
  // What a `prepare` step does: the key covers the settings, the codes, the dictionary and the
  // input text; a hit skips the work.
  auto prepare = [&](const std::vector<std::string>& lines, const MosesOptions& o) {
    WordCounts counts;
    std::vector<std::string> tok;
    for (const auto& l : lines) {
      tok.push_back(moses_tokenize(l, o));
      count_words(tok.back(), counts);
    }
    BpeCodes codes = learn_bpe(counts, {.num_merges = 20});
    BpeApplier bpe(codes);
    Dictionary dict;
    std::vector<std::string> bped;
    for (const auto& t : tok) {
      bped.push_back(bpe.apply_line(t));
      dict.add_line(bped.back());
    }
    dict.finalize();
    Hasher h;
    h.add("moses")
        .add(o.lang)
        .add(uint64_t(o.lowercase))
        .add(uint64_t(o.normalize_punctuation))
        .add(uint64_t(o.escape));
    h.add(format_bpe_codes(codes)).add(dict.to_text());
    for (const auto& l : lines) h.add(l);
    uint64_t key = h.value();
    if (auto hit = load_token_cache(cache, key)) return *hit;
    ++built;
    TokenizedCorpus corpus;
    for (const auto& b : bped) corpus.add_line(dict.encode_line(b));
    save_token_cache(cache, key, corpus);
    return corpus;
  };
  MosesOptions o;
  o.lang = "de";
  o.lowercase = true;
  TokenizedCorpus first = prepare(raw, o);
  CHECK(built == 1);
  CHECK(prepare(raw, o) == first); // nothing changed: loaded
  CHECK(built == 1);
  o.escape = true; // a setting changed: rebuilt
  prepare(raw, o);
  CHECK(built == 2);
  std::vector<std::string> edited = raw;
  edited[1] += " Schnell!"; // the text changed: rebuilt
  prepare(edited, o);
  CHECK(built == 3);
  CHECK(first.num_lines() == 2);
  CHECK(first.line(0).back() == 2); // </s>
}
