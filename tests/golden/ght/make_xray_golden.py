#!/usr/bin/env python3
"""Writes tests/golden/ght/xray.json: the head-diversity metrics of ght/xray.h (the four metrics of
"X-Raying Multi-head Attention", raw and normalized), the per-head Gram and cosine matrices of the
three GHT feature maps, and the two GCT cosine terms, computed here in float64 PyTorch for
tests/test_ght_xray.cpp.

Independent of the C++ code: every metric is written straight from its definition, on the valid
rows gathered with Python indexing (no Gram-matrix shortcuts), e.g. Q_i = the (N, D) matrix of
head i's queries at the valid query tokens, then (Q_i^T Q_j).abs().sum().

Definitions (the same text as ght/xray.h; padding left out everywhere):
  valid query tokens   (b, t) with t < query_lengths[b]                      (N of them)
  valid keys of (b, t) j < key_lengths[b], and j <= t + Tk - Tq if causal
  (1) orthogonality         sum |Q_i^T Q_j|                 norm: / (D ||Q_i||_F ||Q_j||_F)
  (2) context non-orth.     ||C_i^T C_j||_F  (C = out)      norm: / (||C_i||_F ||C_j||_F)
  (3) output dissimilarity  -mean_n cos(o_i(n), o_j(n))     (F.cosine_similarity, eps 1e-8)
  (4) attention variance    mean over valid rows of the population variance of the row's
                            weights over its valid keys
  feature-map Gram          G_ij = <e_i, e_j>, e_h = head h's V (valid keys), O (valid queries) or
                            A (valid rows x valid keys), flattened; similarity G_ij / sqrt(G_ii G_jj)
  GCT terms (fixed labels)  homogenization = mean_i cos(e_i, mu_c(i)); diversification = mean over
                            group pairs a < b of cos(mu_a, mu_b); mu_c = mean of the members' e

Inputs are drawn from a seeded torch.Generator (the seed is written into the file), rounded to
float32 (the C++ side reads them as f32) and then used in float64. Padded positions of q, v, out
and probs hold random garbage, so a metric that forgets the padding gives a different number.
Valid rows of `out` are A V per head (as the attention op computes them); probs are a masked
softmax of random scores.

File format: {"seed": S, "generator": "...", "cases": [case, ...]}, each case
  {"name", "B", "Tq", "Tk", "H", "D", "causal", "query_lengths": [B], "key_lengths": [B],
   "q": [B*Tq*H*D], "v": [B*Tk*H*D], "out": [B*Tq*H*D], "probs": [B*H*Tq*Tk]  (row-major floats),
   "labels": [H], "groups": C,
   "expected": {"orthogonality": [[H x H]], "orthogonality_norm", "context_nonorth",
                "context_nonorth_norm", "output_dissimilarity": [[H x H]] (diagonals included),
                "attention_variance": [H],
                "gram": {"V": [[H x H]], "A": ..., "O": ...}, "similarity": {"V", "A", "O"},
                "homogenization": {"V": x, "A": x, "O": x}, "diversification": {"V", "A", "O"}}}
Floats are written with Python's repr (round-trips float64 exactly).

Usage:  /usr/bin/python3 tests/golden/ght/make_xray_golden.py [output.json]
Needs torch (CPU) only; tested with torch 1.13.
"""
import json
import os
import sys

import torch
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)
SEED = 20230714


def as_f32(x):
    """Rounds to float32 and back: the values the C++ side will read."""
    return x.float().double()


def masked_probs(gen, B, H, Tq, Tk, qlen, klen, causal):
    """(B, H, Tq, Tk): softmax of random scores over each valid row's valid keys, zero at masked
    keys; padded query rows hold garbage."""
    scores = 2.0 * torch.randn(B, H, Tq, Tk, generator=gen)
    probs = torch.rand(B, H, Tq, Tk, generator=gen)  # garbage everywhere to start with
    for b in range(B):
        for t in range(qlen[b]):
            keys = valid_keys(Tq, Tk, klen[b], t, causal)
            for h in range(H):
                row = torch.zeros(Tk)
                row[keys] = torch.softmax(scores[b, h, t, keys], dim=0)
                probs[b, h, t] = row
    return as_f32(probs)


def make_case(gen, name, B, Tq, Tk, H, D, causal, qlen, klen, labels, groups):
    # Queries with a component shared by all heads, so the heads are correlated (non-trivial metrics).
    shared = torch.randn(B, Tq, 1, D, generator=gen)
    q = as_f32(shared + 0.7 * torch.randn(B, Tq, H, D, generator=gen))
    v = as_f32(torch.randn(B, Tk, H, D, generator=gen) + 0.5 * torch.randn(B, Tk, 1, D, generator=gen))
    probs = masked_probs(gen, B, H, Tq, Tk, qlen, klen, causal)
    out = 3.0 * torch.randn(B, Tq, H, D, generator=gen)  # garbage in padded rows
    for b in range(B):
        for h in range(H):
            o = probs[b, h, : qlen[b], :] @ v[b, :, h, :]  # (qlen, D): A V (masked keys have weight 0)
            out[b, : qlen[b], h, :] = o
    out = as_f32(out)
    case = {"name": name, "B": B, "Tq": Tq, "Tk": Tk, "H": H, "D": D, "causal": causal,
            "query_lengths": qlen, "key_lengths": klen,
            "q": q.flatten().tolist(), "v": v.flatten().tolist(), "out": out.flatten().tolist(),
            "probs": probs.flatten().tolist(), "labels": labels, "groups": groups}
    case["expected"] = expected_metrics(q, v, out, probs, qlen, klen, causal, labels, groups)
    return case


