// BPE (text/bpe.h): learning checked merge by merge on a hand-computed example and against a
// golden file from an independent naive implementation; applying checked against the IWSLT'14
// files fairseq made with subword-nmt (needs PILLARS_DATA).
//
// Outside this suite, learn_bpe was compared with subword-nmt's own learn_bpe.py code: identical
// codes for 10,000 merges on Multi30k train (joint de+en) and 20,000 on the IWSLT'14 train sample.
#include <doctest/doctest.h>

#include "skip.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "base/error.h"
#include "test_text_util.h"
#include "text/bpe.h"

using namespace pillars;
using namespace pillars::text;

namespace {

const std::string kGolden = std::string(PILLARS_SOURCE_DIR) + "/tests/golden/text";

// Sennrich et al.'s example vocabulary.
WordCounts toy_counts() { return {{"low", 5}, {"lower", 2}, {"newest", 6}, {"widest", 3}}; }

} // namespace

TEST_CASE("bpe learn: hand-computed example, merge by merge") {
  // Words as symbols: l o w</w> (5), l o w e r</w> (2), n e w e s t</w> (6), w i d e s t</w> (3).
  //  1. pairs at 9: (e s) and (s t</w>); the tie goes to the larger pair, "s" > "e": s t</w>
  //  2. (e st</w>) 9       3. (l o) 7
  //  4. at 6: (n e), (e w), (w est</w>): the largest first symbol wins: w est</w>
  //  5. at 6: (n e), (e west</w>): "n" > "e": n e      6. (ne west</w>) 6
  //  7. (lo w</w>) 5
  //  8. at 3: (w i), (i d), (d est</w>): w i            9. (wi d) 3 ("wi" > "d")
  // 10. (wid est</w>) 3
  // 11. at 2 (only "lower" is left): (lo w), (w e), (e r</w>): w e
  // 12. (lo we), (we r</w>): "we" > "lo": we r</w>     13. (lo wer</w>) 2
  // then every pair count is below 2: stop after 13 merges.
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"s", "t</w>"},     {"e", "st</w>"}, {"l", "o"},       {"w", "est</w>"}, {"n", "e"},
      {"ne", "west</w>"}, {"lo", "w</w>"}, {"w", "i"},       {"wi", "d"},      {"wid", "est</w>"},
      {"w", "e"},         {"we", "r</w>"}, {"lo", "wer</w>"}};
  const std::vector<int64_t> expected_freq = {9, 9, 7, 6, 6, 6, 5, 3, 3, 3, 2, 2, 2};
  std::vector<int64_t> freq;
  BpeCodes codes = learn_bpe(toy_counts(), {.num_merges = 100}, &freq);
  CHECK(codes.merges == expected);
  CHECK(freq == expected_freq);

  BpeCodes first3 = learn_bpe(toy_counts(), {.num_merges = 3});
  CHECK(first3.merges == std::vector<std::pair<std::string, std::string>>(expected.begin(), expected.begin() + 3));
  BpeCodes min5 = learn_bpe(toy_counts(), {.num_merges = 100, .min_frequency = 5});
  CHECK(min5.merges.size() == 7);

  // Applying the learned codes gives the units learning ended with, and splits new words.
  BpeApplier bpe(codes);
  CHECK(bpe.apply_line("low lower newest widest") == "low lower newest widest");
  CHECK(bpe.apply_line("lowest newer") == "lo@@ west ne@@ wer");
}

TEST_CASE("bpe learn: counting words like subword-nmt") {
  WordCounts c;
  count_words("  a b\ta  a \r\n", c); // split on single spaces only: "b\ta" is one word
  CHECK(c.size() == 2);
  CHECK(c["a"] == 2);
  CHECK(c["b\ta"] == 1);
  // multi-byte characters are one symbol each: "ää" has the single pair (ä, ä</w>)
  BpeCodes codes = learn_bpe({{"ää", 3}, {"ö", 7}});
  REQUIRE(codes.merges.size() == 1);
  CHECK(codes.merges[0] == std::pair<std::string, std::string>("ä", "ä</w>"));
}

