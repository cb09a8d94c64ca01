// The statistics a study reports: how far apart two systems are, and how sure we can be.
//
// Two kinds of pairing, two kinds of test:
//
//   across seeds      A seed fixes a run's initial weights and its batch order, so system X and
//                     the baseline trained with the same seed form a pair. With n seeds the
//                     differences d_s = X_s − B_s are tested by
//                       paired_t_test   t = mean(d) / (sd(d) / √n), two-sided, n − 1 degrees of
//                                       freedom (what scipy.stats.ttest_rel computes), and
//                       sign_test       how many d_s are > 0 against Binomial(n', ½), ties
//                                       dropped, two-sided (scipy.stats.binomtest's p-value).
//   within one seed   The two systems translated the same test sentences, so a sentence is a
//                     pair. paired_bootstrap resamples the sentences with replacement (the same
//                     indices for both systems), rescores the corpus each time, and reports the
//                     real difference, a 95 % interval of the resampled differences and
//                     sacreBLEU's p-value (Koehn 2004; sacreBLEU's `--paired-bs`).
//
// A corpus metric is not a mean of sentence scores (BLEU sums n-gram counts over the corpus
// before it divides), so the bootstrap works on per-sentence *statistics*: a row of numbers per
// sentence that add up over any sample of sentences, and a function that scores a sum.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

namespace pillars::study {

// Mean and sample standard deviation (n − 1 in the denominator; 0 when n < 2).
struct MeanSd {
  double mean = 0, sd = 0;
  int64_t n = 0;
};
MeanSd mean_sd(const std::vector<double>& x);

// Student's t distribution: P(T ≤ t) with `df` degrees of freedom (df > 0).
double student_t_cdf(double t, double df);
// The regularized incomplete beta function I_x(a, b), 0 ≤ x ≤ 1, a, b > 0.
double incomplete_beta(double x, double a, double b);

struct PairedTest {
  int64_t n = 0;        // pairs used
  double mean_diff = 0; // mean of x − y
  double statistic = 0; // t (t-test) or the number of positive differences (sign test)
  double p = 1;         // two-sided
};
// The paired t-test of x against y (x[i] and y[i] are a pair). With n < 2, or all differences
// equal (sd 0), p is NaN: the test is undefined, and the table says so.
PairedTest paired_t_test(const std::vector<double>& x, const std::vector<double>& y);
// The sign test: positive against negative differences, ties (exactly equal) dropped.
PairedTest sign_test(const std::vector<double>& x, const std::vector<double>& y);

// Does one measure go with another across runs (the paper's Fig. 2: the heads' compactness against
// BLEU, one point a model)? Spearman's rank correlation ρ: Pearson's correlation of the ranks of x
// and of y (tied values get the mean of the ranks they span). A rank test, so one outlying run
// cannot make the correlation, and no straight line is assumed. Its two-sided p-value:
//   n ≤ kSpearmanExactUpTo   exact: the share of the n! pairings of y's ranks with x's whose |ρ| is
//                            at least the observed one (all equally likely when nothing relates
//                            them). With few runs the usual approximation is far off: three runs
//                            in perfect order get p = 0 from it, 1/3 exactly.
//   larger n                 Student's t with n − 2 degrees of freedom, t = ρ √((n − 2) / (1 − ρ²)),
//                            what scipy.stats.spearmanr computes.
// ρ and p are NaN where undefined: n < 3, or x or y constant.
struct Correlation {
  int64_t n = 0;
  double rho = 0, p = 1;
  bool exact = false; // p from the permutations, not from Student's t
};
constexpr int64_t kSpearmanExactUpTo = 9; // 9! = 362,880 pairings
Correlation spearman(const std::vector<double>& x, const std::vector<double>& y);

// Per-sentence statistics: rows[i] is sentence i's row; every row has the same width.
using StatRows = std::vector<std::vector<double>>;
// Scores the column sums of a sample of rows (e.g. BLEU from summed n-gram counts).
using CorpusScore = std::function<double(const std::vector<double>& sums)>;

struct BootstrapResult {
  double system = 0, baseline = 0; // the scores of the whole test set
  double diff = 0;                 // system − baseline
  double low = 0, high = 0;        // 95 % interval of the resampled differences
  double p = 1;                    // sacreBLEU's p-value for |diff|
  int64_t samples = 0;
};
// The paired bootstrap: `samples` resamples of the n sentence indices, drawn with SplitMix64 from
// `seed` (index = next() mod n: the script that checks this test draws the same indices), each
// scored for both systems. The interval is sacreBLEU's: the sorted differences at positions
// ⌊S/40⌋ and S − ⌊S/40⌋ − 1. The p-value is sacreBLEU's too: with δ_s = |score_sys − score_base|
// of resample s, centered by their mean, p = (#{δ_s − mean(δ) > |diff|} + 1) / (S + 1); where the
// two systems score exactly the same (diff = 0), p = 1 (sacreBLEU's rule would give 1/(S + 1)).
BootstrapResult paired_bootstrap(const StatRows& system, const StatRows& baseline, const CorpusScore& score,
                                 int64_t samples = 1000, uint64_t seed = 12345);

// Has validation levelled off by the end of a budget of `budget` updates? `points` are the
// validations (update, score) of one run, in any order. The mean score of the validations in the
// last fifth of the budget (updates in (0.8·budget, budget]) against the mean of those in the fifth
// before it ((0.6·budget, 0.8·budget]): the gain is after − before where higher is better, else
// the relative fall of the loss, (before − after) / before. It has levelled off when the gain is
// below 0.5 (BLEU or ROUGE points) or 1 % (of the loss). Means, not bests: one validation moves by
// about a BLEU point from the next on Multi30k, and the best of a window reads one lucky
// validation as a rise. nullopt where either fifth holds no validation.
struct ValidationTrend {
  double before = 0, after = 0; // the two fifths' mean scores
  double gain = 0;
  bool levelled_off = false;
};
std::optional<ValidationTrend> validation_trend(const std::vector<std::pair<double, double>>& points, double budget,
                                                bool higher_is_better);

} // namespace pillars::study
