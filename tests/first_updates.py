#!/usr/bin/env python3
"""What must not change: the first updates of every experiment file, pinned.

Every file in experiments/ is trained for its first 20 updates by the real `pillars` binary, with
the same seed, two threads and a small slice of its data in small batches (the table below), then, for the GHT
experiments, through its prune step (V2S votes, importance or gates on a few batches) and 20 more
updates of fine-tuning: both phases share train.max_updates = 40 and prune.finetune_updates = 20
holds the second half back for the fine-tuning, which carries on phase 1's optimizer and schedule
(prune.finetune_schedule "continue", the default). Beside the files, a few variants are pinned
(NAME@VARIANT: VARIANTS below), e.g. ght/ght.json@restart, the fine-tuning as it was before
"continue" became the default: a fresh optimizer for one epoch after the 20 updates, whose pins
were recorded before that change and must not move. Everything the run writes that a user reads is collected:

  log.jsonl            every training line (loss, lr, the GCT / regularizer terms) and validation
  head_metrics.jsonl   the head-diversity measurements
  votes.json           V2S's votes and groups (importance.json: Michel et al.'s scores)
  prune.json           which heads stayed, parameter counts
  pruned/...           the same files of the fine-tuning phase

and compared with tests/golden/first_updates.json.xz, recorded by this script from the binary before
a refactor. The runs use the kernels' AVX2 path on every machine (PILLARS_ISA=avx2): the result of a
run depends on its seed, its thread count and the kernels' instruction set, and AVX-512 kernels,
which sum in another order, drift from AVX2 ones by ~1e-6 in the losses after 20 updates and by far
more in head metrics that are small differences of large sums. Numbers must agree to a relative 1e-5
(the same arithmetic on another machine gives the same bits); words and flags exactly; timings
and paths are left out. A field the golden file lacks is reported, not failed (new output is
allowed); a field that disappeared or changed fails.

  tests/first_updates.py --record BUILD/pillars [EXPERIMENT ...]   (re)write the golden entries (default: all,
                                                                    variants included)
  tests/first_updates.py --check BUILD/pillars EXPERIMENT           exit 0 same, 1 changed, 77 skip
  tests/first_updates.py --check --sanitized BUILD/pillars EXPERIMENT

--sanitized is for a binary built with -DPILLARS_SANITIZE: instrumentation changes how GCC schedules
and contracts the floating-point arithmetic, so after 20 updates such a build differs from the
Release one by about 1e-5, more in quantities that are small differences of large ones (head
metrics), and a vote may then flip. There the check is that the whole pipeline runs without a
sanitizer report, writes every pinned value, with the same words, and that the first phase's
losses agree to a relative 1e-3 (a change of behavior, such as another dropout stream, moves them
by more than 1e-2).

CTest runs --check once per experiment file (CMakeLists.txt). Needs $PILLARS_DATA (the dataset
mirror); an experiment whose data is not there is skipped with the reason (exit 77).
"""
import argparse
import json
import lzma
import math
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOLDEN = os.path.join(ROOT, "tests", "golden", "first_updates.json.xz")  # xz: 1.3 MB of JSON → a few hundred KB
UPDATES = 20
ISA = "avx2"  # the instruction set the pinned runs use, whatever the machine has (see run())
REL_TOL = 1e-5
SANITIZED_LOSS_TOL = 1e-3

# Per dataset: a slice of the training split and batch sizes that keep the whole check at a few
# seconds (the model is always the experiment's own): about 20-25 batches an epoch, so the first
# epoch holds the 20 updates and fine-tuning is one short epoch.
DATA_OVERRIDES = {
    "multi30k-de-en": {"data.train_fraction": 0.012, "data.max_tokens": 256},
    "samsum": {"data.train_fraction": 0.004, "data.max_tokens": 512, "data.max_source_len": 128, "data.max_target_len": 48},
    "ptb": {"data.train_fraction": 0.0055, "data.max_tokens": 256, "data.block_size": 64},
    "wikitext-2": {"data.train_fraction": 0.0025, "data.max_tokens": 256, "data.block_size": 64},
    "tinyshakespeare": {"data.train_fraction": 0.005, "data.max_tokens": 256, "data.block_size": 64},
}

# Pinned variants of experiment files, NAME@VARIANT: the file with these settings on top.
# "restart": fine-tuning as before prune.finetune_schedule "continue" became the default, with the
# overrides of that time (20 updates, then one epoch of fine-tuning), one file per prune method.
VARIANTS = {"restart": {"prune.finetune_schedule": "restart"}}
PINNED_VARIANTS = ["ght/ght.json@restart", "ght/michel.json@restart", "ght/voita.json@restart"]

