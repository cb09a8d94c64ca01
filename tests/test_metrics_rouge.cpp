// rouge-score-identical ROUGE (metrics/rouge.h).
//
// References, none computed in this repository:
//  * tests/golden/metrics/rouge_score_published.json: rouge-score's own test cases
//    (rouge/rouge_scorer_test.py), including its comparisons with ROUGE-1.5.5 on the testdata
//    lines in tests/golden/metrics/rouge_testdata/ (copied from rouge/testdata), with the test's
//    assertAlmostEqual tolerances.
//  * tests/golden/metrics/rouge_tokens.json: rouge-score's tokenize() (its regexes in CPython +
//    NLTK 3.8's Porter stemmer) on SAMSum summaries and Unicode edge cases (make_porter_golden.py).
// Multi-reference selection, the corpus mean and errors are checked on hand-worked examples.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/error.h"
#include "metrics/rouge.h"

using json = nlohmann::json;
using namespace pillars::metrics;

namespace {

std::string golden_path(const std::string& name) { return PILLARS_SOURCE_DIR "/tests/golden/metrics/" + name; }

json load(const std::string& name) {
  std::ifstream f(golden_path(name));
  REQUIRE_MESSAGE(f.good(), "missing golden file ", name);
  return json::parse(f);
}

std::string read_text(const std::string& name) {
  std::ifstream f(golden_path(name), std::ios::binary);
  REQUIRE_MESSAGE(f.good(), "missing ", name);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Python's f.readlines(): lines with their "\n".
std::vector<std::string> readlines(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t nl = text.find('\n', start);
    const std::size_t end = nl == std::string::npos ? text.size() : nl + 1;
    lines.push_back(text.substr(start, end - start));
    start = end;
  }
  return lines;
}

const RougeScore& pick(const RougeScores& s, const std::string& type) {
  if (type == "rouge1") return s.rouge1;
  if (type == "rouge2") return s.rouge2;
  if (type == "rougeL") return s.rougeL;
  if (type == "rougeLsum") return s.rougeLsum;
  FAIL("unknown type ", type);
  return s.rouge1;
}

// unittest's assertAlmostEqual(a, b, places): round(a - b, places) == 0.
bool almost_equal(double a, double b, int places) { return std::abs(a - b) < 0.5 * std::pow(10.0, -places); }

void check_score(const RougeScore& got, const json& c) {
  const int places = c["places"];
  if (!c["p"].is_null()) CHECK(almost_equal(got.precision, c["p"].get<double>(), places));
  if (!c["r"].is_null()) CHECK(almost_equal(got.recall, c["r"].get<double>(), places));
  if (!c["f"].is_null()) CHECK(almost_equal(got.fmeasure, c["f"].get<double>(), places));
}

} // namespace

TEST_CASE("rouge: rouge-score unit cases") {
  const json g = load("rouge_score_published.json");
  for (const json& c : g["score_cases"]) {
    CAPTURE(c.dump());
    RougeOptions opt;
    opt.use_stemmer = c["stem"];
    const auto s = rouge_score(c["target"].get<std::string>(), c["prediction"].get<std::string>(), opt);
    check_score(pick(s, c["type"]), c);
  }
}

TEST_CASE("rouge: rouge-score comparisons with ROUGE-1.5.5 on its testdata") {
  const json g = load("rouge_score_published.json");
  const auto targets = readlines(read_text("rouge_testdata/target_multi.0.txt"));
  const auto predictions = readlines(read_text("rouge_testdata/prediction_multi.0.txt"));
  REQUIRE(targets.size() == 4);
  REQUIRE(predictions.size() == 4);
  for (const json& c : g["rouge155_line_cases"]) {
    CAPTURE(c.dump());
    RougeOptions opt;
    opt.use_stemmer = c["stem"];
    const int line = c["line"];
    check_score(pick(rouge_score(targets[line], predictions[line], opt), c["type"]), c);
  }
  const json& c = g["rouge155_lsum_case"];
  RougeOptions stem;
  stem.use_stemmer = true;
  check_score(rouge_score(read_text(c["target_file"]), read_text(c["prediction_file"]), stem).rougeLsum, c);
}

