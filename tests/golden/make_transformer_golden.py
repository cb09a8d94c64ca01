#!/usr/bin/env python3
"""Writes tests/golden/transformer_1x1.json: a golden forward/backward of a tiny encoder-decoder
transformer, computed in float64 PyTorch, for tests/test_golden_transformer.cpp.

The model is written here directly with torch.nn.functional (no fairseq, no Pillars code), following
fairseq's `transformer` architecture:

  x   = sqrt(d) * embed(src) + sinusoid(positions)            positions = pad+1+t (pad rows: row pad = 0)
  enc = [ LN(x + MHA(x, x, x; key padding)) ; LN(x + fc2(act(fc1(x)))) ] per layer   (post-norm)
        [ x + MHA(LN(x), ...) ; x + fc2(act(fc1(LN(x)))) ] per layer, then LN            (pre-norm)
  dec = causal self-attention, cross-attention over enc (source key padding), FFN; same norms
  logits = dec_out @ E_dec^T      (decoder input and output embeddings tied)
  loss   = F.cross_entropy(logits, target, label_smoothing, ignore_index=pad)   (mean over non-pad)

Parameters are drawn at random here (not with Pillars' initializer: the test must not depend on it),
with layer-norm gains around 1 and non-zero biases so every gradient path carries signal. Dropout
is 0. Two cases are written: the brief's post-norm/ReLU model with separate encoder/decoder tables,
and a pre-norm/GELU model with one shared table (share_all_embeddings), so both code paths of the
C++ builder are checked; a third case repeats the first with sources of 300, 37 and 512 tokens.

File format (JSON): {"cases": [case, ...]}, each case
  {"name", "config": {...TransformerConfig fields...}, "label_smoothing",
   "batch": {"B", "Ts", "Tt"},
   "inputs": {"src_tokens": [B*Ts ints], "src_lengths": [B], "prev_output_tokens": [B*Tt], "target": [B*Tt]},
   "params": {name: {"shape": [...], "values": [row-major floats]}},
   "logits": {"shape": [B*Tt, V], "values": [...]},  "loss": float,
   "grads":  {name: {"shape": [...], "values": [...]}}}
Floats are written with Python's repr (shortest string that round-trips the float64 exactly).

Usage:  python3 tests/golden/make_transformer_golden.py [output.json]
Needs torch (CPU) only; tested with torch 1.13.
"""
import json
import math
import os
import sys

import torch
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)
F64 = torch.float64


# ---- the model, written out ----------------------------------------------------------------------

def sinusoidal_table(num_positions, dim, pad_id):
    """fairseq's SinusoidalPositionalEmbedding.get_embedding: [sin | cos], row pad_id zeroed."""
    half = dim // 2
    step = math.log(10000.0) / (half - 1)
    freqs = torch.exp(torch.arange(half, dtype=F64) * -step)                # (half)
    angles = torch.arange(num_positions, dtype=F64)[:, None] * freqs[None]  # (P, half)
    table = torch.cat([torch.sin(angles), torch.cos(angles)], dim=1)        # (P, 2*half)
    if dim % 2 == 1:
        table = torch.cat([table, torch.zeros(num_positions, 1)], dim=1)
    table[pad_id] = 0
    return table


def positions_of(tokens, pad_id):
    """fairseq's utils.make_positions: pad_id+1, pad_id+2, ... over non-pad tokens, pad_id on pads."""
    mask = tokens.ne(pad_id).long()
    return torch.cumsum(mask, dim=1) * mask + pad_id


def embed(tokens, table, cfg):
    B, T = tokens.shape
    d = cfg["d_model"]
    x = math.sqrt(d) * F.embedding(tokens, table)                            # (B, T, d)
    pos = sinusoidal_table(cfg["pad_id"] + 1 + T, d, cfg["pad_id"])
    return x + pos[positions_of(tokens, cfg["pad_id"])]


