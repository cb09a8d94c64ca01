#!/usr/bin/env python3
"""Collects finished runs into the Markdown table of docs/RESULTS.md: mean ± std over seeds.

    tools/results_table.py runs/results            # runs named <system>-s<seed>

A run directory counts when it has an eval_<split>.json; a GHT run also contributes its pruned/
sub-run as "<system> → pruned". Reads only what `pillars train` wrote (eval_*.json, log.jsonl);
standard library only. Parameters and FLOPs come from `pillars report` (its run table).
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


def updates(run):
    n = 0
    log = run / "log.jsonl"
    if log.exists():
        for line in log.open():
            j = json.loads(line)
            if j.get("type") == "end":
                n = j.get("update", n)
    return n


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
    rows = defaultdict(list)
    for run in sorted(pathlib.Path(root).iterdir()):
        m = re.fullmatch(r"(.+)-s(\d+)", run.name)
        if not m or not run.is_dir():
            continue
        for sub, label in ((run, m.group(1)), (run / "pruned", m.group(1) + " → pruned")):
            e = eval_file(sub) if sub.exists() else None
            if e:
                rows[label].append((int(m.group(2)), e, updates(sub)))
    print("| system | seeds | test BLEU | ppl | sentences/s (beam 5) | updates |")
    print("|---|---|---|---|---|---|")
    for label, runs in rows.items():
        seeds = ",".join(str(s) for s, _, _ in sorted(runs, key=lambda r: r[0]))
        print(f"| {label} | {seeds} | {stats([e.get('bleu') for _, e, _ in runs])} | "
              f"{stats([e.get('ppl') for _, e, _ in runs])} | {stats([e.get('sentences_per_second') for _, e, _ in runs], 1)} | "
              f"{stats([u for _, _, u in runs], 0)} |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "runs/results")
