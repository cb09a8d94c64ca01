// study/: the statistics against an independent float64 implementation, the heads' table against
// values worked by hand, and the study file's validation.
//
//  * tests/golden/study/stats_golden.json, written by make_stats_golden.py beside it: the paired
//    t-test (scipy.stats.ttest_rel), the sign test (scipy.stats.binomtest), Student's t CDF and
//    the incomplete beta function (scipy), Spearman's rank correlation (scipy.stats.spearmanr; the
//    exact p-value of few runs counted over every pairing, and checked there against
//    scipy.stats.permutation_test), and sacreBLEU's paired bootstrap re-implemented in
//    numpy with BLEU from summed statistics. The bootstrap shares only the resampling indices
//    (SplitMix64, written out in the script), so every score, interval and p-value is checked.
#include <doctest/doctest.h>

#include <algorithm>

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "metrics/bleu.h"
#include "study/compactness.h"
#include "study/stats.h"
#include "study/study_file.h"
#include "study/trailing_rate.h"

using namespace pillars;
using namespace pillars::study;
using nlohmann::json;

namespace {

json golden() {
  std::ifstream f(PILLARS_SOURCE_DIR "/tests/golden/study/stats_golden.json");
  REQUIRE_MESSAGE(f.good(), "missing tests/golden/study/stats_golden.json");
  return json::parse(f);
}

std::vector<double> doubles(const json& j) { return j.get<std::vector<double>>(); }

StatRows rows(const json& j) {
  StatRows r;
  for (const json& row : j) r.push_back(row.get<std::vector<double>>());
  return r;
}

double bleu_of(const std::vector<double>& s) {
  metrics::BleuStats st;
  st.sys_len = static_cast<int64_t>(s[0]), st.ref_len = static_cast<int64_t>(s[1]);
  for (int k = 0; k < 4; ++k)
    st.counts.push_back(static_cast<int64_t>(s[2 + k])), st.totals.push_back(static_cast<int64_t>(s[6 + k]));
  return metrics::compute_bleu(st).score;
}

} // namespace

TEST_CASE("study: incomplete beta and Student's t CDF match scipy") {
  const json g = golden();
  for (const json& c : g["betainc"])
    CHECK_MESSAGE(incomplete_beta(c["x"], c["a"], c["b"]) == doctest::Approx(c["value"].get<double>()).epsilon(1e-10),
                  c.dump());
  for (const json& c : g["t_cdf"])
    CHECK_MESSAGE(student_t_cdf(c["t"], c["df"]) == doctest::Approx(c["cdf"].get<double>()).epsilon(1e-10), c.dump());
}

TEST_CASE("study: paired t-test and sign test match scipy") {
  const json g = golden();
  for (const json& c : g["t_tests"]) {
    const PairedTest t = paired_t_test(doubles(c["x"]), doubles(c["y"]));
    CHECK(t.statistic == doctest::Approx(c["t"].get<double>()).epsilon(1e-10));
    CHECK(t.p == doctest::Approx(c["p"].get<double>()).epsilon(1e-9));
  }
  for (const json& c : g["sign_tests"]) {
    const PairedTest s = sign_test(doubles(c["x"]), doubles(c["y"]));
    CHECK(s.statistic == c["plus"].get<double>());
    CHECK(s.n == c["n"].get<int64_t>());
    CHECK(s.p == doctest::Approx(c["p"].get<double>()).epsilon(1e-12));
  }
  // Undefined cases say so instead of inventing a p-value.
  CHECK(std::isnan(paired_t_test({1.0}, {0.0}).p));
  CHECK(std::isnan(paired_t_test({1.0, 2.0}, {0.0, 1.0}).p)); // every difference 1: sd 0
}

