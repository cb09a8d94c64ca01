// fairseq's Dictionary (text/dictionary.h): ids of the special symbols, finalize()'s order, the
// threshold and nwords limits, padding to a multiple of 8, dict.txt save/load, encode and decode.
//
// The tie order was checked against Python itself: Counter(dict(sorted(zip(words, counts))))
// .most_common(n) (what fairseq's finalize runs) on words tied in count gives them in sorted
// order, with or without n; "ä" (U+00E4) sorts after "zeta", "Beta" before "a".
#include <doctest/doctest.h>

#include <filesystem>
#include <unistd.h>

#include "base/error.h"
#include "text/dictionary.h"

using namespace pillars;
using namespace pillars::text;

namespace {

Dictionary tied_dictionary() {
  Dictionary d;
  // counts: Beta 5, mid 3, and zeta alpha beta ä a at 2, added in this order
  for (const char* w : {"zeta", "alpha", "Beta", "beta", "ä", "a", "mid"}) d.add_symbol(w, 2);
  d.add_symbol("Beta", 3);
  d.add_symbol("mid", 1);
  return d;
}

} // namespace

TEST_CASE("dictionary special symbols and finalize order") {
  Dictionary d = tied_dictionary();
  CHECK(d.symbol(0) == "<s>");
  CHECK(d.symbol(1) == "<pad>");
  CHECK(d.symbol(2) == "</s>");
  CHECK(d.symbol(3) == "<unk>");
  d.finalize();
  // 4 specials + 7 words = 11, padded to 16 with madeupword0000..0004 (count 0)
  REQUIRE(d.size() == 16);
  const std::vector<std::string> order = {"<s>",
                                          "<pad>",
                                          "</s>",
                                          "<unk>",
                                          "Beta",
                                          "mid",
                                          "a",
                                          "alpha",
                                          "beta",
                                          "zeta",
                                          "ä",
                                          "madeupword0000",
                                          "madeupword0001",
                                          "madeupword0002",
                                          "madeupword0003",
                                          "madeupword0004"};
  for (size_t i = 0; i < order.size(); ++i) CHECK(d.symbol(int32_t(i)) == order[i]);
  CHECK(d.count(d.index("Beta")) == 5);
  CHECK(d.count(d.index("madeupword0002")) == 0);
  CHECK(d.to_text().starts_with("Beta 5\nmid 3\na 2\nalpha 2\n"));
  CHECK(d.to_text().ends_with(
      "ä 2\nmadeupword0000 0\nmadeupword0001 0\nmadeupword0002 0\nmadeupword0003 0\nmadeupword0004 0\n"));
}

TEST_CASE("dictionary threshold, nwords and padding factor") {
  Dictionary a = tied_dictionary();
  a.finalize(/*threshold=*/3, -1, /*padding_factor=*/1);
  CHECK(a.size() == 6); // specials + Beta + mid
  CHECK(a.symbol(5) == "mid");

  Dictionary b = tied_dictionary();
  b.finalize(-1, /*nwords=*/7, 8); // 7 symbols in all: specials + Beta, mid, a; then padded to 8
  CHECK(b.size() == 8);
  CHECK(b.symbol(6) == "a");
  CHECK(b.symbol(7) == "madeupword0000");

  Dictionary c; // a word that is already called madeupword0000 just gets count 0 added
  c.add_symbol("madeupword0000", 4);
  c.finalize();
  CHECK(c.size() == 8);
  CHECK(c.symbol(4) == "madeupword0000");
  CHECK(c.count(4) == 4);
  CHECK(c.symbol(5) == "madeupword0001");
  CHECK(c.symbol(7) == "madeupword0003");
}

TEST_CASE("dictionary from lines, encode_line and decode") {
  Dictionary d;
  d.add_line("es ist diese pyrami@@ de .");
  d.add_line("es ist  gut .\t");
  d.finalize();
  // es 2, ist 2, . 2, then de diese gut pyrami@@ at 1: sorted "." < "es" < "ist"
  CHECK(d.symbol(4) == ".");
  CHECK(d.symbol(5) == "es");
  CHECK(d.symbol(6) == "ist");
  CHECK(d.symbol(7) == "de");
  CHECK(d.count(d.eos()) == 3); // 1 at creation + one per line, as fairseq counts it
  std::vector<int32_t> ids = d.encode_line("es ist\u00a0unbekannt .");
  CHECK(ids == std::vector<int32_t>{5, 6, d.unk(), 4, d.eos()});
  CHECK(d.encode_line("es", /*append_eos=*/false) == std::vector<int32_t>{5});
  CHECK(d.decode(ids) == "es ist <unk> .");
  CHECK(d.decode({d.bos(), 5, d.pad(), 6, d.eos()}) == "es ist");
  CHECK(split_whitespace(" a\u3000b\x1f"
                         "c  ") == std::vector<std::string>{"a", "b", "c"});
}

TEST_CASE("dictionary dict.txt save, load and errors") {
  Dictionary d = tied_dictionary();
  d.finalize();
  auto dir = std::filesystem::temp_directory_path() / ("pillars_dict_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string path = (dir / "dict.txt").string();
  d.save(path);
  Dictionary e = Dictionary::load(path);
  CHECK(e.size() == d.size());
  for (int32_t i = 0; i < int32_t(d.size()); ++i) {
    CHECK(e.symbol(i) == d.symbol(i));
    if (i >= d.nspecial()) CHECK(e.count(i) == d.count(i));
  }
  std::filesystem::remove_all(dir);

  Dictionary spaced = Dictionary::parse("a b 3\nc 1  \n"); // the count is after the last space
  CHECK(spaced.symbol(4) == "a b");
  CHECK(spaced.count(5) == 1);
  CHECK_THROWS_AS(Dictionary::parse("a 1\na 2\n", "d.txt"), InputError);
  CHECK_THROWS_AS(Dictionary::parse("word\n", "d.txt"), InputError);
  CHECK_THROWS_AS(Dictionary::parse("word x\n", "d.txt"), InputError);
  CHECK_THROWS_AS(Dictionary::load("/nonexistent/dict.txt"), InputError);
  // 19 digits beyond int64 (tests/fuzz/regressions/dictionary/count-beyond-int64.txt): an input
  // error naming the file and line, not std::out_of_range("stoll").
  CHECK_THROWS_WITH_AS(
      Dictionary::parse("a 1\nword 9999999999999999999\n", "d.txt"),
      "d.txt: line 2: incorrect dictionary format, expected '<token> <cnt> [flags]': \"word 9999999999999999999\"",
      InputError);
  CHECK(Dictionary::parse("a +5\nb -2\n").count(5) == -2); // signs, as Python's int() reads them
  Dictionary over = Dictionary::parse("a 1\na 7 #fairseq:overwrite\n");
  CHECK(over.index("a") == 5);
  CHECK(over.count(5) == 7);
}
