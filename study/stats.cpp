// See stats.h.
#include "study/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/error.h"
#include "base/splitmix64.h"

namespace pillars::study {

MeanSd mean_sd(const std::vector<double>& x) {
  MeanSd r;
  r.n = static_cast<int64_t>(x.size());
  if (x.empty()) return r;
  for (double v : x) r.mean += v;
  r.mean /= static_cast<double>(x.size());
  if (x.size() < 2) return r;
  double ss = 0;
  for (double v : x) ss += (v - r.mean) * (v - r.mean);
  r.sd = std::sqrt(ss / static_cast<double>(x.size() - 1));
  return r;
}

namespace {

// The continued fraction of I_x(a, b) (the form that converges fast for x < (a+1)/(a+b+2)):
//   I_x(a, b) = x^a (1−x)^b / (a B(a, b)) · 1/(1+ d_1/(1+ d_2/(1+ …)))
//   d_{2m+1} = −(a+m)(a+b+m) x / ((a+2m)(a+2m+1)),   d_{2m} = m(b−m) x / ((a+2m−1)(a+2m)),
// evaluated by the modified Lentz method (each convergent from the last two, with tiny values in
// place of zeros so no step divides by 0).
double beta_continued_fraction(double x, double a, double b) {
  constexpr double kTiny = 1e-300, kEps = 1e-15;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1 / d;
  double f = d;
  for (int m = 1; m <= 10000; ++m) {
    const double m2 = 2.0 * m;
    for (const double coef :
         {m * (b - m) * x / ((a + m2 - 1) * (a + m2)), -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1))}) {
      d = 1 + coef * d;
      if (std::fabs(d) < kTiny) d = kTiny;
      c = 1 + coef / c;
      if (std::fabs(c) < kTiny) c = kTiny;
      d = 1 / d;
      f *= c * d;
    }
    if (std::fabs(c * d - 1) < kEps) break;
  }
  return f;
}

} // namespace

double incomplete_beta(double x, double a, double b) {
  PILLARS_CHECK(a > 0 && b > 0 && x >= 0 && x <= 1, "incomplete_beta: need a, b > 0 and 0 <= x <= 1");
  if (x == 0 || x == 1) return x;
  // x^a (1−x)^b / B(a, b), with B through lgamma.
  const double front =
      std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x));
  // Symmetry I_x(a, b) = 1 − I_{1−x}(b, a) keeps the fraction where it converges.
  if (x < (a + 1) / (a + b + 2)) return front * beta_continued_fraction(x, a, b) / a;
  return 1 - front * beta_continued_fraction(1 - x, b, a) / b;
}

double student_t_cdf(double t, double df) {
  PILLARS_CHECK(df > 0, "student_t_cdf: df must be > 0");
  if (std::isinf(t)) return t > 0 ? 1.0 : 0.0;
  // P(|T| > |t|) = I_{df/(df+t²)}(df/2, 1/2); each tail is half of it.
  const double tail = 0.5 * incomplete_beta(df / (df + t * t), 0.5 * df, 0.5);
  return t > 0 ? 1 - tail : tail;
}

PairedTest paired_t_test(const std::vector<double>& x, const std::vector<double>& y) {
  PILLARS_CHECK(x.size() == y.size(), "paired_t_test: ", x.size(), " values against ", y.size());
  std::vector<double> d(x.size());
  for (size_t i = 0; i < x.size(); ++i) d[i] = x[i] - y[i];
  const MeanSd m = mean_sd(d);
  PairedTest r;
  r.n = m.n, r.mean_diff = m.mean;
  r.statistic = r.p = std::numeric_limits<double>::quiet_NaN();
  if (m.n < 2 || m.sd == 0) return r;
  r.statistic = m.mean / (m.sd / std::sqrt(static_cast<double>(m.n)));
  r.p = 2 * student_t_cdf(-std::fabs(r.statistic), static_cast<double>(m.n - 1));
  return r;
}

PairedTest sign_test(const std::vector<double>& x, const std::vector<double>& y) {
  PILLARS_CHECK(x.size() == y.size(), "sign_test: ", x.size(), " values against ", y.size());
  int64_t plus = 0, n = 0;
  double sum = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sum += x[i] - y[i];
    if (x[i] == y[i]) continue;
    ++n;
    if (x[i] > y[i]) ++plus;
  }
  PairedTest r;
  r.n = n, r.statistic = static_cast<double>(plus);
  r.mean_diff = x.empty() ? 0 : sum / static_cast<double>(x.size());
  if (n == 0) return r; // p = 1: nothing to count
  // Two-sided exact binomial test at ½: the probability of every outcome no more likely than the
  // one observed (scipy's rule, with its relative tolerance of 1e-7 for equal probabilities).
  auto pmf = [n](int64_t k) {
    return std::exp(std::lgamma(n + 1.0) - std::lgamma(k + 1.0) - std::lgamma(n - k + 1.0) -
                    static_cast<double>(n) * std::log(2.0));
  };
  const double observed = pmf(plus);
  double p = 0;
  for (int64_t k = 0; k <= n; ++k)
    if (pmf(k) <= observed * (1 + 1e-7)) p += pmf(k);
  r.p = std::min(1.0, p);
  return r;
}

namespace {

// The ranks of x, 1 .. n, ties given the mean of the ranks they span (1, 2.5, 2.5, 4).
std::vector<double> ranks(const std::vector<double>& x) {
  std::vector<size_t> order(x.size());
  for (size_t i = 0; i < x.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&x](size_t a, size_t b) { return x[a] < x[b]; });
  std::vector<double> r(x.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && x[order[j + 1]] == x[order[i]]) ++j;
    const double mean_rank = 0.5 * static_cast<double>(i + j) + 1; // positions i .. j hold ranks i+1 .. j+1
    for (size_t k = i; k <= j; ++k) r[order[k]] = mean_rank;
    i = j + 1;
  }
  return r;
}

} // namespace