def mha(P, prefix, xq, xkv, heads, key_pad=None, causal=False):
    """fairseq MultiheadAttention, batch-first. key_pad: (B, Tk) bool, True = padding key."""
    B, Tq, d = xq.shape
    Tk = xkv.shape[1]
    dh = d // heads
    lin = lambda x, name: F.linear(x, P[f"{prefix}.{name}.weight"], P[f"{prefix}.{name}.bias"])
    q = lin(xq, "q_proj") * dh ** -0.5                                        # fairseq scales q
    k = lin(xkv, "k_proj")
    v = lin(xkv, "v_proj")
    q, k, v = [t.view(B, -1, heads, dh).transpose(1, 2) for t in (q, k, v)]   # (B, H, T, dh)
    scores = q @ k.transpose(-1, -2)                                          # (B, H, Tq, Tk)
    if key_pad is not None:
        scores = scores.masked_fill(key_pad[:, None, None, :], float("-inf"))
    if causal:
        future = torch.triu(torch.ones(Tq, Tk, dtype=torch.bool), diagonal=1 + Tk - Tq)
        scores = scores.masked_fill(future, float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    o = (probs @ v).transpose(1, 2).reshape(B, Tq, d)                         # (B, Tq, d)
    return lin(o, "out_proj")


def layer_norm(P, name, x):
    return F.layer_norm(x, (x.shape[-1],), P[f"{name}.weight"], P[f"{name}.bias"], eps=1e-5)


def sublayer(P, cfg, ln_name, x, fn):
    """Residual block: post-norm LN(x + f(x)) or pre-norm x + f(LN(x)) (dropout is 0 here)."""
    if cfg["pre_norm"]:
        return x + fn(layer_norm(P, ln_name, x))
    return layer_norm(P, ln_name, x + fn(x))


def ffn(P, cfg, prefix, x):
    act = F.relu if cfg["activation"] == "relu" else F.gelu                   # exact (erf) GELU
    h = act(F.linear(x, P[f"{prefix}.fc1.weight"], P[f"{prefix}.fc1.bias"]))
    return F.linear(h, P[f"{prefix}.fc2.weight"], P[f"{prefix}.fc2.bias"])


def forward(P, cfg, src, prev):
    pad, H = cfg["pad_id"], cfg["heads"]
    src_pad = src.eq(pad)
    enc_table = P["encoder.embed_tokens.weight"]
    dec_table = enc_table if cfg["share_all_embeddings"] else P["decoder.embed_tokens.weight"]

    x = embed(src, enc_table, cfg)
    for i in range(cfg["enc_layers"]):
        p = f"encoder.layers.{i}"
        x = sublayer(P, cfg, f"{p}.self_attn_layer_norm", x,
                     lambda h: mha(P, f"{p}.self_attn", h, h, H, key_pad=src_pad))
        x = sublayer(P, cfg, f"{p}.final_layer_norm", x, lambda h: ffn(P, cfg, p, h))
    if cfg["pre_norm"]:
        x = layer_norm(P, "encoder.layer_norm", x)
    enc = x

    y = embed(prev, dec_table, cfg)
    for i in range(cfg["dec_layers"]):
        p = f"decoder.layers.{i}"
        y = sublayer(P, cfg, f"{p}.self_attn_layer_norm", y,
                     lambda h: mha(P, f"{p}.self_attn", h, h, H, causal=True))
        y = sublayer(P, cfg, f"{p}.encoder_attn_layer_norm", y,
                     lambda h: mha(P, f"{p}.encoder_attn", h, enc, H, key_pad=src_pad))
        y = sublayer(P, cfg, f"{p}.final_layer_norm", y, lambda h: ffn(P, cfg, p, h))
    if cfg["pre_norm"]:
        y = layer_norm(P, "decoder.layer_norm", y)
    return F.linear(y, dec_table)                                             # (B, Tt, V)


# ---- parameters and inputs -----------------------------------------------------------------------

def parameter_shapes(cfg):
    d, f, V = cfg["d_model"], cfg["ffn"], cfg["vocab"]
    shapes = {"encoder.embed_tokens.weight": (V, d)}
    if not cfg["share_all_embeddings"]:
        shapes["decoder.embed_tokens.weight"] = (V, d)

    def attn(prefix):
        for proj in ("q_proj", "k_proj", "v_proj", "out_proj"):
            shapes[f"{prefix}.{proj}.weight"] = (d, d)
            shapes[f"{prefix}.{proj}.bias"] = (d,)

    def norm(name):
        shapes[f"{name}.weight"] = (d,)
        shapes[f"{name}.bias"] = (d,)

    def ffn_params(prefix):
        shapes[f"{prefix}.fc1.weight"] = (f, d)
        shapes[f"{prefix}.fc1.bias"] = (f,)
        shapes[f"{prefix}.fc2.weight"] = (d, f)
        shapes[f"{prefix}.fc2.bias"] = (d,)

    for i in range(cfg["enc_layers"]):
        p = f"encoder.layers.{i}"
        attn(f"{p}.self_attn"); norm(f"{p}.self_attn_layer_norm")
        ffn_params(p); norm(f"{p}.final_layer_norm")
    if cfg["pre_norm"]:
        norm("encoder.layer_norm")
    for i in range(cfg["dec_layers"]):
        p = f"decoder.layers.{i}"
        attn(f"{p}.self_attn"); norm(f"{p}.self_attn_layer_norm")
        attn(f"{p}.encoder_attn"); norm(f"{p}.encoder_attn_layer_norm")
        ffn_params(p); norm(f"{p}.final_layer_norm")
    if cfg["pre_norm"]:
        norm("decoder.layer_norm")
    return shapes


def random_parameters(cfg, gen):
    P = {}
    for name, shape in parameter_shapes(cfg).items():
        if "embed_tokens" in name:
            t = torch.randn(shape, generator=gen) * cfg["d_model"] ** -0.5
            t[cfg["pad_id"]] = 0                                              # fairseq zeroes the pad row
        elif "layer_norm" in name and name.endswith(".weight"):
            t = 1.0 + 0.2 * torch.randn(shape, generator=gen)
        elif name.endswith(".bias"):
            t = 0.1 * torch.randn(shape, generator=gen)
        else:                                                                 # a Linear weight (out, in)
            t = torch.randn(shape, generator=gen) * shape[1] ** -0.5
        P[name] = t.requires_grad_(True)
    return P


def right_padded(rows, T, pad):
    return torch.tensor([r + [pad] * (T - len(r)) for r in rows], dtype=torch.long)


def make_case(name, cfg, label_smoothing, seed, src_lengths=(5, 3, 4), tgt_lengths=(4, 2, 3)):
    gen = torch.Generator().manual_seed(seed)
    P = random_parameters(cfg, gen)
    pad, V = cfg["pad_id"], cfg["vocab"]
    src_lengths, tgt_lengths = list(src_lengths), list(tgt_lengths)
    B, Ts, Tt = len(src_lengths), max(src_lengths), max(tgt_lengths)

    def tokens(n):  # ids in [2, V): never pad (1) or bos (0); eos = 2 may occur, as in real data
        return (torch.randint(2, V, (n,), generator=gen)).tolist()

    src = right_padded([tokens(n) for n in src_lengths], Ts, pad)
    tgt_rows = [tokens(n - 1) + [2] for n in tgt_lengths]                     # each target ends with eos
    target = right_padded(tgt_rows, Tt, pad)
    prev = right_padded([[2] + r[:-1] for r in tgt_rows], Tt, pad)            # fairseq: eos, then shifted

    logits = forward(P, cfg, src, prev).reshape(B * Tt, V)
    loss = F.cross_entropy(logits, target.reshape(-1), ignore_index=pad,
                           label_smoothing=label_smoothing, reduction="mean")
    loss.backward()

    flat = lambda t: [float(v) for v in t.detach().reshape(-1).tolist()]
    tensor = lambda t: {"shape": list(t.shape), "values": flat(t)}
    return {
        "name": name,
        "config": cfg,
        "label_smoothing": label_smoothing,
        "batch": {"B": B, "Ts": Ts, "Tt": Tt},
        "inputs": {
            "src_tokens": src.reshape(-1).tolist(),
            "src_lengths": src_lengths,
            "prev_output_tokens": prev.reshape(-1).tolist(),
            "target": target.reshape(-1).tolist(),
        },
        "params": {n: tensor(t) for n, t in P.items()},
        "logits": tensor(logits),
        "loss": float(loss),
        "grads": {n: tensor(t.grad) for n, t in P.items()},
    }


def base_config(**overrides):
    cfg = dict(vocab=24, d_model=16, heads=2, ffn=32, enc_layers=1, dec_layers=1, pre_norm=False,
               activation="relu", dropout=0.0, attention_dropout=0.0, activation_dropout=0.0,
               pad_id=1, share_all_embeddings=False, share_decoder_input_output_embed=True)
    cfg.update(overrides)
    return cfg


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "transformer_1x1.json")
    cases = [
        make_case("post_norm_relu", base_config(), 0.1, seed=1234),
        make_case("pre_norm_gelu_shared", base_config(pre_norm=True, activation="gelu",
                                                      share_all_embeddings=True), 0.1, seed=5678),
        # Summarization lengths: sources up to 512 tokens (SAMSum's max_source_len) next to a short
        # one in the same batch, so positions, key padding and cross-attention are checked where
        # the attention kernel runs over many key tiles.
        make_case("post_norm_relu_long_sources", base_config(), 0.1, seed=4321,
                  src_lengths=(300, 37, 512), tgt_lengths=(9, 3, 6)),
    ]
    text = json.dumps({"generator": "tests/golden/make_transformer_golden.py",
                       "torch": torch.__version__, "dtype": "float64", "cases": cases},
                      separators=(",", ":"))
    with open(out, "w") as f:
        f.write(text + "\n")
    for c in cases:
        print(f"{c['name']}: loss {c['loss']:.17g}, {len(c['params'])} parameters")
    print(f"wrote {out} ({len(text)} bytes)")


if __name__ == "__main__":
    main()
