#!/usr/bin/env python3
"""The reference side of `pillars bench attention --device cuda`: PyTorch's
scaled_dot_product_attention on the GPU, once with its flash backend and once with its cuDNN
backend (cuDNN's fused attention), bf16, on the shapes the C++ side passes. Prints one JSON line:
{"flash": {"T4096_D64": {"fwd": ms, "fwd_bwd": ms}, ...}, "cudnn": {...}}. Times are medians of
CUDA-event timings after warm-up; the layout is PyTorch's native (B, H, T, D)."""
import argparse
import json

import torch

from cuda_timing import median_ms
from torch.nn.attention import SDPBackend, sdpa_kernel


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", required=True, help="B,H,T,D,causal;...")
    ap.add_argument("--repeats", type=int, default=10)
    args = ap.parse_args()
    result = {}
    for name, backend in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
        result[name] = {}
        for spec in filter(None, args.shapes.split(";")):
            B, H, T, D, causal = (int(x) for x in spec.split(","))
            key = f"T{T}_D{D}" + ("_causal" if causal else "")
            q, k, v, do = (torch.randn(B, H, T, D, device="cuda", dtype=torch.bfloat16) for _ in range(4))
            for t in (q, k, v):
                t.requires_grad_(True)
            try:
                with sdpa_kernel(backend):
                    fwd = lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))
                    def fwd_bwd():
                        out = fwd()
                        out.backward(do)
                    with torch.no_grad():
                        f_ms = median_ms(fwd, args.repeats)
                    fb_ms = median_ms(fwd_bwd, args.repeats)
                result[name][key] = {"fwd": f_ms, "fwd_bwd": fb_ms}
            except RuntimeError:
                pass  # backend not available for this shape
            del q, k, v, do
    print(json.dumps(result))


if __name__ == "__main__":
    main()