TEST_CASE("study: Spearman's rank correlation matches scipy, ties included, with exact p-values for few runs") {
  const json g = golden();
  for (const json& c : g["spearman"]) {
    const Correlation r = spearman(doubles(c["x"]), doubles(c["y"]));
    INFO(c.dump());
    CHECK(r.n == static_cast<int64_t>(c["x"].size()));
    CHECK(r.rho == doctest::Approx(c["rho"].get<double>()).epsilon(1e-12));
    CHECK(r.p == doctest::Approx(c["p"].get<double>()).epsilon(1e-9));
    CHECK(r.exact == c["exact"].get<bool>());
  }
  // Three runs in perfect order: 2 of the 6 pairings are as extreme, not "p = 0" as Student's t says.
  const Correlation three = spearman({0.01, 0.77, 0.84}, {39.07, 38.93, 38.88});
  CHECK(three.rho == -1);
  CHECK(three.p == doctest::Approx(1.0 / 3).epsilon(1e-15));
  // A rank correlation: any increasing transform of y leaves it as it is.
  const std::vector<double> x = {0.2, 0.9, 0.4, 0.7, 0.1}, y = {30, 38, 33, 31, 29};
  std::vector<double> y_exp;
  for (double v : y) y_exp.push_back(std::exp(v / 3));
  CHECK(spearman(x, y_exp).rho == doctest::Approx(spearman(x, y).rho).epsilon(1e-15));
  // Undefined cases say so: too few runs, or a measure that does not vary.
  CHECK(std::isnan(spearman({1.0, 2.0}, {3.0, 1.0}).p));
  CHECK(std::isnan(spearman({1.0, 2.0, 3.0}, {5.0, 5.0, 5.0}).rho));
}

TEST_CASE("study: paired bootstrap matches sacreBLEU's procedure") {
  const json g = golden();
  for (const json& c : g["bootstrap"]) {
    const CorpusScore score = c["score"] == "bleu"
                                  ? CorpusScore(bleu_of)
                                  : CorpusScore([](const std::vector<double>& s) { return s[0] / s[1]; });
    const BootstrapResult r = paired_bootstrap(rows(c["system"]), rows(c["baseline"]), score, c["samples"], c["seed"]);
    INFO(c["score"].get<std::string>());
    CHECK(r.system == doctest::Approx(c["system_score"].get<double>()).epsilon(1e-12));
    CHECK(r.baseline == doctest::Approx(c["baseline_score"].get<double>()).epsilon(1e-12));
    CHECK(r.diff == doctest::Approx(c["diff"].get<double>()).epsilon(1e-10));
    CHECK(r.low == doctest::Approx(c["low"].get<double>()).epsilon(1e-9));
    CHECK(r.high == doctest::Approx(c["high"].get<double>()).epsilon(1e-9));
    CHECK(r.p == doctest::Approx(c["p"].get<double>()).epsilon(1e-12));
  }
  // Identical systems: no difference, p = 1.
  const StatRows same = rows(g["bootstrap"][0]["system"]);
  const BootstrapResult r = paired_bootstrap(same, same, bleu_of, 100, 1);
  CHECK(r.diff == 0);
  CHECK(r.p == 1);
}

TEST_CASE("study: mean and sample standard deviation") {
  const MeanSd m = mean_sd({31.9, 33.93, 35.87});
  CHECK(m.mean == doctest::Approx(33.9).epsilon(1e-12));
  CHECK(m.sd ==
        doctest::Approx(1.9851700179077856).epsilon(1e-12)); // n − 1 in the denominator (Python statistics.stdev)
  CHECK(mean_sd({}).n == 0);
  CHECK(mean_sd({2.0}).sd == 0);
}

