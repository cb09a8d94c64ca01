#!/usr/bin/env python3
"""Reference values for tests/test_ops_nn.cpp "op: cross_entropy matches PyTorch".

Prints the loss and d loss / d logits of
    torch.nn.functional.cross_entropy(logits, targets, ignore_index=-1, label_smoothing=0.1)
(reduction "mean") for the small deterministic case below, as C++ initializers to paste into the
test. The logits are a closed formula (no RNG), rounded to float32 exactly as the C++ test rounds
them; the loss and gradient are then computed in float64 so the reference carries no f32 error.

Run: python3 tests/golden/make_ce_reference.py   (written with PyTorch 1.13)
"""
import math

import torch
import torch.nn.functional as F

N, V = 6, 7
IGNORE = -1
SMOOTHING = 0.1
TARGETS = [3, 0, IGNORE, 6, 2, IGNORE]


def logit(n, v):
    return 2.5 * math.sin(1.3 * n + 0.7 * v + 0.1 * n * v)


def main():
    x32 = torch.tensor([[logit(n, v) for v in range(V)] for n in range(N)], dtype=torch.float32)
    x = x32.double().requires_grad_(True)
    t = torch.tensor(TARGETS, dtype=torch.long)
    loss = F.cross_entropy(x, t, ignore_index=IGNORE, label_smoothing=SMOOTHING)
    loss.backward()
    print(f"// torch {torch.__version__}: F.cross_entropy(ignore_index={IGNORE}, label_smoothing={SMOOTHING})")
    print(f"const double kTorchLoss = {loss.item():.17g};")
    grads = ", ".join(f"{g:.17g}" for g in x.grad.flatten().tolist())
    print(f"const std::vector<double> kTorchGrad = {{{grads}}};")


if __name__ == "__main__":
    main()
