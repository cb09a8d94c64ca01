// fairseq's tokenized BLEU (metrics/fairseq_bleu.h).
//
// Reference: NLTK 3.8's corpus_bleu without smoothing on whitespace tokens with one reference
// (tests/golden/metrics/bleu_nltk.json, config "fairseq_ref0", made by make_bleu_golden.py), which
// is fairseq's Scorer whenever every order has a match and every sentence has >= 4 tokens; and the
// "BLEU4 = ..." line formatted from NLTK's numbers with fairseq's format string. The special cases
// (eos/pad trimming, <unk>) are checked against values worked out by hand from fairseq's
// libbleu.cpp / scoring/bleu.py, stated next to each check.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "metrics/fairseq_bleu.h"

using json = nlohmann::json;
using namespace pillars::metrics;

TEST_CASE("fairseq bleu: equals NLTK unsmoothed corpus_bleu and prints fairseq's line") {
  std::ifstream f(PILLARS_SOURCE_DIR "/tests/golden/metrics/bleu_nltk.json");
  REQUIRE(f.good());
  const json g = json::parse(f);
  const json& c = g["corpora"]["main"];
  const json& e = c["expected"]["fairseq_ref0"];
  const auto hyps = c["hyps"].get<std::vector<std::string>>();
  const auto refs = c["refs"][0].get<std::vector<std::string>>();
  FairseqBleu b;
  for (std::size_t i = 0; i < hyps.size(); ++i) b.add_tokens(refs[i], hyps[i]);
  for (int n = 0; n < 4; ++n) {
    CHECK(b.matches()[n] == e["counts"][n].get<std::size_t>());
    CHECK(b.counts()[n] == e["totals"][n].get<std::size_t>());
  }
  CHECK(b.predlen() == e["sys_len"].get<std::size_t>());
  CHECK(b.reflen() == e["ref_len"].get<std::size_t>());
  const double want = e["score"];
  CHECK(std::abs(b.score() - want) <= 1e-12 * want);
  CHECK(b.result_string() == e["fairseq_line"].get<std::string>());
  CHECK(fairseq_bleu(hyps, refs) == b.score());
}

TEST_CASE("fairseq bleu: trimming, eos and unk follow libbleu") {
  SUBCASE("identical after trimming leading pads and trailing eos/pads") {
    FairseqBleu b; // pad=1 eos=2 unk=3
    const std::vector<std::int32_t> ref = {1, 1, 5, 6, 7, 8, 2}, hyp = {5, 6, 7, 8, 2, 1, 1};
    b.add(ref, hyp);
    CHECK(b.reflen() == 4);
    CHECK(b.predlen() == 4);
    CHECK(b.score() == doctest::Approx(100.0).epsilon(1e-15));
  }
  SUBCASE("an empty line is its eos token, which rtrim never removes") {
    // libbleu's rtrim stops at index 0: "" -> [</s>] keeps one token, so the 1-gram matches and
    // the 2..4-gram totals are 0 -> precision 0 -> BLEU 0.
    FairseqBleu b;
    b.add_tokens("", "");
    CHECK(b.reflen() == 1);
    CHECK(b.predlen() == 1);
    CHECK(b.result_string() == "BLEU4 = 0.00, 100.0/0.0/0.0/0.0 (BP=1.000, ratio=1.000, syslen=1, reflen=1)");
  }
  SUBCASE("unk in the reference never matches") {
    // ref "<unk> b c d e" -> unk becomes -999: matches 4/5, 3/4, 2/3, 1/2 -> (0.2)^(1/4).
    FairseqBleu b;
    b.add_tokens("<unk> b c d e", "<unk> b c d e");
    CHECK(b.matches() == std::array<std::size_t, 4>{4, 3, 2, 1});
    CHECK(b.counts() == std::array<std::size_t, 4>{5, 4, 3, 2});
    CHECK(b.score() == doctest::Approx(100.0 * std::pow(0.2, 0.25)).epsilon(1e-14));
  }
  SUBCASE("brevity penalty and clipping") {
    // hyp "the the the the" vs ref "the cat is on the mat": 1-gram matches clipped to 2 of 4,
    // no 2-gram match -> 0; BP = exp(1 - 6/4).
    FairseqBleu b;
    b.add_tokens("the cat is on the mat", "the the the the");
    CHECK(b.matches()[0] == 2);
    CHECK(b.brevity() == doctest::Approx(std::exp(1.0 - 6.0 / 4.0)));
    CHECK(b.score() == 0.0);
  }
  CHECK_THROWS_AS(FairseqBleu().score(5), pillars::InputError);
  CHECK_THROWS_WITH_AS(fairseq_bleu({"a"}, {"a", "b"}), doctest::Contains("1 hypotheses but 2 references"),
                       pillars::InputError);
}