TEST_CASE("study: validation has levelled off when the last fifth's mean gains little on the fifth before") {
  // Budget 1,000: the fourth fifth is updates (600, 800], the last (800, 1,000]; a validation at 600
  // or past the budget counts in neither.
  using Points = std::vector<std::pair<double, double>>;
  const Points rising = {{600, 99}, {650, 30}, {700, 31},    {750, 32}, {800, 33},
                         {850, 34}, {900, 34}, {1000, 34.5}, {1001, 99}};
  const auto r = validation_trend(rising, 1000, /*higher_is_better=*/true);
  REQUIRE(r.has_value());
  CHECK(r->before == doctest::Approx(31.5));          // (30 + 31 + 32 + 33) / 4
  CHECK(r->after == doctest::Approx(34.5 - 1.0 / 3)); // (34 + 34 + 34.5) / 3
  CHECK(r->gain == doctest::Approx(34.5 - 1.0 / 3 - 31.5));
  CHECK_FALSE(r->levelled_off);
  // Flat but noisy: one lucky validation in the last fifth beats every earlier one by a point, yet
  // the means are equal. (The best-of-window rule this replaced called such a run still rising.)
  const auto flat =
      validation_trend({{650, 38}, {700, 39}, {750, 37}, {800, 38}, {850, 37}, {900, 40}, {950, 37}}, 1000, true);
  REQUIRE(flat.has_value());
  CHECK(flat->gain == doctest::Approx(0.0));
  CHECK(flat->levelled_off);
  // A gain just under and just over 0.5 points.
  CHECK(validation_trend({{700, 30}, {900, 30.49}}, 1000, true)->levelled_off);
  CHECK_FALSE(validation_trend({{700, 30}, {900, 30.51}}, 1000, true)->levelled_off);
  // The loss (lower is better): the relative fall, levelled below 1 %.
  const auto loss = validation_trend({{700, 2.0}, {750, 2.0}, {900, 1.99}}, 1000, /*higher_is_better=*/false);
  REQUIRE(loss.has_value());
  CHECK(loss->gain == doctest::Approx(0.005));
  CHECK(loss->levelled_off);
  CHECK_FALSE(validation_trend({{700, 2.0}, {900, 1.9}}, 1000, false)->levelled_off);
  // Too few validations: none in the fourth fifth, or none in the last.
  CHECK_FALSE(validation_trend({{500, 30}, {900, 31}}, 1000, true).has_value());
  CHECK_FALSE(validation_trend({{700, 30}, {750, 31}}, 1000, true).has_value());
  CHECK_FALSE(validation_trend({}, 1000, true).has_value());
}

TEST_CASE("study: the heads' table pairs each system with the baseline on the seeds both measured") {
  // A run's heads curve: its last entry with the measure counts (a later entry without it does not).
  auto run = [](const char* system, int64_t seed, double dunn, double bleu) {
    return json{{"system", system},
                {"seed", seed},
                {"heads", json::array({{{"update", 100}, {"dunn", dunn - 1}},
                                       {{"update", 200}, {"dunn", dunn}},
                                       {{"update", 300}, {"silhouette", 0.5}}})},
                {"eval", {{"test", {{"bleu", bleu}}}}}};
  };
  // ght has seeds 1, 2, 3; vanilla lacks seed 3 and has a run without head measurements (seed 4).
  const json t = {
      {"systems", {"vanilla", "ght"}},
      {"baseline", "vanilla"},
      {"seeds", {1, 2, 3, 4}},
      {"splits", json::array({{{"split", "test"}, {"metrics", {{{"metric", "bleu"}, {"higher_is_better", true}}}}}})},
      {"runs", json::array({run("ght", 3, 9.0, 35),
                            run("vanilla", 1, 1.0, 30),
                            run("ght", 1, 2.0, 31),
                            run("vanilla", 2, 3.0, 32),
                            run("ght", 2, 5.0, 34),
                            {{"system", "vanilla"}, {"seed", 4}, {"eval", json::object()}}})}};
  CHECK(last_head_value(t["runs"][0], "dunn") == 9.0);
  CHECK(std::isnan(last_head_value(t["runs"][5], "dunn")));
  const json c = compactness_table(t);
  // Only Dunn and Silhouette were measured; homogenization and diversification get no rows.
  REQUIRE(c["measures"].size() == 2);
  const json& dunn = c["measures"][1];
  CHECK(dunn["measure"] == "dunn");
  const json& vanilla = dunn["systems"][0];
  CHECK(vanilla["seeds"] == json({1, 2}));
  CHECK(vanilla["mean"].get<double>() == doctest::Approx(2.0));
  CHECK_FALSE(vanilla.contains("vs_baseline"));
  const json& ght = dunn["systems"][1];
  CHECK(ght["seeds"] == json({1, 2, 3}));
  CHECK(ght["values"] == json({2.0, 5.0, 9.0}));
  // Paired on seeds 1 and 2: differences 1 and 2, mean 1.5; t = 1.5 / (sd 1/√2 / √2) = 3 on 1 degree of
  // freedom (a Cauchy), p = 1 − (2/π)·atan(3); both differences positive, sign test p = 2 · (1/2)² = 0.5.
  const json& vs = ght["vs_baseline"];
  CHECK(vs["seeds"] == json({1, 2}));
  CHECK(vs["mean_diff"].get<double>() == doctest::Approx(1.5));
  CHECK(vs["t_p"].get<double>() == doctest::Approx(1 - 2 / M_PI * std::atan(3.0)));
  CHECK(vs["sign_plus"] == 2);
  CHECK(vs["sign_p"].get<double>() == doctest::Approx(0.5));
  // Fig. 2: the five runs with a Dunn index rank alike by Dunn and by BLEU: ρ = 1, exact p = 2/5!.
  const json& fig2 = c["against_scores"][1];
  CHECK(fig2["measure"] == "dunn");
  CHECK(fig2["runs"] == 5);
  CHECK(fig2["systems"] == 2);
  CHECK(fig2["rho"].get<double>() == doctest::Approx(1.0));
  CHECK(fig2["p_exact"] == true);
  CHECK(fig2["p"].get<double>() == doctest::Approx(2.0 / 120));
}

