#!/usr/bin/env python3
"""Writes bleu_nltk.json: BLEU cross-checks computed with NLTK, independently of our C++ code.

Run with Debian's python3 + python3-nltk (NLTK 3.8):
    /usr/bin/python3 tests/golden/metrics/make_bleu_golden.py

sacreBLEU and fairseq are not installable here, so this file holds the configurations in which
NLTK's `corpus_bleu` computes the same number as they do:

  * NLTK's modified precision (clipped by the max reference count), closest reference length
    (shorter on a tie), corpus-level sums and brevity penalty are sacreBLEU's definitions.
  * NLTK's SmoothingFunction().method3 ("NIST geometric sequence smoothing": the k-th order with
    no match gets precision 1 / (2^k * total)) is sacreBLEU's default "exp" smoothing.
  * NLTK without smoothing equals sacreBLEU smooth_method="none" and fairseq's scorer, provided no
    order has zero matches (NLTK then returns a tiny number instead of 0) and no hypothesis has
    fewer than 4 tokens (NLTK's per-sentence denominator is max(1, #n-grams)); both are asserted.

Inputs are synthetic sentences from a fixed vocabulary (punctuation, numbers, HTML entities,
non-ASCII letters, Unicode spaces, trailing whitespace) drawn with a seeded RNG, so the file is
reproducible and carries no third-party text. For the 13a configurations the lines are tokenized
here with the regular expressions of sacreBLEU's tokenizer_13a.py / tokenizer_re.py
(mjpost/sacrebleu, commit 880ce6fea08a4f6c8055240845e341efe14bdd71), transcribed below and run by
CPython's `re` — the engine sacreBLEU itself uses; the tokenized lines are stored too and our 13a
tokenizer is tested against them line by line.
"""
import json
import math
import random
import re
from fractions import Fraction

import nltk
from nltk.translate.bleu_score import (SmoothingFunction, brevity_penalty, closest_ref_length,
                                       corpus_bleu, modified_precision)

# --- sacreBLEU's 13a tokenizer (patterns as in tokenizer_re.py) -------------------------------
_RE_13A = [
    (re.compile(r'([\{-\~\[-\` -\&\(-\+\:-\@\/])'), r' \1 '),
    (re.compile(r'([^0-9])([\.,])'), r'\1 \2 '),
    (re.compile(r'([\.,])([^0-9])'), r' \1 \2'),
    (re.compile(r'([0-9])(-)'), r'\1 \2 '),
]


def tok_13a(line):
    line = line.replace('<skipped>', '')
    line = line.replace('-\n', '')
    line = line.replace('\n', ' ')
    if '&' in line:
        line = line.replace('&quot;', '"')
        line = line.replace('&amp;', '&')
        line = line.replace('&lt;', '<')
        line = line.replace('&gt;', '>')
    line = f' {line} '
    for pattern, repl in _RE_13A:
        line = pattern.sub(repl, line)
    return ' '.join(line.split())


def preprocess(line, tokenize, lowercase):
    # sacreBLEU's BLEU._preprocess_segment: lowercase, then tokenize(line.rstrip())
    if lowercase:
        line = line.lower()
    line = line.rstrip()
    return tok_13a(line) if tokenize == '13a' else line


# --- synthetic corpus --------------------------------------------------------------------------
WORDS = ("the a of to and in is it that was for on are with as his they be at one have this from "
         "or had by hot word but what some we can out other were all there when up use your how "
         "said an each she which do their time if will way about many then them write would like "
         "so these her long make thing see him two has look more day could go come did number "
         "sound no most people my over know water than call first who may down side been now find "
         "The It We They She He In On At This That Yesterday Paris London Obama Mr. Dr. U.S. "
         "don't it's can't o'clock rock'n'roll e-mail well-known state-of-the-art 3.14 1,000 "
         "2-3 1990s 10-year-old 5% $20 #1 C++ a/b x=y (see) [note] {x} <tag> \"quoted\" 'single' "
         "&quot;hi&quot; &amp; &lt;b&gt; AT&T a&b <skipped> end. end, etc... ?! wow! why? "
         "semi;colon colon: dash - em—dash “curly” ‘apos’ … "
         "Ärger naïve café straße İstanbul ΣΟΦΙΑ ΟΔΟΣ ΟΔΟΣ. Σ \u212a Kelvin Ωmega Москва 東京 élan ÉCOLE").split()
SPACES = [" "] * 30 + ["  ", "\t", "\u00a0", "\u3000", "\u2009", " \u00a0 "]
TAILS = [""] * 12 + [" ", "  ", "\t", "\n", " \n", "\u00a0", "\u3000"]


def sentence(rng, lo=6, hi=22):
    return [rng.choice(WORDS) for _ in range(rng.randint(lo, hi))]


def perturb(rng, words, p_drop, p_sub, p_ins):
    out = []
    for w in words:
        r = rng.random()
        if r < p_drop:
            continue
        if r < p_drop + p_sub:
            out.append(rng.choice(WORDS))
            continue
        out.append(w)
        if rng.random() < p_ins:
            out.append(rng.choice(WORDS))
    if len(out) > 3 and rng.random() < 0.3:
        i = rng.randrange(len(out) - 1)
        out[i], out[i + 1] = out[i + 1], out[i]
    return out


