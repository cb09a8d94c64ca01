#!/usr/bin/env python3
"""A synthetic copy task for checking that an encoder-decoder learns to read long sources.

Each source is N random words (N uniform in [MIN_LEN, MAX_LEN]) from a fixed 200-word vocabulary;
its target is the first 6 and the last 6 words. Nothing about the target can be guessed without
attending to the source, so the validation loss stays near log(vocabulary) until cross-attention
has learned to find positions, and then falls steeply. docs/RESULTS.md uses it to tell a
long-source defect from slow learning.

    tools/copy_task.py OUT_DIR MIN_LEN MAX_LEN
    build/pillars data import OUT_DIR --name copy-MIN-MAX --source src --target tgt --force
    build/pillars train OUT_DIR/experiment.json --out runs/copy-MIN-MAX

Writes OUT_DIR/{train,valid,test}.{src,tgt} (10,000 / 200 / 200 pairs, fairseq layout, fixed
seed) and OUT_DIR/experiment.json (the `small` model, 6 minutes, greedy decoding).

    tools/copy_task.py score runs/copy-MIN-MAX/eval_test.hyp OUT_DIR/test.tgt

prints, for each of the 12 target positions, the fraction of test hypotheses with the right word
there (the first 6 need absolute positions, the last 6 the distance to the end).
"""
import json
import os
import random
import sys


def score(hyp_path, ref_path):
    hyps = [line.split() for line in open(hyp_path)]
    refs = [line.split() for line in open(ref_path)]
    if len(hyps) != len(refs):
        sys.exit(f"copy_task.py score: {len(hyps)} hypotheses for {len(refs)} references")
    right = [sum(k < len(h) and h[k] == r[k] for h, r in zip(hyps, refs)) / len(refs) for k in range(12)]
    print("first 6:", " ".join(f"{a:.2f}" for a in right[:6]), "| last 6:", " ".join(f"{a:.2f}" for a in right[6:]))


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "score":
        return score(sys.argv[2], sys.argv[3])
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    out, lo, hi = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    if not 12 <= lo <= hi:
        sys.exit("copy_task.py: need 12 <= MIN_LEN <= MAX_LEN")
    rng = random.Random(1)
    letters = "abcdefghijklmnopqrstuvwxyz"
    # 300 random words of 3-7 letters, deduplicated, the first 200 in sorted order.
    vocab = sorted({"".join(rng.choice(letters) for _ in range(rng.randint(3, 7))) for _ in range(300)})[:200]
    os.makedirs(out, exist_ok=True)
    for split, n in (("train", 10000), ("valid", 200), ("test", 200)):
        with open(f"{out}/{split}.src", "w") as src, open(f"{out}/{split}.tgt", "w") as tgt:
            for _ in range(n):
                w = [rng.choice(vocab) for _ in range(rng.randint(lo, hi))]
                src.write(" ".join(w) + "\n")
                tgt.write(" ".join(w[:6] + w[-6:]) + "\n")
    # Padded tokens per batch: about 20-30 sources at the lengths docs/RESULTS.md uses.
    max_tokens = 1024 if hi <= 40 else 4096 if hi <= 160 else 8192
    # The budget in updates: what the recorded runs of docs/RESULTS.md made at these lengths.
    updates = 2191 if hi <= 40 else 1082 if hi <= 160 else 685
    experiment = {
        "description": f"Diagnostic copy task: the first and last 6 of {lo}-{hi} random words.",
        "task": "translation",
        "data": {"dataset": f"copy-{lo}-{hi}", "source": "src", "target": "tgt", "bpe_merges": 2000,
                 "max_source_len": 512, "max_target_len": 128, "max_tokens": max_tokens},
        "model": {"config": "small", "dropout": 0.1},
        "optim": {"lr": 1e-3, "warmup_updates": 400},
        "train": {"max_epochs": 30, "max_updates": updates, "best_metric": "bleu", "valid_max_sentences": 100},
        "eval": {"beam": 1, "checkpoint": "last"},
    }
    with open(f"{out}/experiment.json", "w") as f:
        json.dump(experiment, f, indent=2)
        f.write("\n")
    print(f"wrote {out}: 10,000 training pairs of {lo}-{hi} words; import it as copy-{lo}-{hi}")


if __name__ == "__main__":
    main()
