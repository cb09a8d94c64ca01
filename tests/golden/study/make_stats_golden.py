#!/usr/bin/env python3
"""Writes stats_golden.json: the study statistics (study/stats.h) computed independently.

    /usr/bin/python3 tests/golden/study/make_stats_golden.py > tests/golden/study/stats_golden.json

Needs numpy and scipy (Debian: python3-numpy python3-scipy). The C++ test (tests/test_study.cpp)
checks study/stats.cpp against every value here:

  - the paired t-test against scipy.stats.ttest_rel, the sign test against scipy.stats.binomtest
    (two-sided, p = 1/2, ties dropped), Student's t CDF against scipy.stats.t.cdf and the
    regularized incomplete beta function against scipy.special.betainc;
  - Spearman's rank correlation against scipy.stats.spearmanr (ties among the values included);
    its p-value for up to 9 runs exact, counted here over every pairing of the ranks
    (itertools.permutations, and equal to scipy.stats.permutation_test's where no values tie),
    for more runs spearmanr's;
  - the paired bootstrap as sacreBLEU's paired_bs computes it (significance.py: resample the
    sentences, score both systems on each resample, the interval from the sorted differences at
    S//40 and S - S//40 - 1, p = (#{|d_s| - mean|d| > |d|} + 1) / (S + 1)), with BLEU computed from
    summed sufficient statistics as sacreBLEU's BLEU.compute_bleu does (exp smoothing). Only the
    resampled indices are shared with the C++ code: SplitMix64 from the seed, index = next() % n,
    written out here from its definition.
"""
import json
import math

import numpy as np
from scipy import special, stats

MASK = (1 << 64) - 1


def splitmix64(seed):
    state = seed & MASK
    while True:
        state = (state + 0x9E3779B97F4A7C15) & MASK
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        yield z ^ (z >> 31)


def bleu(sums):
    """sacreBLEU's compute_bleu (exp smoothing, order 4) on [sys_len, ref_len, matches1..4, totals1..4]."""
    sys_len, ref_len = sums[0], sums[1]
    correct, total = sums[2:6], sums[6:10]
    precisions = [0.0] * 4
    smooth = 1.0
    for n in range(4):
        if total[n] == 0:
            break
        if correct[n] == 0:
            smooth *= 2
            precisions[n] = 100.0 / (smooth * total[n])
        else:
            precisions[n] = 100.0 * correct[n] / total[n]
    bp = 1.0 if sys_len >= ref_len else (math.exp(1 - ref_len / sys_len) if sys_len > 0 else 0.0)
    logs = [math.log(p) if p > 0 else -9999999999 for p in precisions]
    return bp * math.exp(sum(logs) / 4)


def ratio(sums):
    return sums[0] / sums[1]


def bootstrap(system, baseline, score, samples, seed):
    n = len(system)
    rng = splitmix64(seed)
    sys_np, base_np = np.array(system, dtype=np.float64), np.array(baseline, dtype=np.float64)
    real_sys, real_base = score(list(sys_np.sum(0))), score(list(base_np.sum(0)))
    diffs = []
    for _ in range(samples):
        idx = [next(rng) % n for _ in range(n)]
        diffs.append(score(list(sys_np[idx].sum(0))) - score(list(base_np[idx].sum(0))))
    diffs = np.array(diffs)
    real = real_sys - real_base
    centered = np.abs(diffs) - np.abs(diffs).mean()
    p = (np.sum(centered > abs(real)) + 1) / (samples + 1)
    d = np.sort(diffs)
    lo = samples // 40
    return {"system_score": real_sys, "baseline_score": real_base, "diff": real, "low": d[lo], "high": d[samples - lo - 1], "p": float(p)}


def exact_spearman_p(x, y):
    """The share of the pairings of y's ranks with x's whose |rho| reaches the observed |rho|."""
    import itertools
    rx, ry = stats.rankdata(x), stats.rankdata(y)
    observed = abs(np.corrcoef(rx, ry)[0, 1])
    hits = total = 0
    for perm in itertools.permutations(range(len(ry))):
        total += 1
        hits += abs(np.corrcoef(rx, ry[list(perm)])[0, 1]) >= observed - 1e-9
    return hits / total


def bleu_rows(rng, n, quality):
    rows = []
    for _ in range(n):
        hyp = int(rng.integers(8, 30))
        ref = max(4, hyp + int(rng.integers(-4, 5)))
        totals = [max(0, hyp - k) for k in range(4)]
        matches = [int(rng.binomial(t, quality ** (k + 1))) for k, t in enumerate(totals)]
        rows.append([hyp, ref] + matches + totals)
    return rows