def render(rng, words):
    s = ""
    for i, w in enumerate(words):
        if i:
            s += rng.choice(SPACES)
        s += w
    # occasional embedded line break (13a joins "-\n" and turns "\n" into a space)
    if len(words) > 4 and rng.random() < 0.05:
        k = s.find(" ", len(s) // 2)
        if k > 0:
            s = s[:k] + rng.choice(["\n", "-\n"]) + s[k + 1:]
    return s + rng.choice(TAILS)


def make_corpus(seed, n, heavy):
    rng = random.Random(seed)
    hyps, ref0, ref1 = [], [], []
    for _ in range(n):
        base = sentence(rng)
        if heavy:
            h = perturb(rng, base, 0.3, 0.5, 0.1)
        else:
            h = perturb(rng, base, 0.1, 0.12, 0.1)
        while len(h) < 6:
            h.append(rng.choice(WORDS))
        r1 = perturb(rng, base, 0.05, 0.1, 0.05)
        hyps.append(render(rng, h))
        ref0.append(render(rng, base))
        ref1.append("" if rng.random() < 0.1 else render(rng, r1))
    return hyps, [ref0, ref1]


# --- NLTK side -----------------------------------------------------------------------------------
def nltk_bleu(hyps, refs, tokenize, lowercase, smoothing, streams):
    hyp_tok, ref_tok = [], []
    for i, h in enumerate(hyps):
        rs = [refs[k][i] for k in streams]
        rs = [r for r in rs if r != ""]  # sacreBLEU drops empty reference lines
        hyp_tok.append(preprocess(h, tokenize, lowercase).split())
        ref_tok.append([preprocess(r, tokenize, lowercase).split() for r in rs])
    assert min(len(h) for h in hyp_tok) >= 4, "a hypothesis shorter than 4 tokens"
    counts, totals = [0] * 4, [0] * 4
    sys_len = ref_len = 0
    for rs, h in zip(ref_tok, hyp_tok):
        for n in range(1, 5):
            p = modified_precision(rs, h, n)
            counts[n - 1] += p.numerator
            totals[n - 1] += p.denominator
        sys_len += len(h)
        ref_len += closest_ref_length(rs, len(h))
    assert all(t > 0 for t in totals)
    sf = SmoothingFunction()
    if smoothing == "exp":
        assert counts[0] > 0
        score = corpus_bleu(ref_tok, hyp_tok, smoothing_function=sf.method3)
    else:
        assert all(c > 0 for c in counts), "unsmoothed NLTK differs from sacreBLEU on a zero count"
        score = corpus_bleu(ref_tok, hyp_tok)
    res = {"score": 100.0 * score, "counts": counts, "totals": totals,
           "sys_len": sys_len, "ref_len": ref_len}
    # The printed lines, formatted here from NLTK's numbers with the format strings of
    # sacreBLEU's BLEUScore / Score.format (sacrebleu/metrics/bleu.py, base.py) and fairseq's
    # Scorer.result_string (fairseq/scoring/bleu.py).
    bp = brevity_penalty(ref_len, sys_len)
    prec, zeros = [], 0
    for c, t in zip(counts, totals):
        if c == 0 and smoothing == "exp":
            zeros += 1
            prec.append(100.0 / (2 ** zeros * t))
        else:
            prec.append(100.0 * c / t)
    res["sacrebleu_line"] = (f"BLEU = {res['score']:.2f} " + "/".join(f"{p:.1f}" for p in prec) +
                             f" (BP = {bp:.3f} ratio = {sys_len / ref_len:.3f} hyp_len = {sys_len:d} "
                             f"ref_len = {ref_len:d})")
    fmt = "BLEU{} = {:2.2f}, {:2.1f}/{:2.1f}/{:2.1f}/{:2.1f} (BP={:.3f}, ratio={:.3f}, syslen={}, reflen={})"
    res["fairseq_line"] = fmt.format(4, res["score"], *[100.0 * c / t for c, t in zip(counts, totals)],
                                     min(1, math.exp(1 - ref_len / sys_len)), sys_len / ref_len, sys_len,
                                     ref_len)
    return res


def main():
    corpora = {}
    for name, seed, n, heavy in [("main", 20261122, 240, False), ("sparse", 7, 6, True)]:
        hyps, refs = make_corpus(seed, n, heavy)
        cases = {
            "13a_exp": nltk_bleu(hyps, refs, "13a", False, "exp", [0, 1]),
            "13a_lowercase_exp": nltk_bleu(hyps, refs, "13a", True, "exp", [0, 1]),
            "13a_exp_ref0": nltk_bleu(hyps, refs, "13a", False, "exp", [0]),
        }
        if name == "main":
            cases["none_none"] = nltk_bleu(hyps, refs, "none", False, "none", [0, 1])
            cases["fairseq_ref0"] = nltk_bleu(hyps, refs, "none", False, "none", [0])
        else:
            c = cases["13a_exp"]["counts"]
            assert 0 in c and c[0] > 0, c  # this corpus is there to exercise exp smoothing
        corpora[name] = {
            "hyps": hyps,
            "refs": refs,
            "tok13a_hyps": [preprocess(h, "13a", False) for h in hyps],
            "tok13a_refs": [[preprocess(r, "13a", False) for r in s] for s in refs],
            "tok13a_lc_hyps": [preprocess(h, "13a", True) for h in hyps],
            "expected": cases,
        }
    out = {"generator": "tests/golden/metrics/make_bleu_golden.py",
           "nltk_version": nltk.__version__, "corpora": corpora}
    with open(__file__.replace("make_bleu_golden.py", "bleu_nltk.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=0)
        f.write("\n")
    for name, c in corpora.items():
        for k, v in c["expected"].items():
            print(name, k, v["sacrebleu_line"])
    print(corpora["main"]["expected"]["fairseq_ref0"]["fairseq_line"])


if __name__ == "__main__":
    main()