Correlation spearman(const std::vector<double>& x, const std::vector<double>& y) {
  PILLARS_CHECK(x.size() == y.size(), "spearman: ", x.size(), " values against ", y.size());
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  Correlation c;
  c.n = static_cast<int64_t>(x.size());
  c.rho = kNaN, c.p = kNaN;
  if (c.n < 3) return c;
  const std::vector<double> rx = ranks(x), ry = ranks(y);
  const double mean = 0.5 * static_cast<double>(c.n + 1); // the mean of any ranking of n values
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < rx.size(); ++i) {
    sxy += (rx[i] - mean) * (ry[i] - mean);
    sxx += (rx[i] - mean) * (rx[i] - mean);
    syy += (ry[i] - mean) * (ry[i] - mean);
  }
  if (sxx == 0 || syy == 0) return c; // x or y constant: no ranking to correlate
  c.rho = std::clamp(sxy / std::sqrt(sxx * syy), -1.0, 1.0);
  if (c.n <= kSpearmanExactUpTo) {
    // Every pairing of y's ranks with x's: ρ moves only through Σ (rx − mean)(ry − mean), so count
    // the pairings whose |sum| reaches the observed |sxy| (less a rounding margin).
    std::vector<size_t> order(rx.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    int64_t as_extreme = 0, pairings = 0;
    do {
      double s = 0;
      for (size_t i = 0; i < rx.size(); ++i) s += (rx[i] - mean) * (ry[order[i]] - mean);
      ++pairings;
      if (std::fabs(s) >= std::fabs(sxy) - 1e-9 * std::sqrt(sxx * syy)) ++as_extreme;
    } while (std::next_permutation(order.begin(), order.end()));
    c.p = static_cast<double>(as_extreme) / static_cast<double>(pairings);
    c.exact = true;
    return c;
  }
  const double df = static_cast<double>(c.n - 2);
  if (std::fabs(c.rho) == 1) { // t is infinite
    c.p = 0;
    return c;
  }
  const double t = c.rho * std::sqrt(df / ((1 + c.rho) * (1 - c.rho)));
  c.p = std::min(1.0, 2 * student_t_cdf(-std::fabs(t), df));
  return c;
}

BootstrapResult paired_bootstrap(const StatRows& system, const StatRows& baseline, const CorpusScore& score,
                                 int64_t samples, uint64_t seed) {
  const size_t n = system.size();
  PILLARS_CHECK(n > 0 && baseline.size() == n, "paired_bootstrap: ", n, " sentences against ", baseline.size());
  PILLARS_CHECK(samples >= 1, "paired_bootstrap: samples must be >= 1");
  const size_t width = system[0].size();
  for (const StatRows* rows : {&system, &baseline})
    for (const auto& r : *rows) PILLARS_CHECK(r.size() == width, "paired_bootstrap: rows of different widths");

  auto sum_rows = [width](const StatRows& rows, const std::vector<size_t>& idx) {
    std::vector<double> s(width, 0.0);
    for (size_t i : idx)
      for (size_t c = 0; c < width; ++c) s[c] += rows[i][c];
    return s;
  };
  std::vector<size_t> all(n);
  for (size_t i = 0; i < n; ++i) all[i] = i;
  BootstrapResult r;
  r.samples = samples;
  r.system = score(sum_rows(system, all));
  r.baseline = score(sum_rows(baseline, all));
  r.diff = r.system - r.baseline;

  SplitMix64 rng(seed);
  std::vector<double> diffs(static_cast<size_t>(samples));
  std::vector<size_t> idx(n);
  for (int64_t s = 0; s < samples; ++s) {
    for (size_t i = 0; i < n; ++i) idx[i] = static_cast<size_t>(rng.next() % n);
    diffs[static_cast<size_t>(s)] = score(sum_rows(system, idx)) - score(sum_rows(baseline, idx));
  }
  // p: how often a resample's |difference|, centered on the resamples' mean, exceeds the real one.
  double mean_abs = 0;
  for (double d : diffs) mean_abs += std::fabs(d);
  mean_abs /= static_cast<double>(samples);
  int64_t above = 0;
  for (double d : diffs)
    if (std::fabs(d) - mean_abs > std::fabs(r.diff)) ++above;
  r.p = static_cast<double>(above + 1) / static_cast<double>(samples + 1);
  if (r.diff == 0) r.p = 1; // identical scores: nothing to attribute to chance (sacreBLEU would give 1/(S+1))
  std::sort(diffs.begin(), diffs.end());
  const size_t lo = static_cast<size_t>(samples / 40);
  r.low = diffs[lo];
  r.high = diffs[static_cast<size_t>(samples) - lo - 1];
  return r;
}

std::optional<ValidationTrend> validation_trend(const std::vector<std::pair<double, double>>& points, double budget,
                                                bool higher_is_better) {
  std::vector<double> before, after; // scores in the fourth fifth, in the last
  for (const auto& [update, score] : points) {
    if (update > 0.8 * budget && update <= budget)
      after.push_back(score);
    else if (update > 0.6 * budget && update <= 0.8 * budget)
      before.push_back(score);
  }
  if (before.empty() || after.empty()) return std::nullopt;
  ValidationTrend t;
  t.before = mean_sd(before).mean, t.after = mean_sd(after).mean;
  t.gain = higher_is_better ? t.after - t.before : (t.before - t.after) / std::max(1e-12, std::abs(t.before));
  t.levelled_off = t.gain < (higher_is_better ? 0.5 : 0.01);
  return t;
}

} // namespace pillars::study
