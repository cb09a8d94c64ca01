// sacreBLEU-identical BLEU (metrics/bleu.h) against values nobody in this repository computed:
//
//  * tests/golden/metrics/sacrebleu_published.json: inputs and expected scores / statistics /
//    score lines published by sacreBLEU itself (its test suite and README; README.md there gives
//    file and commit for each), with sacreBLEU's own tolerances.
//  * tests/golden/metrics/bleu_nltk.json: NLTK 3.8's corpus_bleu on a synthetic 240-line corpus
//    with two reference streams (one with empty lines), in the configurations where NLTK and
//    sacreBLEU define the same number (exp smoothing = NLTK method3; no smoothing), plus the
//    13a tokenization of every line by sacreBLEU's regexes run in CPython's `re`
//    (make_bleu_golden.py). Statistics must match exactly; scores to 1e-12 relative (NLTK sums
//    w_n log p_n with fsum over Fractions, sacreBLEU and we sum log(100 p_n) / 4 in double).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "metrics/bleu.h"

using json = nlohmann::json;
using namespace pillars::metrics;

namespace {

const json& load(const char* name) {
  static std::map<std::string, json> cache;
  auto it = cache.find(name);
  if (it == cache.end()) {
    std::ifstream f(std::string(PILLARS_SOURCE_DIR "/tests/golden/metrics/") + name);
    REQUIRE_MESSAGE(f.good(), "missing golden file ", name);
    it = cache.emplace(name, json::parse(f)).first;
  }
  return it->second;
}

BleuSmooth smooth_of(const std::string& s) {
  if (s == "none") return BleuSmooth::kNone;
  if (s == "floor") return BleuSmooth::kFloor;
  if (s == "add-k") return BleuSmooth::kAddK;
  if (s == "exp") return BleuSmooth::kExp;
  FAIL("unknown smoothing ", s);
  return BleuSmooth::kExp;
}

BleuTokenizer tok_of(const std::string& s) {
  if (s == "13a") return BleuTokenizer::k13a;
  if (s == "none") return BleuTokenizer::kNone;
  if (s == "char") return BleuTokenizer::kChar;
  FAIL("unknown tokenizer ", s);
  return BleuTokenizer::k13a;
}

// sacreBLEU's BLEU(...) keyword arguments as they appear in the golden files.
BleuOptions options_of(const json& o) {
  BleuOptions opt;
  if (o.contains("tokenize")) opt.tokenize = tok_of(o["tokenize"]);
  if (o.contains("smooth_method")) opt.smooth = smooth_of(o["smooth_method"]);
  if (o.contains("smooth_value") && !o["smooth_value"].is_null()) opt.smooth_value = o["smooth_value"].get<double>();
  if (o.contains("lowercase")) opt.lowercase = o["lowercase"];
  if (o.contains("effective_order")) opt.effective_order = o["effective_order"];
  return opt;
}

// sacrebleu.raw_corpus_bleu: floor smoothing, no tokenization, effective order.
BleuOptions raw_options(const json& smooth_value) {
  BleuOptions opt;
  opt.tokenize = BleuTokenizer::kNone;
  opt.smooth = BleuSmooth::kFloor;
  opt.effective_order = true;
  if (!smooth_value.is_null()) opt.smooth_value = smooth_value.get<double>();
  return opt;
}

std::string fixed2(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

std::string without_version(std::string sig) { return sig.substr(0, sig.rfind("|version:")); }

} // namespace

TEST_CASE("bleu: sacreBLEU README example, score line and signature") {
  const json& g = load("sacrebleu_published.json");
  const auto hyps = g["readme_hyps"].get<std::vector<std::string>>();
  const auto refs = g["readme_refs"].get<std::vector<std::vector<std::string>>>();
  const BleuResult r = corpus_bleu(hyps, refs);
  CHECK(r.format() == g["readme_format"].get<std::string>());
  CHECK(bleu_signature(BleuOptions{}, 2) == without_version(g["readme_signature"]));

  // Variable number of references: the empty first reference is dropped for segment 1.
  const auto var_refs = g["readme_var_refs"].get<std::vector<std::vector<std::string>>>();
  CHECK(corpus_bleu(hyps, var_refs).format() == g["readme_var_format"].get<std::string>());
  CHECK(bleu_signature(BleuOptions{}, -1) == without_version(g["readme_var_signature"]));
}

TEST_CASE("bleu: sacreBLEU test_bleu corpus cases") {
  const json& g = load("sacrebleu_published.json");
  const auto readme_hyps = g["readme_hyps"].get<std::vector<std::string>>();
  const auto refs = g["readme_refs"].get<std::vector<std::vector<std::string>>>();
  for (const json& c : g["corpus_bleu_cases"]) {
    CAPTURE(c["source"].get<std::string>());
    const auto hyps = c["hyps"].is_string() ? readme_hyps : c["hyps"].get<std::vector<std::string>>();
    const BleuResult r = corpus_bleu(hyps, refs, options_of(c["options"]));
    CHECK(std::abs(r.score - c["score"].get<double>()) < c["eps"].get<double>());
  }
  for (const json& c : g["max_order_cases"]) {
    CAPTURE(c["source"].get<std::string>());
    BleuOptions opt;
    opt.max_ngram_order = c["order"];
    CHECK(fixed2(corpus_bleu(readme_hyps, refs, opt).score) == c["score_2dp"].get<std::string>());
  }
}

TEST_CASE("bleu: sacreBLEU raw_corpus_bleu, effective order and statistics cases") {
  const json& g = load("sacrebleu_published.json");
  for (const json& c : g["raw_corpus_bleu_cases"]) {
    CAPTURE(c["source"].get<std::string>());
    const BleuResult r =
        corpus_bleu(c["hyps"].get<std::vector<std::string>>(), c["refs"].get<std::vector<std::vector<std::string>>>(),
                    raw_options(c["smooth_value"]));
    CHECK(std::abs(r.score / 100 - c["score_over_100"].get<double>()) < c["eps"].get<double>());
  }
  for (const json& c : g["statistics_cases"]) {
    CAPTURE(c["source"].get<std::string>());
    const BleuResult r =
        corpus_bleu(c["hyps"].get<std::vector<std::string>>(), c["refs"].get<std::vector<std::vector<std::string>>>(),
                    raw_options(c["smooth_value"]));
    CHECK(r.counts == c["counts"].get<std::vector<std::int64_t>>());
    CHECK(r.totals == c["totals"].get<std::vector<std::int64_t>>());
  }
}

TEST_CASE("bleu: sacreBLEU compute_bleu scoring and degenerate statistics") {
  const json& g = load("sacrebleu_published.json");
  for (const json& c : g["compute_bleu_cases"]) {
    CAPTURE(c["source"].get<std::string>());
    BleuStats s;
    s.counts = c["counts"].get<std::vector<std::int64_t>>();
    s.totals = c["totals"].get<std::vector<std::int64_t>>();
    s.sys_len = c["sys_len"];
    s.ref_len = c["ref_len"];
    BleuOptions opt;
    opt.smooth = smooth_of(c["smooth_method"]);
    if (!c["smooth_value"].is_null()) opt.smooth_value = c["smooth_value"].get<double>();
    const double got = compute_bleu(s, opt).score / 100;
    const double eps = c["eps"];
    if (eps == 0)
      CHECK(got == c["score_over_100"].get<double>()); // sacreBLEU asserts ==
    else
      CHECK(std::abs(got - c["score_over_100"].get<double>()) < eps);
  }
}

TEST_CASE("bleu: sacreBLEU test_sentence_bleu cases") {
  const json& g = load("sacrebleu_published.json");
  const std::string sys = g["sentence_sys"], ref = g["sentence_ref"];
  for (const json& c : g["sentence_cases"]) {
    CAPTURE(c.dump());
    BleuOptions opt = options_of(c);
    opt.effective_order = true;
    CHECK(std::abs(sentence_bleu(sys, {ref}, opt).score - c["score"].get<double>()) < 1e-3);
  }
  for (const json& c : g["sentence_zero_cases"]) {
    CAPTURE(c.dump());
    BleuOptions opt = options_of(c);
    opt.effective_order = true;
    CHECK(sentence_bleu(g["sentence_sys_zero"].get<std::string>(), {g["sentence_ref_zero"].get<std::string>()}, opt)
              .score == 0.0);
  }
  // sentence_bleu's default options are sacreBLEU's sentence_bleu defaults (exp, effective order).
  CHECK(std::abs(sentence_bleu(sys, {ref}).score - 8.493) < 1e-3);
}

TEST_CASE("bleu: 13a tokenization equals sacreBLEU regexes on every golden line") {
  const json& g = load("bleu_nltk.json");
  BleuOptions lc;
  lc.lowercase = true;
  std::size_t lines = 0;
  for (const auto& [name, c] : g["corpora"].items()) {
    CAPTURE(name);
    const auto hyps = c["hyps"].get<std::vector<std::string>>();
    const auto refs = c["refs"].get<std::vector<std::vector<std::string>>>();
    for (std::size_t i = 0; i < hyps.size(); ++i) {
      CHECK(bleu_preprocess(hyps[i], BleuOptions{}) == c["tok13a_hyps"][i].get<std::string>());
      CHECK(bleu_preprocess(hyps[i], lc) == c["tok13a_lc_hyps"][i].get<std::string>());
      ++lines;
    }
    for (std::size_t k = 0; k < refs.size(); ++k)
      for (std::size_t i = 0; i < refs[k].size(); ++i) {
        CHECK(bleu_preprocess(refs[k][i], BleuOptions{}) == c["tok13a_refs"][k][i].get<std::string>());
        ++lines;
      }
  }
  CHECK(lines > 700);
}

TEST_CASE("bleu: corpus statistics and scores equal NLTK corpus_bleu") {
  const json& g = load("bleu_nltk.json");
  for (const auto& [name, c] : g["corpora"].items()) {
    const auto hyps = c["hyps"].get<std::vector<std::string>>();
    const auto refs = c["refs"].get<std::vector<std::vector<std::string>>>();
    for (const auto& [config, e] : c["expected"].items()) {
      if (config == "fairseq_ref0") continue; // test_metrics_fairseq_bleu.cpp
      CAPTURE(name);
      CAPTURE(config);
      BleuOptions opt;
      std::vector<std::vector<std::string>> streams = refs;
      if (config == "13a_lowercase_exp") opt.lowercase = true;
      if (config == "13a_exp_ref0") streams.resize(1);
      if (config == "none_none") {
        opt.tokenize = BleuTokenizer::kNone;
        opt.smooth = BleuSmooth::kNone;
      }
      const BleuResult r = corpus_bleu(hyps, streams, opt);
      CHECK(r.counts == e["counts"].get<std::vector<std::int64_t>>());
      CHECK(r.totals == e["totals"].get<std::vector<std::int64_t>>());
      CHECK(r.sys_len == e["sys_len"].get<std::int64_t>());
      CHECK(r.ref_len == e["ref_len"].get<std::int64_t>());
      const double want = e["score"];
      CHECK(std::abs(r.score - want) <= 1e-12 * want);
      CHECK(r.format() == e["sacrebleu_line"].get<std::string>());
    }
  }
}

TEST_CASE("bleu: hand-checked tokenizer and Unicode details") {
  // Readable spot checks of the rules (the golden corpus above is the real test); each expected
  // string was produced by sacreBLEU's regexes in CPython (make_bleu_golden.py's tok_13a).
  CHECK(tokenize_13a("Hello, world!") == "Hello , world !");
  CHECK(tokenize_13a("It costs $3.50, i.e. 3,500 cents.") == "It costs $ 3.50 , i . e . 3,500 cents .");
  CHECK(tokenize_13a("a.,b") == "a . , b");
  CHECK(tokenize_13a("1-2 a-b") == "1 - 2 a-b");                             // dash split only after a digit
  CHECK(tokenize_13a("&quot;x&quot; &amp;lt; <skipped>y") == "\" x \" < y"); // amp before lt
  CHECK(tokenize_13a("e-\nmail\nnext") == "email next");
  CHECK(tokenize_13a("\xC3\xA9t\xC3\xA9.") == "\xC3\xA9t\xC3\xA9 ."); // "été." -> "été ."
  CHECK(tokenize_13a("a\xC2\xA0"
                     "b\xE3\x80\x80"
                     "c") == "a b c"); // NBSP and ideographic space split
  CHECK(tokenize_char("ab c") == "a b   c");
  BleuOptions lc;
  lc.lowercase = true;
  CHECK(bleu_preprocess("\xCE\x9F\xCE\x94\xCE\x9F\xCE\xA3 \xC3\x84", lc) ==
        "\xCE\xBF\xCE\xB4\xCE\xBF\xCF\x82 \xC3\xA4"); // ΟΔΟΣ Ä -> οδος ä
  CHECK(bleu_preprocess("x \t\n", BleuOptions{}) == "x");
}

TEST_CASE("bleu: bad input names the counts") {
  const std::vector<std::string> hyps = {"a b c d", "e f g h"};
  CHECK_THROWS_WITH_AS(corpus_bleu(hyps, {{"a b c d"}}), doctest::Contains("2 hypotheses but reference stream 0 has 1"),
                       pillars::InputError);
  CHECK_THROWS_AS(corpus_bleu(hyps, {{"", ""}}), pillars::InputError); // a segment with only empty refs
  CHECK_THROWS_AS(corpus_bleu({}, {{}}), pillars::InputError);
  BleuOptions bad;
  bad.max_ngram_order = 0;
  CHECK_THROWS_AS(corpus_bleu(hyps, {hyps}, bad), pillars::InputError);
}
