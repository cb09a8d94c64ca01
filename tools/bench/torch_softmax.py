#!/usr/bin/env python3
"""The reference side of `pillars bench softmax --device cuda`: torch.softmax over the last axis
of fp32 rows on the GPU, `total` floats per tensor, for each row length. Prints one JSON line
{"1024": ms, ...} (medians of CUDA-event timings after warm-up)."""
import argparse
import json

import torch

from cuda_timing import median_ms


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--total", type=int, required=True)
    ap.add_argument("--lens", required=True)
    ap.add_argument("--repeats", type=int, default=10)
    args = ap.parse_args()
    x = torch.randn(args.total, device="cuda")
    out = torch.empty_like(x)
    result = {}
    for length in (int(s) for s in args.lens.split(";") if s):
        rows = x.view(-1, length)
        result[str(length)] = median_ms(lambda: torch.softmax(rows, dim=-1, out=out.view(-1, length)), args.repeats)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