TEST_CASE("rouge: rouge-score LCS, union LCS and summary-level LCS cases") {
  const json g = load("rouge_score_published.json");
  using Tokens = std::vector<std::string>;
  for (const json& c : g["lcs_cases"]) {
    const auto ref = c["ref"].get<Tokens>(), can = c["can"].get<Tokens>();
    CHECK(lcs_indices(ref, can) == c["indices"].get<std::vector<std::size_t>>());
    CHECK(lcs_indices(ref, can).size() == c["length"].get<std::size_t>());
  }
  {
    const json& c = g["union_lcs_case"];
    // The union LCS is what makes every union token a hit here (no repeated tokens).
    const auto ref = c["ref"].get<Tokens>();
    const auto cans = c["cans"].get<std::vector<Tokens>>();
    const auto s = rouge_lsum({ref}, cans);
    std::size_t n_can = 0;
    for (const auto& x : cans) n_can += x.size();
    CHECK(s.recall * ref.size() == doctest::Approx(c["union_tokens"].size()));
    CHECK(s.precision * n_can == doctest::Approx(c["union_tokens"].size()));
  }
  for (const json& c : g["summary_level_cases"]) {
    CAPTURE(c["source"].get<std::string>());
    check_score(rouge_lsum(c["refs"].get<std::vector<Tokens>>(), c["cans"].get<std::vector<Tokens>>()), c);
  }
}

TEST_CASE("rouge: tokenizer and stemmer equal rouge-score on golden lines") {
  const json g = load("rouge_tokens.json");
  REQUIRE(g["cases"].size() > 200);
  for (const json& c : g["cases"]) {
    const std::string text = c["text"];
    CAPTURE(text);
    CHECK(rouge_tokenize(text, false) == c["tokens"].get<std::vector<std::string>>());
    CHECK(rouge_tokenize(text, true) == c["stemmed"].get<std::vector<std::string>>());
  }
}

TEST_CASE("rouge: several references take the best F per type, the corpus takes the mean") {
  // Worked by hand from rouge-score's definitions (score_multi: per type, np.argmax of F).
  // prediction "a b c d"; target 1 "a b x y" (rouge1 F = 0.5, rouge2 P = R = 1/3 -> F 1/3);
  // target 2 "a c d e f" (rouge1 P = 3/4, R = 3/5, F = 2/3; rouge2: "c d" -> P 1/3, R 1/4, F 2/7).
  const auto s = rouge_score_multi({"a b x y", "a c d e f"}, "a b c d");
  CHECK(s.rouge1.fmeasure == doctest::Approx(2.0 / 3.0));
  CHECK(s.rouge1.recall == doctest::Approx(3.0 / 5.0));
  CHECK(s.rouge2.fmeasure == doctest::Approx(1.0 / 3.0)); // from target 1
  CHECK(s.rouge2.precision == doctest::Approx(1.0 / 3.0));
  // Corpus: mean over examples, references given as streams refs[k][i].
  const auto c = corpus_rouge({"a b c d", "q"}, {{"a b x y", "q"}, {"a c d e f", "r"}});
  CHECK(c.n == 2);
  CHECK(c.mean.rouge1.fmeasure == doctest::Approx((2.0 / 3.0 + 1.0) / 2));
  CHECK(c.mean.rouge2.fmeasure == doctest::Approx((1.0 / 3.0 + 0.0) / 2));
  CHECK_THROWS_WITH_AS(corpus_rouge({"a", "b"}, {{"a"}}),
                       doctest::Contains("2 predictions but reference stream 0 has 1"), pillars::InputError);
}

TEST_CASE("rouge: rougeLsum follows rouge-score's backtracking tie rule") {
  // Worked by hand from rouge-score's _backtrack_norec (move left only if t[i][j-1] > t[i-1][j]).
  // ref [a b] vs candidate [b a]: both LCS of length 1 exist; the walk from the corner sees
  // t[2][1] == t[1][2] and moves up, then matches "a" -> index 0.
  CHECK(lcs_indices({"a", "b"}, {"b", "a"}) == std::vector<std::size_t>{0});
  // That choice decides the hits: target "a b\na", prediction "b a". Sentence 1's union LCS is
  // {a}: a hit (the prediction's only "a" is used up); sentence 2's "a" then finds no unused "a".
  // hits = 1 of m = 3 target and n = 2 prediction tokens. (Choosing "b" would give 2 hits.)
  const auto s = rouge_score("a b\na", "b a");
  CHECK(s.rougeLsum.recall == doctest::Approx(1.0 / 3.0));
  CHECK(s.rougeLsum.precision == doctest::Approx(1.0 / 2.0));
  CHECK(s.rougeLsum.fmeasure == doctest::Approx(0.4));
}
