#!/usr/bin/env python3
"""Writes multi30k_bpe_first1000.codes, the golden file for text/bpe_learn.cpp: the first 1,000
BPE merges learned jointly on the Multi30k training set (tok/train.lc.norm.tok.de + .en).

It is a deliberately naive implementation of the definition subword-nmt's learn_bpe.py follows:
every word becomes its characters with "</w>" glued to the last one; each step recounts all
adjacent pairs from scratch, takes the maximum of (count, pair) (ties: the larger pair, comparing
the first symbol and then the second by code point), writes it, and merges every occurrence in
every word left to right; stop below count 2. Recounting everything is slow (about two CPU minutes for
1,000 merges) but leaves nothing to get wrong, which is the point of an oracle.

    PILLARS_DATA=/work/shared/datasets python3 tests/golden/text/make_bpe_golden.py \
        > tests/golden/text/multi30k_bpe_first1000.codes
"""
import collections
import lzma
import os

N = 1000
data = os.environ["PILLARS_DATA"]
counts = collections.Counter()
for lang in ("de", "en"):
    path = f"{data}/multi30k-de-en/tok/train.lc.norm.tok.{lang}.xz"
    with lzma.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            for word in line.strip("\r\n ").split(" "):
                if word:
                    counts[word] += 1

words = [(list(w[:-1]) + [w[-1] + "</w>"], c) for w, c in counts.items()]
print("#version: 0.2")
for _ in range(N):
    stats = collections.Counter()
    for syms, c in words:
        for pair in zip(syms, syms[1:]):
            stats[pair] += c
    if not stats:
        break
    best = max(stats, key=lambda p: (stats[p], p))
    if stats[best] < 2:
        break
    print(best[0], best[1])
    a, b = best
    for syms, _ in words:
        out, i = [], 0
        while i < len(syms):
            if i + 1 < len(syms) and syms[i] == a and syms[i + 1] == b:
                out.append(a + b)
                i += 2
            else:
                out.append(syms[i])
                i += 1
        syms[:] = out