def main():
    rng = np.random.default_rng(20261128)
    out = {"t_tests": [], "sign_tests": [], "t_cdf": [], "betainc": [], "bootstrap": []}
    for n in (2, 3, 5, 8):
        x = list(rng.normal(35, 1.5, n))
        y = [v - d for v, d in zip(x, rng.normal(0.4, 1.0, n))]
        r = stats.ttest_rel(x, y)
        out["t_tests"].append({"x": x, "y": y, "t": float(r.statistic), "p": float(r.pvalue)})
    for x, y in (([1, 2, 3], [0, 1, 2]), ([1, 2, 3, 4, 5], [2, 1, 0, 3, 6]), ([1, 1, 2, 5, 3, 9, 4], [0, 1, 3, 4, 1, 2, 8]),
                 ([3, 4], [3, 4]), ([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], [0, 1, 2, 3, 4, 5, 6, 7, 10, 11])):
        d = [a - b for a, b in zip(x, y)]
        plus, minus = sum(v > 0 for v in d), sum(v < 0 for v in d)
        p = stats.binomtest(plus, plus + minus, 0.5).pvalue if plus + minus else 1.0
        out["sign_tests"].append({"x": x, "y": y, "plus": plus, "n": plus + minus, "p": float(p)})
    for t in (-4.2, -1.3, -0.01, 0.0, 0.7, 2.5, 11.0):
        for df in (1, 2, 4, 9.5, 30):
            out["t_cdf"].append({"t": t, "df": df, "cdf": float(stats.t.cdf(t, df))})
    for x in (0.001, 0.2, 0.5, 0.77, 0.999):
        for a, b in ((0.5, 0.5), (1, 3), (2.5, 0.5), (10, 12)):
            out["betainc"].append({"x": x, "a": a, "b": b, "value": float(special.betainc(a, b, x))})
    base = bleu_rows(rng, 200, 0.55)
    system = bleu_rows(rng, 200, 0.553)
    out["bootstrap"].append({"score": "bleu", "samples": 1000, "seed": 7, "system": system, "baseline": base,
                             **bootstrap(system, base, bleu, 1000, 7)})
    loss_base = [[float(rng.gamma(20, 0.2)) * t, t] for t in rng.integers(5, 30, 150).tolist()]
    loss_sys = [[l * float(rng.normal(0.995, 0.08)), t] for l, t in loss_base]
    out["bootstrap"].append({"score": "ratio", "samples": 500, "seed": 12345, "system": loss_sys, "baseline": loss_base,
                             **bootstrap(loss_sys, loss_base, ratio, 500, 12345)})
    # Spearman's rho: its own generator, so that the values above stay as they were.
    rng = np.random.default_rng(20261203)
    out["spearman"] = []
    cases = [([0.78, 0.81, 0.97], [37.1, 36.2, 38.0]), ([0.01, 0.84, 0.77], [39.07, 38.88, 38.93]),
             ([1, 2, 2, 3, 5], [4.0, 4.0, 1.0, 2.5, 0.5]), ([1, 2, 3, 4, 5, 6], [2, 4, 6, 8, 10, 12])]
    x = list(rng.normal(0.8, 0.1, 8))
    cases.append((x, [35 + 40 * v + float(rng.normal(0, 2)) for v in x]))
    x = list(rng.normal(0.8, 0.1, 9))
    cases.append((x, [35 + 40 * v + float(rng.normal(0, 6)) for v in x]))
    x = list(rng.normal(0.8, 0.1, 12))
    cases.append((x, [35 + 4 * v + float(rng.normal(0, 0.6)) for v in x]))
    x = list(rng.uniform(0, 1, 30))
    cases.append((x, list(rng.uniform(0, 1, 30))))
    for x, y in cases:
        r = stats.spearmanr(x, y)
        p = float(r.pvalue)
        if len(x) <= 9:
            p = exact_spearman_p(x, y)
            if len(set(x)) == len(x) and len(set(y)) == len(y):
                perm = stats.permutation_test((x,), lambda a: stats.spearmanr(a, y).correlation,
                                              permutation_type="pairings", n_resamples=np.inf)
                assert abs(perm.pvalue - p) < 1e-12, (perm.pvalue, p)
        out["spearman"].append({"x": [float(v) for v in x], "y": [float(v) for v in y], "rho": float(r.correlation),
                                "p": p, "exact": len(x) <= 9})
    json.dump(out, __import__("sys").stdout, indent=None)
    print()


if __name__ == "__main__":
    main()