# Written by the run but not what it computed: wall-clock times and speeds.
TIMING_KEYS = {"seconds", "elapsed_seconds", "tokens_per_s", "sentences_per_s", "minutes"}
# Where it ran (the log's start lines): CPU model, commit and the like differ between machines.
MACHINE_KEYS = {"machine"}


def overrides(experiment, variant=None):
    data = experiment.get("data", {})
    # A pruning run under "continue" shares train.max_updates between its phases: UPDATES for phase
    # 1 (prune.finetune_updates is held back from it), UPDATES for the fine-tuning.
    shared = experiment.get("prune", {}).get("method", "none") != "none" and variant != "restart"
    sets = {
        "train.max_updates": 2 * UPDATES if shared else UPDATES,
        "train.max_minutes": 0,
        "train.log_every": 1,
        "train.valid_max_sentences": 10,
        "eval.batch_sentences": 10,
        "heads.metrics_sentences": 16,
        "prune.vote_batches": 4,
        "prune.finetune_epochs": 1,
        "prune.finetune_minutes": 0,
        "prune.finetune_updates": UPDATES if shared else 0,
        "threads": 2,
        **DATA_OVERRIDES[data["dataset"]],
        **VARIANTS.get(variant, {}),
    }
    if experiment.get("train", {}).get("device") == "cuda":  # the recipe, pinned on the CPU
        sets["train.device"] = "cpu"
        sets["train.precision"] = "fp32"
    return sets


def strip(value, run_dir):
    """The run's outputs without timings, the run directory's path replaced by RUN, floats rounded."""
    if isinstance(value, dict):
        return {k: strip(v, run_dir) for k, v in value.items() if k not in TIMING_KEYS | MACHINE_KEYS}
    if isinstance(value, list):
        return [strip(v, run_dir) for v in value]
    if isinstance(value, str):
        return value.replace(run_dir, "RUN")
    if isinstance(value, float) and math.isfinite(value):
        return float(f"{value:.9g}")  # nine significant digits: ten thousand times finer than REL_TOL
    return value


def flatten(value, prefix, out):
    """Nested JSON → {"log.jsonl[3].loss": leaf}, what the comparison walks."""
    if isinstance(value, dict):
        for k, v in value.items():
            flatten(v, f"{prefix}.{k}" if prefix else k, out)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            flatten(v, f"{prefix}[{i}]", out)
    else:
        out[prefix] = value
    return out


def collect(run_dir):
    """Every output of the run: {"log.jsonl": [line, ...], "pruned/prune.json": [doc], ...}."""
    out = {}
    for sub in ["", "pruned"]:
        for name in ["log.jsonl", "head_metrics.jsonl", "votes.json", "importance.json", "prune.json"]:
            path = os.path.join(run_dir, sub, name)
            if not os.path.exists(path):
                continue
            with open(path) as f:
                text = f.read()
            docs = [json.loads(l) for l in text.splitlines() if l.strip()] if name.endswith(".jsonl") else [json.loads(text)]
            out[os.path.join(sub, name)] = strip(docs, run_dir)
    return out


def run(binary, name):
    name, _, variant = name.partition("@")
    if variant and variant not in VARIANTS:
        raise SystemExit(f"{name}@{variant}: no such variant (VARIANTS: {', '.join(VARIANTS)})")
    path = os.path.join(ROOT, "experiments", name)
    with open(path) as f:
        experiment = json.load(f)
    dataset = experiment.get("data", {}).get("dataset")
    if dataset not in DATA_OVERRIDES:
        return None, f"dataset {dataset} is not in the offline mirror (import it with `pillars data import`)"
    if not os.environ.get("PILLARS_DATA"):
        return None, "PILLARS_DATA is not set (the dataset mirror)"
    tmp = tempfile.mkdtemp(prefix="pillars_first_updates_")
    try:
        run_dir = os.path.join(tmp, "run")
        cmd = [binary, "train", path, "--out", run_dir, "--no-eval", "--quiet"]
        for k, v in overrides(experiment, variant or None).items():
            cmd += ["--set", f"{k}={json.dumps(v)}"]
        # CTest runs two of these at once on two cores: idle OpenMP threads must sleep, not spin,
        # or each run steals the other's core (the results do not depend on it).
        # The kernels run on their AVX2 path on every machine (PILLARS_ISA, kernels/cpu/cpu_features.h):
        # AVX-512 kernels sum in another order, which moves the losses by ~1e-6 after 20 updates and
        # small head metrics (differences of large sums) by up to 1e-1 relative. Every x86-64 machine
        # CI has run on has AVX2, so the pins are the same arithmetic everywhere.
        env = dict(os.environ, OMP_WAIT_POLICY=os.environ.get("OMP_WAIT_POLICY", "PASSIVE"), PILLARS_ISA=ISA)
        p = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if p.returncode != 0:
            raise SystemExit(f"{name}: `{' '.join(cmd)}` exited {p.returncode}:\n{p.stderr}")
        return collect(run_dir), None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def save(golden):
    """One line per experiment, keys sorted: a re-record shows as a readable diff per experiment."""
    os.makedirs(os.path.dirname(GOLDEN), exist_ok=True)
    with lzma.open(GOLDEN, "wt") as f:
        f.write("{\n")
        names = sorted(golden)
        for i, name in enumerate(names):
            doc = json.dumps(golden[name], separators=(",", ":"), sort_keys=True)
            f.write(f"{json.dumps(name)}: {doc}{',' if i + 1 < len(names) else ''}\n")
        f.write("}\n")


