// NLTK-identical Porter stemmer (metrics/porter.h) and the Python str.lower() it relies on.
//
// Reference: tests/golden/metrics/porter_vocab.tsv, NLTK 3.8's PorterStemmer().stem(word)
// (NLTK_EXTENSIONS mode, as rouge-score uses it) for all 19,388 distinct \w+ words of the SAMSum
// test set and tinyshakespeare plus edge cases (make_porter_golden.py). Agreement must be 100%.
#include <doctest/doctest.h>

#include <fstream>
#include <string>

#include "metrics/porter.h"
#include "metrics/unicode.h"

using namespace pillars::metrics;

TEST_CASE("porter: every word of the golden vocabulary stems as in NLTK") {
  std::ifstream f(PILLARS_SOURCE_DIR "/tests/golden/metrics/porter_vocab.tsv");
  REQUIRE(f.good());
  std::string line;
  std::size_t n = 0, wrong = 0;
  while (std::getline(f, line)) {
    const auto tab = line.find('\t');
    REQUIRE(tab != std::string::npos);
    const std::string word = line.substr(0, tab), want = line.substr(tab + 1);
    const std::string got = porter_stem(word);
    if (got != want && ++wrong <= 20) FAIL_CHECK(word << ": got " << got << ", NLTK " << want);
    ++n;
  }
  CHECK(n > 19000);
  CHECK(wrong == 0);
}

TEST_CASE("porter: the paper's examples and NLTK's departures") {
  // Porter (1980)'s own examples, with NLTK's changes where it departs (noted).
  CHECK(porter_stem("caresses") == "caress");
  CHECK(porter_stem("ponies") == "poni");
  CHECK(porter_stem("ties") == "tie"); // NLTK: 4-letter -ies -> -ie (paper: ti)
  CHECK(porter_stem("motoring") == "motor");
  CHECK(porter_stem("hopping") == "hop");
  CHECK(porter_stem("filing") == "file");
  CHECK(porter_stem("happy") == "happi");
  CHECK(porter_stem("relational") == "relat");
  CHECK(porter_stem("generalization") == "gener");
  CHECK(porter_stem("dying") == "die"); // NLTK irregular form
  CHECK(porter_stem("Running") == "run");
  CHECK(porter_stem("at") == "at");
}

TEST_CASE("porter: Python lowercase rules used by the metrics") {
  CHECK(to_lower("ABC xyz") == "abc xyz");
  CHECK(to_lower("\xC3\x84\xC3\x96") == "\xC3\xA4\xC3\xB6");                                   // ÄÖ -> äö
  CHECK(to_lower("\xC4\xB0") == "i\xCC\x87");                                                  // İ -> i + U+0307
  CHECK(to_lower("\xE2\x84\xAA") == "k");                                                      // Kelvin sign -> k
  CHECK(to_lower("\xCE\xA3") == "\xCF\x83");                                                   // lone Σ -> σ
  CHECK(to_lower("\xCE\x9F\xCE\xA3 \xCE\xA3\xCE\x9F") == "\xCE\xBF\xCF\x82 \xCF\x83\xCE\xBF"); // ΟΣ ΣΟ -> ος σο
  CHECK(to_lower("a\xFF"
                 "B") ==
        "a\xFF"
        "b"); // undecodable byte kept
  CHECK(split_whitespace(" a\xC2\xA0"
                         "b\tc\xE2\x80\xA8 ") == std::vector<std::string>{"a", "b", "c"});
  CHECK(std::string(rstrip("x \xE3\x80\x80\n")) == "x");
}
