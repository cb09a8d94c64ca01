#!/usr/bin/env python3
"""Collects finished runs into the Markdown table of docs/RESULTS.md: mean ± std over seeds.

    tools/results_table.py runs/results            # runs named <system>-s<seed> (or just <system>)

A run directory counts when it has an eval_<split>.json; a GHT run also contributes its pruned/
sub-run as "<system> → pruned". The columns are the metrics the eval files hold (BLEU, ROUGE,
perplexity, decoding speed), then the validation perplexity at the end of training and the number
of updates. Reads only what `pillars train` wrote (eval_*.json, log.jsonl); standard library only.
Parameters and FLOPs come from `pillars report` (its run table).
"""
import json
import math
import pathlib
import re
import sys
from collections import defaultdict


def load(path):
    with open(path) as f:
        return json.load(f)


def eval_file(run):
    files = sorted(run.glob("eval_*.json"))
    return load(files[0]) if files else None


def log_summary(run):
    """(updates at the end of training, validation perplexity of the last validation)."""
    n, ppl = 0, None
    log = run / "log.jsonl"
    if log.exists():
        for line in log.open():
            j = json.loads(line)
            if j.get("type") == "end":
                n = j.get("update", n)
            elif j.get("type") == "valid":
                ppl = j.get("ppl", ppl)
    return n, ppl


# (eval-file key, column title, digits), in table order; a column appears when some run has it.
COLUMNS = [("bleu", "test BLEU", 2), ("rouge1", "ROUGE-1", 2), ("rouge2", "ROUGE-2", 2), ("rougeL", "ROUGE-L", 2),
           ("ppl", "test ppl", 2), ("sentences_per_second", "sentences/s", 1)]


def stats(values, digits=2):
    """mean ± sample standard deviation (just the value for one seed)."""
    values = [v for v in values if v is not None]
    if not values:
        return "n/a"
    mean = sum(values) / len(values)
    if len(values) == 1:
        return f"{mean:.{digits}f}"
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))
    return f"{mean:.{digits}f} ± {std:.{digits}f}"


def main(root):
    rows = defaultdict(list)  # label -> [(seed, eval json, updates, last validation ppl)]
    for run in sorted(pathlib.Path(root).iterdir()):
        m = re.fullmatch(r"(.+?)(?:-s(\d+))?", run.name)
        if not run.is_dir():
            continue
        seed = int(m.group(2)) if m.group(2) else None
        for sub, label in ((run, m.group(1)), (run / "pruned", m.group(1) + " → pruned")):
            e = eval_file(sub) if sub.exists() else None
            if e:
                rows[label].append((seed, e, *log_summary(sub)))
    columns = [c for c in COLUMNS if any(c[0] in e for runs in rows.values() for _, e, _, _ in runs)]
    titles = ["system", "seeds"] + [t for _, t, _ in columns] + ["valid ppl at the end", "updates"]
    print("| " + " | ".join(titles) + " |")
    print("|" + "---|" * len(titles))
    for label, runs in rows.items():
        runs.sort(key=lambda r: r[0] or 0)
        seeds = ",".join(str(s) for s, _, _, _ in runs if s is not None) or "—"
        cells = [label, seeds] + [stats([e.get(key) for _, e, _, _ in runs], digits) for key, _, digits in columns]
        cells += [stats([p for _, _, _, p in runs]), stats([u for _, _, u, _ in runs], 0)]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "runs/results")