def same(a, b):
    if isinstance(a, bool) or isinstance(b, bool) or not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
        return a == b
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= REL_TOL * max(abs(a), abs(b), 1e-30)


def same_sanitized(key, want, got):
    """The sanitized build's check: present, the same kind of value, equal words in the log, and the
    first phase's losses within SANITIZED_LOSS_TOL."""
    if key not in got:
        return False
    have = got[key]
    if want is None or have is None:
        return want is None and have is None
    if isinstance(want, str) or isinstance(want, bool):
        return type(have) is type(want) and (have == want or not key.startswith("log.jsonl"))
    if not isinstance(have, (int, float)) or isinstance(have, bool):
        return False
    if key.startswith("log.jsonl[") and key.endswith("].loss"):
        return abs(have - want) <= SANITIZED_LOSS_TOL * max(abs(have), abs(want), 1e-30)
    return math.isfinite(have) == math.isfinite(want)


def experiments():
    names = []
    for d, _, files in os.walk(os.path.join(ROOT, "experiments")):
        names += [os.path.relpath(os.path.join(d, f), os.path.join(ROOT, "experiments")) for f in files if f.endswith(".json")]
    return sorted(names) + PINNED_VARIANTS


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--record", action="store_true", help="write the golden entries of the experiments (default: all)")
    mode.add_argument("--check", action="store_true", help="compare one experiment with its golden entry")
    ap.add_argument("--sanitized", action="store_true", help="the binary is a sanitizer build: see the top of this file")
    ap.add_argument("binary", help="the pillars binary")
    ap.add_argument("experiments", nargs="*", help="paths relative to experiments/")
    a = ap.parse_args()

    golden = {}
    if os.path.exists(GOLDEN):
        with lzma.open(GOLDEN, "rt") as f:
            golden = json.load(f)
    if a.record:
        for name in a.experiments or experiments():
            got, skip = run(a.binary, name)
            if skip:
                print(f"{name}: not recorded: {skip}")
                continue
            golden[name] = got
            print(f"{name}: {len(flatten(got, '', {}))} values recorded")
        save(golden)
        return 0

    if len(a.experiments) != 1:
        ap.error("--check takes one experiment")
    name = a.experiments[0]
    got, skip = run(a.binary, name)
    if skip:
        print(f"skipped: {name}: {skip}")
        return 77
    if name not in golden:
        print(f"{name}: no golden entry: record it with tests/first_updates.py --record BINARY {name}")
        return 1
    want, got = flatten(golden[name], "", {}), flatten(got, "", {})
    if a.sanitized:
        bad = [f"  {k}: was {want[k]!r}, now {got.get(k, 'missing')!r}" for k in sorted(want) if not same_sanitized(k, want[k], got)]
    else:
        bad = [f"  {k}: was {want[k]!r}, now {got[k]!r}" if k in got else f"  {k}: was {want[k]!r}, now missing"
               for k in sorted(want) if k not in got or not same(want[k], got[k])]
    new = sorted(set(got) - set(want))
    if new:
        print(f"{name}: {len(new)} new values (not in the golden file), e.g. {new[0]}")
    if bad:
        print(f"{name}: {len(bad)} of {len(want)} pinned values changed:\n" + "\n".join(bad[:40]))
        return 1
    what = "present, with the same words and first-phase losses (sanitized build)" if a.sanitized else "unchanged"
    print(f"{name}: all {len(want)} pinned values {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
