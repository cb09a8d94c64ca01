#!/usr/bin/env python3
"""Writes porter_vocab.tsv (word -> NLTK Porter stem) and rouge_tokens.json (rouge-score
tokenization of sample lines). Independent reference for metrics/porter.cpp and rouge_tokenize.

Run with Debian's python3 + python3-nltk (NLTK 3.8), from the repository root, with PILLARS_DATA
naming the dataset mirror (as the Makefile sets it):
    PILLARS_DATA=/path/to/datasets /usr/bin/python3 tests/golden/metrics/make_porter_golden.py

* porter_vocab.tsv: every distinct \\w+ word (Python's Unicode \\w) of the SAMSum test set
  (test.dialogue + test.summary) and of tinyshakespeare, plus a few edge cases, each with
  nltk.stem.porter.PorterStemmer().stem(word) — the default NLTK_EXTENSIONS mode, which is what
  rouge-score's DefaultTokenizer builds (`porter.PorterStemmer()`, rouge/tokenizers.py).
  One "word<TAB>stem" per line, sorted; no word contains a tab or newline.
* rouge_tokens.json: lines (SAMSum test summaries, the first 200, and synthetic lines exercising
  Unicode) with their tokens under rouge-score's tokenize() with and without the stemmer. The
  function below is rouge/tokenize.py (google-research/google-research, commit
  7ce52c05d1ef3f54233faf14772609f45994a7ae) transcribed: lowercase, [^a-z0-9]+ -> " ", split on
  \\s+, stem tokens longer than 3 characters, keep tokens matching ^[a-z0-9]+$.
"""
import json
import lzma
import os
import re

import nltk
from nltk.stem import porter

STEMMER = porter.PorterStemmer()


def rouge_tokenize(text, stemmer):
    text = text.lower()
    text = re.sub(r"[^a-z0-9]+", " ", text)
    tokens = re.split(r"\s+", text)
    if stemmer:
        tokens = [stemmer.stem(x) if len(x) > 3 else x for x in tokens]
    return [x for x in tokens if re.match(r"^[a-z0-9]+$", x)]


def shared_dir():
    d = os.environ.get("PILLARS_DATA", "")
    if not d or not os.path.isdir(d):
        raise SystemExit("PILLARS_DATA must name the dataset mirror (a directory)")
    return d


def read_xz(path):
    with lzma.open(path, "rt", encoding="utf-8") as f:
        return f.read()


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ds = shared_dir()
    samsum = os.path.join(ds, "samsum", "plain")
    texts = [read_xz(os.path.join(samsum, f)) for f in ("test.dialogue.xz", "test.summary.xz")]
    texts.append(read_xz(os.path.join(ds, "tinyshakespeare", "input.txt.xz")))
    words = set()
    for t in texts:
        words.update(re.findall(r"\w+", t))
    words.update(["a", "ab", "abc", "SKIES", "Skies", "skies", "dying", "news", "innings", "howe",
                  "succeed", "yyyy", "y", "ay", "ies", "ied", "dies", "died", "spied", "eed", "feed",
                  "agreed", "ing", "sing", "hopping", "falling", "fizzed", "filing", "happy", "enjoy",
                  "fly", "relational", "conditional", "rational", "valenci", "digitizer", "radicalli",
                  "analogousli", "vietnamization", "geologi", "theologi", "hopefulli", "triplicate",
                  "electriciti", "gyroscopic", "adoption", "homologou", "controll", "roll",
                  "generalization", "oscillators", "İstanbul", "ΟΔΟΣ", "Σ", "ΚΑΛΗΜΕΡΑ", "Ärger"])
    words = sorted(w for w in words if "\t" not in w and "\n" not in w)
    with open(os.path.join(here, "porter_vocab.tsv"), "w", encoding="utf-8") as f:
        for w in words:
            f.write(f"{w}\t{STEMMER.stem(w)}\n")

    summaries = texts[1].split("\n")[:200]
    synthetic = ["İstanbul K\u212aelvin ΟΔΟΣ café naïve — 3.14, 1,000; e-mail: a_b@c.de",
                 "  Running   runners RAN\tquickly!!  \n second LINE here ",
                 "", "/", "ünïcödé only", "The quick brown fox jumps over the lazy dog"]
    lines = synthetic + summaries
    out = {"generator": "tests/golden/metrics/make_porter_golden.py", "nltk_version": nltk.__version__,
           "cases": [{"text": t, "tokens": rouge_tokenize(t, None),
                      "stemmed": rouge_tokenize(t, STEMMER)} for t in lines]}
    with open(os.path.join(here, "rouge_tokens.json"), "w", encoding="utf-8") as f:
        # one case per line
        f.write('{"generator": %s, "nltk_version": %s, "cases": [\n' % (
            json.dumps(out["generator"]), json.dumps(out["nltk_version"])))
        f.write(",\n".join(json.dumps(c, ensure_ascii=False, separators=(",", ":"))
                            for c in out["cases"]))
        f.write("\n]}\n")
    print(len(words), "words;", len(lines), "tokenized lines")


if __name__ == "__main__":
    main()