TEST_CASE("study: the progress rate follows the last window, not the whole history") {
  TrailingRate r(/*window_seconds=*/600);
  CHECK(r.per_second() == 0); // nothing measured yet
  r.add(0, 100);
  CHECK(r.per_second() == 0);
  CHECK(r.seconds() == 0);
  // A slow first hour: 1 update every 10 s.
  for (int t = 60; t <= 3600; t += 60) r.add(t, 100 + t / 10.0);
  CHECK(r.per_second() == doctest::Approx(0.1));
  CHECK(r.seconds() == doctest::Approx(600)); // only the window, not the hour
  // Then 1 update a second: after a whole window the rate is the new one, though the mean since
  // the start is still far below it.
  for (int t = 3660; t <= 3900; t += 60) r.add(t, 460 + (t - 3600));
  CHECK(r.per_second() == doctest::Approx((760.0 - 430.0) / 600)); // the window straddles the change
  for (int t = 3960; t <= 4800; t += 60) r.add(t, 460 + (t - 3600));
  CHECK(r.per_second() == doctest::Approx(1.0));
  // Evaluating: no update for a whole window.
  for (int t = 4860; t <= 5400; t += 60) r.add(t, 1660);
  CHECK(r.per_second() == 0);
  CHECK(r.seconds() == doctest::Approx(600));
}