TEST_CASE("bpe codes files: format, parse, errors") {
  BpeCodes codes = learn_bpe(toy_counts());
  std::string text = format_bpe_codes(codes);
  CHECK(text.starts_with("#version: 0.2\ns t</w>\ne st</w>\n"));
  BpeCodes back = parse_bpe_codes(text);
  CHECK(back.merges == codes.merges);
  CHECK(back.version_minor == 2);

  BpeCodes old = parse_bpe_codes("l o\nlo w\n\n"); // no header: version 0.1, "</w>" is a symbol
  CHECK(old.version_minor == 1);
  CHECK(old.merges.size() == 2);
  CHECK(BpeApplier(old).apply_line("low lowly") == "low low@@ l@@ y");

  CHECK_THROWS_AS(parse_bpe_codes("#version: 0.2\na b\nabc\n", "codes.txt"), InputError);
  CHECK_THROWS_AS(parse_bpe_codes("#version: 0.2 byte\na b\n"), InputError);
  CHECK_THROWS_AS(read_bpe_codes("/nonexistent/codes"), InputError);

  auto dir = std::filesystem::temp_directory_path() / ("pillars_bpe_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string path = (dir / "code").string();
  write_bpe_codes(path, codes);
  CHECK(read_bpe_codes(path).merges == codes.merges);
  std::filesystem::remove_all(dir);
}

TEST_CASE("bpe apply: apply_bpe.py semantics") {
  BpeCodes codes;
  codes.merges = {{"x", "x"}, {"a", "b"}, {"ab", "c</w>"}, {"x", "x</w>"}, {"a", "b"}};
  BpeApplier bpe(codes);
  // overlapping occurrences merge left to right: x x x x</w> -> xx xx</w>
  CHECK(bpe.apply_line("xxxx") == "xx@@ xx");
  CHECK(bpe.apply_line("xxx") == "xx@@ x");
  CHECK(bpe.apply_line("abc abab") == "abc ab@@ a@@ b");  // the last b is "b</w>"
  CHECK(bpe.apply_line("a") == "a");                      // one character: never split
  CHECK(bpe.apply_line("  abc  xx \n") == "  abc xx \n"); // outer whitespace kept, inner collapsed
  CHECK(bpe.apply_line("   ") == "   ");
  CHECK(bpe.apply_line("") == "");

  BpeApplier glossary(codes, {.separator = "##", .glossary = {"xx", "abab"}});
  CHECK(glossary.apply_line("xx abab zxxz") == "xx abab z## xx## z");
  CHECK(glossary.apply_word("ababc") == std::vector<std::string>{"abab##", "c"});

  BpeApplier first_merge_only(codes, {.separator = "@@", .glossary = {}, .merges = 1});
  CHECK(first_merge_only.apply_line("abc xxx") == "a@@ b@@ c xx@@ x");

  CHECK(remove_bpe("es ist diese pyrami@@ de .") == "es ist diese pyramide .");
  CHECK(remove_bpe("a@@ b@@") == "ab"); // a final "@@" goes too
  CHECK(remove_bpe("a@@ b@@ ") == "ab");
  CHECK(remove_bpe("x@@ y z@@", "##") == "x@@ y z@@");
  CHECK(remove_bpe("a@@b") == "a@@b"); // only "@@ " and a final "@@"
}

TEST_CASE("bpe apply reproduces fairseq IWSLT14 bpe10k files") {
  auto data = test_text::data_dir();
  if (!data) {
    SKIP_TEST("the IWSLT'14 BPE comparison: PILLARS_DATA is not set");
    return;
  }
  // PROVENANCE.md: prepare-iwslt14.sh applied the 10k joint codes with apply_bpe.py -c code and
  // no vocabulary filter, so the segmentation must match exactly.
  const std::string dir = *data + "/iwslt14-de-en/";
  BpeCodes codes = parse_bpe_codes(test_text::read_xz(dir + "bpe10k/code.xz"), "bpe10k/code");
  REQUIRE(codes.merges.size() == 10000);
  for (std::string split : {"valid", "test"}) {
    for (std::string lang : {"de", "en"}) {
      auto in = test_text::read_xz_lines(dir + split + "." + lang + ".xz");
      auto ref = test_text::read_xz_lines(dir + "bpe10k/" + split + "." + lang + ".xz");
      REQUIRE(in.size() == ref.size());
      BpeApplier bpe(codes);
      size_t same = 0, round_trip = 0;
      auto t0 = std::chrono::steady_clock::now();
      for (size_t i = 0; i < in.size(); ++i) {
        std::string out = bpe.apply_line(in[i]);
        if (out == ref[i])
          ++same;
        else
          CHECK_MESSAGE(out == ref[i], "line ", i + 1, ": ", in[i]);
        if (remove_bpe(out) == in[i]) ++round_trip;
      }
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      CHECK(same == in.size());
      CHECK(round_trip == in.size());
      MESSAGE(split << "." << lang << ": " << same << "/" << in.size() << " lines identical, remove_bpe round trip "
                    << round_trip << "/" << in.size() << ", " << s << " s");
    }
  }
}

TEST_CASE("bpe learn on Multi30k: golden first 1000 merges and speed") {
  auto data = test_text::data_dir();
  if (!data) {
    SKIP_TEST("BPE learning on Multi30k: PILLARS_DATA is not set");
    return;
  }
  WordCounts counts;
  for (std::string lang : {"de", "en"})
    for (const std::string& line :
         test_text::read_xz_lines(*data + "/multi30k-de-en/tok/train.lc.norm.tok." + lang + ".xz"))
      count_words(line, counts);
  auto t0 = std::chrono::steady_clock::now();
  BpeCodes codes = learn_bpe(counts, {.num_merges = 10000});
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  MESSAGE("learned " << codes.merges.size() << " merges from " << counts.size() << " word types in " << s << " s");
  CHECK(codes.merges.size() == 10000);

  // tests/golden/text/make_bpe_golden.py (a naive recount-everything implementation).
  BpeCodes golden = read_bpe_codes(kGolden + "/multi30k_bpe_first1000.codes");
  REQUIRE(golden.merges.size() == 1000);
  for (size_t i = 0; i < golden.merges.size(); ++i) {
    if (codes.merges[i] != golden.merges[i]) {
      CHECK_MESSAGE(codes.merges[i] == golden.merges[i], "merge ", i + 1);
      break;
    }
  }
}
