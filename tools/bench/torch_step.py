#!/usr/bin/env python3
"""The PyTorch side of `pillars bench step`: the same encoder-decoder training step in torch.nn.

Model: post-norm transformer, 3+3 layers, d 256, 8 heads, FFN 1024, ReLU, dropout 0.1, vocab
10,000 (--config bench; --config base: 6+6 layers, d 512, FFN 2048, dropout 0.3), sinusoidal
positions, decoder input/output embeddings shared, label-smoothed (0.1) cross-entropy, Adam (0.9,
0.98). --device cuda runs on the GPU (timed with CUDA events); --bf16 adds autocast to bf16 (fp32
master weights; nn.Transformer's attention is scaled_dot_product_attention); --compile runs the
model through torch.compile (PyTorch 2; default mode, its first steps compile and are not timed).
Prints one JSON line: median seconds per step, target tokens/s, peak RSS (MB) of this process,
on the GPU the peak of torch.cuda.max_memory_allocated (MB) over the timed steps, and the first
step's loss.
"""
import argparse
import json
import math
import resource
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def sinusoidal(T, d, first=2):
    half = d // 2
    freq = torch.exp(torch.arange(half, dtype=torch.float64) * -(math.log(10000.0) / (half - 1)))
    pos = torch.arange(first, first + T, dtype=torch.float64)[:, None] * freq[None, :]
    return torch.cat([torch.sin(pos), torch.cos(pos)], dim=1).float()


class Seq2Seq(nn.Module):
    def __init__(self, vocab, d, heads, ffn, layers, dropout):
        super().__init__()
        self.d = d
        self.src_embed = nn.Embedding(vocab, d)
        self.tgt_embed = nn.Embedding(vocab, d)
        enc = nn.TransformerEncoderLayer(d, heads, ffn, dropout, batch_first=True)
        dec = nn.TransformerDecoderLayer(d, heads, ffn, dropout, batch_first=True)
        self.encoder = nn.TransformerEncoder(enc, layers, enable_nested_tensor=False)
        self.decoder = nn.TransformerDecoder(dec, layers)
        self.dropout = nn.Dropout(dropout)
        for emb in (self.src_embed, self.tgt_embed):  # fairseq's embedding init, as ours
            nn.init.normal_(emb.weight, mean=0.0, std=d ** -0.5)

    def forward(self, src, prev):
        Ts, Tt = src.shape[1], prev.shape[1]
        dev = src.device
        x = self.dropout(self.src_embed(src) * math.sqrt(self.d) + sinusoidal(Ts, self.d).to(dev))
        y = self.dropout(self.tgt_embed(prev) * math.sqrt(self.d) + sinusoidal(Tt, self.d).to(dev))
        memory = self.encoder(x)
        causal = torch.triu(torch.full((Tt, Tt), float("-inf"), device=dev), diagonal=1)
        y = self.decoder(y, memory, tgt_mask=causal)
        return y @ self.tgt_embed.weight.t()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--batch", type=int, default=160)
    ap.add_argument("--src-len", type=int, default=25)
    ap.add_argument("--tgt-len", type=int, default=25)
    ap.add_argument("--config", choices=["bench", "base"], default="bench")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--bf16", action="store_true")
    ap.add_argument("--compile", action="store_true")
    args = ap.parse_args()
    if args.compile and not hasattr(torch, "compile"):
        raise SystemExit("--compile needs PyTorch 2 (this is %s)" % torch.__version__)
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    vocab = 10000
    dev = torch.device(args.device)
    if args.config == "base":
        model = Seq2Seq(vocab, 512, 8, 2048, 6, 0.3).to(dev)
    else:
        model = Seq2Seq(vocab, 256, 8, 1024, 3, 0.1).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=5e-4, betas=(0.9, 0.98), eps=1e-8)
    forward = torch.compile(model) if args.compile else model
    src = torch.randint(4, vocab, (args.batch, args.src_len), device=dev)
    prev = torch.randint(4, vocab, (args.batch, args.tgt_len), device=dev)
    target = torch.randint(4, vocab, (args.batch * args.tgt_len,), device=dev)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type=args.device, dtype=torch.bfloat16, enabled=args.bf16):
            logits = forward(src, prev).reshape(-1, vocab)
        loss = F.cross_entropy(logits.float(), target, label_smoothing=0.1)
        loss.backward()
        opt.step()
        return loss

    first_loss = step().item()  # warm-up (with --compile: the compilation)
    for _ in range((4 if args.compile else 2) if args.device == "cuda" else 0):
        step()
    if args.device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(args.repeats):
        if args.device == "cuda":
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            step()
            stop.record()
            stop.synchronize()
            times.append(start.elapsed_time(stop) / 1e3)
        else:
            t0 = time.perf_counter()
            step()
            times.append(time.perf_counter() - t0)
    times.sort()
    median = times[len(times) // 2]
    result = {
        "median_s": median,
        "tokens_per_s": args.batch * args.tgt_len / median,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        "first_loss": first_loss,
    }
    if args.device == "cuda":
        result["peak_device_mb"] = torch.cuda.max_memory_allocated() / 2**20
    print(json.dumps(result))


if __name__ == "__main__":
    main()