TEST_CASE("study: a bad study file is refused naming the field") {
  auto refuse = [](const std::string& text, const std::string& field) {
    try {
      (void)parse_study(text, "s.json", PILLARS_SOURCE_DIR "/experiments/studies");
      FAIL("accepted: ", text);
    } catch (const InputError& e) {
      CHECK_MESSAGE(std::string(e.what()).find(field) != std::string::npos, e.what());
      CHECK(std::string(e.what()).rfind("s.json", 0) == 0);
    }
  };
  const std::string ok_systems = R"("systems": [{"name": "a"}], "base": "../ght/vanilla.json")";
  refuse("{", "invalid JSON");
  refuse("[]", "JSON object");
  refuse(R"({"seeds": [1], "updates": 10})", "\"systems\"");
  refuse(R"({)" + ok_systems + R"(, "updates": 10})", "\"seeds\"");
  refuse(R"({)" + ok_systems + R"(, "seeds": [1, 1], "updates": 10})", "\"seeds[1]\"");
  refuse(R"({)" + ok_systems + R"(, "seeds": [-1], "updates": 10})", "\"seeds[0]\"");
  refuse(R"({)" + ok_systems + R"(, "seeds": [1]})", "\"updates\"");
  refuse(R"({)" + ok_systems + R"(, "seeds": [1], "updates": "10"})", "\"updates\"");
  refuse(R"({)" + ok_systems + R"(, "seeds": [1], "updates": 10, "baseline": "b"})", "\"baseline\"");
  refuse(R"({)" + ok_systems + R"(, "seeds": [1], "updates": 10, "budget": 3})", "\"budget\"");
  refuse(R"({)" + ok_systems + R"(, "seeds": [1], "updates": 10, "isa": "sse9"})", "\"isa\"");
  refuse(R"({)" + ok_systems + R"(, "seeds": [1], "updates": 10, "device": "tpu"})", "\"device\"");
  refuse(R"({)" + ok_systems + R"(, "seeds": [1], "updates": 10, "threads": 0})", "\"threads\"");
  refuse(R"({"systems": [{"name": "a"}, {"name": "a"}], "base": "../ght/vanilla.json", "seeds": [1], "updates": 10})",
         "\"systems[1].name\"");
  refuse(R"({"systems": [{"name": "../x"}], "base": "../ght/vanilla.json", "seeds": [1], "updates": 10})",
         "\"systems[0].name\"");
  refuse(R"({"systems": [{"name": "a"}], "seeds": [1], "updates": 10})", "\"systems[0].experiment\"");
  refuse(
      R"({"systems": [{"name": "a", "set": {"optim.lr": -1}}], "base": "../ght/vanilla.json", "seeds": [1], "updates": 10})",
      "system \"a\"");
  refuse(R"({"systems": [{"name": "a", "set": [1]}], "base": "../ght/vanilla.json", "seeds": [1], "updates": 10})",
         "\"systems[0].set\"");
  refuse(R"({)" + ok_systems + R"(, "seeds": [1], "updates": 10, "test_splits": ["no_such_split"]})", "no_such_split");
  refuse(R"({"systems": [{"name": "a", "copy_from": "/abs/b"}], "base": "../ght/vanilla.json", "seeds": [1],
             "updates": 10})",
         "\"systems[0].copy_from\"");
  refuse(R"({"systems": [{"name": "a"}, {"name": "b", "prune_from": "a", "copy_from": "../x/b"}],
             "base": "../ght/ght.json", "seeds": [1], "updates": 10})",
         "\"systems[1].copy_from\"");
}

TEST_CASE("study: S3's V2S runs are S2's GHT-PS runs (copy_from), the same settings seed by seed") {
  const std::string dir = PILLARS_SOURCE_DIR "/experiments/studies/";
  const StudySpec s2 = load_study(dir + "s2-table1.json"), s3 = load_study(dir + "s3-which-heads.json");
  const SystemSpec& v2s = s3.systems.front();
  REQUIRE(v2s.copy_from == "../s2-table1/ght-ps");
  const auto ght_ps =
      std::find_if(s2.systems.begin(), s2.systems.end(), [](const SystemSpec& x) { return x.name == "ght-ps"; });
  REQUIRE(ght_ps != s2.systems.end());
  CHECK(s2.threads == s3.threads);
  CHECK(s2.isa == s3.isa);
  CHECK(s2.precision == s3.precision);
  CHECK(s2.device == s3.device);
  for (int64_t seed : s3.seeds)
    CHECK(to_json(run_experiment_config(s3, v2s, seed)).dump() ==
          to_json(run_experiment_config(s2, *ght_ps, seed)).dump());
}

TEST_CASE("study: the project's study files load, and each run's overrides pin the budget") {
  for (const char* name : {"s1-gct-scale.json", "s2-table1.json", "s3-which-heads.json", "s4-wikitext2.json"}) {
    const StudySpec s = load_study(std::string(PILLARS_SOURCE_DIR "/experiments/studies/") + name);
    REQUIRE(!s.systems.empty());
    const Experiment e = run_experiment_config(s, s.systems.back(), s.seeds.front());
    CHECK(e.train.max_updates == s.updates);
    CHECK(e.train.max_minutes == 0);
    CHECK(e.train.patience == 0);
    CHECK(e.seed == s.seeds.front());
  }
}