def valid_rows(x, lengths, h):
    """x (B, T, H, D) -> (N, D): head h at the valid positions t < lengths[b], batch-major."""
    return torch.cat([x[b, : lengths[b], h, :] for b in range(x.shape[0])], dim=0)


def valid_keys(Tq, Tk, klen_b, t, causal):
    return [j for j in range(klen_b) if not causal or j <= t + Tk - Tq]


def expected_metrics(q, v, out, probs, qlen, klen, causal, labels, groups):
    B, Tq, H, D = q.shape
    Tk = v.shape[1]
    Q = [valid_rows(q, qlen, h) for h in range(H)]
    C = [valid_rows(out, qlen, h) for h in range(H)]
    ortho = torch.zeros(H, H)
    ortho_norm = torch.zeros(H, H)
    ctx = torch.zeros(H, H)
    ctx_norm = torch.zeros(H, H)
    dis = torch.zeros(H, H)
    for i in range(H):
        for j in range(H):
            ortho[i, j] = (Q[i].T @ Q[j]).abs().sum()
            ortho_norm[i, j] = ortho[i, j] / (D * torch.linalg.norm(Q[i]) * torch.linalg.norm(Q[j]))
            ctx[i, j] = torch.linalg.norm(C[i].T @ C[j])  # Frobenius
            ctx_norm[i, j] = ctx[i, j] / (torch.linalg.norm(C[i]) * torch.linalg.norm(C[j]))
            dis[i, j] = -F.cosine_similarity(C[i], C[j], dim=-1, eps=1e-8).mean()
    variance = torch.zeros(H)
    for h in range(H):
        row_vars = []
        for b in range(B):
            for t in range(qlen[b]):
                keys = valid_keys(Tq, Tk, klen[b], t, causal)
                row_vars.append(torch.var(probs[b, h, t, keys], unbiased=False))
        variance[h] = torch.stack(row_vars).mean()

    def fm_vectors(name):
        """(H, F): each head's feature map, flattened over its valid positions."""
        if name == "V":
            return torch.stack([valid_rows(v, klen, h).flatten() for h in range(H)])
        if name == "O":
            return torch.stack([valid_rows(out, qlen, h).flatten() for h in range(H)])
        return torch.stack([torch.cat([probs[b, h, : qlen[b], : klen[b]].flatten() for b in range(B)])
                            for h in range(H)])

    grams, sims, homog, divers = {}, {}, {}, {}
    lab = torch.tensor(labels)
    for name in ("V", "A", "O"):
        E = fm_vectors(name)
        G = E @ E.T
        grams[name] = G.tolist()
        sims[name] = (G / torch.sqrt(torch.outer(torch.diagonal(G), torch.diagonal(G)))).tolist()
        mu = [E[lab == c].mean(dim=0) for c in range(groups)]
        homog[name] = torch.stack([F.cosine_similarity(E[i], mu[labels[i]], dim=0) for i in range(H)]).mean().item()
        pairs = [F.cosine_similarity(mu[a], mu[b], dim=0) for a in range(groups) for b in range(a + 1, groups)]
        divers[name] = torch.stack(pairs).mean().item() if pairs else 0.0
    return {"orthogonality": ortho.tolist(), "orthogonality_norm": ortho_norm.tolist(),
            "context_nonorth": ctx.tolist(), "context_nonorth_norm": ctx_norm.tolist(),
            "output_dissimilarity": dis.tolist(), "attention_variance": variance.tolist(),
            "gram": grams, "similarity": sims, "homogenization": homog, "diversification": divers}


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "xray.json")
    gen = torch.Generator().manual_seed(SEED)
    cases = [
        # encoder self-attention: one full row and one padded row
        make_case(gen, "encoder self-attention", B=2, Tq=6, Tk=6, H=4, D=3, causal=False,
                  qlen=[6, 4], klen=[6, 4], labels=[0, 1, 0, 1], groups=2),
        # decoder self-attention: causal, padded
        make_case(gen, "decoder self-attention, causal", B=2, Tq=5, Tk=5, H=3, D=4, causal=True,
                  qlen=[5, 3], klen=[5, 3], labels=[0, 0, 1], groups=2),
        # cross-attention: queries from the target, keys from the source, three groups
        make_case(gen, "cross-attention", B=3, Tq=4, Tk=7, H=4, D=2, causal=False,
                  qlen=[4, 2, 3], klen=[5, 7, 1], labels=[2, 0, 1, 0], groups=3),
    ]
    doc = {"seed": SEED, "generator": "torch.Generator().manual_seed(seed), torch " + torch.__version__,
           "cases": cases}
    with open(path, "w") as f:
        json.dump(doc, f, indent=None)
        f.write("\n")
    print(f"wrote {path}: {len(cases)} cases")


if __name__ == "__main__":
    main()
