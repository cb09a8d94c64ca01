#!/usr/bin/python3
"""Writes tests/golden/optim_trajectories.json, the reference values for tests/test_optim.cpp.

    /usr/bin/python3 tests/golden/make_optim_golden.py        (torch 1.13, CPU, numpy)

What it records:
  params     three parameters of different shapes (torch.manual_seed(1234) values);
  runs       for each optimizer configuration, 10 torch.optim steps on the loss
                 L = sum_params sum(c * w^2 + sin(w))        (fixed random c, so gradients vary),
             with, per step, the learning rate used, the gradients fed in, and the parameters after
             the step. The C++ test feeds the same gradients, so it never needs the loss.
  schedules  learning rates per update (update 1 = the first) from fairseq's inverse_sqrt and
             cosine formulas (copied below, driven the way fairseq's trainer drives them), from
             torch's CosineAnnealingWarmRestarts where it coincides with fairseq's cosine, and the
             hand formulas of Linear / Constant from engine/optim/schedule.h;
  clip       torch.nn.utils.clip_grad_norm_ on fixed gradients: total norm and clipped gradients.

Every float32 value is written as its shortest decimal repr; the script checks that parsing that
decimal as a double and rounding to float32 (what the C++ test does) gives back the same bits.
"""
import json
import math
import os

import numpy as np
import torch

STEPS = 10
SHAPES = [("encoder.layers.0.weight", (3, 4)), ("bias", (5,)), ("decoder.k", (2, 3, 2))]
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "optim_trajectories.json")

torch.manual_seed(1234)
torch.set_num_threads(1)
INITIAL = {name: torch.randn(shape) for name, shape in SHAPES}
COEF = {name: torch.randn(shape) for name, shape in SHAPES}


def f32(x):
    """A float32 value as the Python float whose repr is its shortest decimal."""
    x = np.float32(x)
    short = float(str(x))
    assert np.float32(short) == x or (np.isnan(x) and np.isnan(short)), (x, short)
    return short


def flat(t):
    return [f32(v) for v in t.detach().reshape(-1).numpy()]


# ---- optimizer trajectories ------------------------------------------------------------------

ADAM = dict(kind="adam", betas=[0.9, 0.98], eps=1e-8, weight_decay=0.0, decoupled=False, amsgrad=False)
SGD = dict(kind="sgd", momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False)
INVERSE_SQRT = dict(kind="inverse_sqrt", peak_lr=1e-2, warmup_steps=4, warmup_init_lr=1e-3)

RUNS = [
    ("adam", dict(ADAM), None),
    ("adam_l2", dict(ADAM, weight_decay=1e-4), None),
    ("adamw", dict(ADAM, weight_decay=0.01, decoupled=True), None),
    ("adam_amsgrad", dict(ADAM, amsgrad=True), None),
    ("sgd", dict(SGD), None),
    ("sgd_nesterov", dict(SGD, momentum=0.9, weight_decay=1e-4, nesterov=True), None),
    ("sgd_momentum_dampening", dict(SGD, momentum=0.9, dampening=0.1, weight_decay=1e-4), None),
    ("adamw_inverse_sqrt", dict(ADAM, weight_decay=0.01, decoupled=True), INVERSE_SQRT),
]
LR = 1e-2


def torch_optimizer(opt, params):
    if opt["kind"] == "adam":
        cls = torch.optim.AdamW if opt["decoupled"] else torch.optim.Adam
        return cls(params, lr=LR, betas=tuple(opt["betas"]), eps=opt["eps"],
                   weight_decay=opt["weight_decay"], amsgrad=opt["amsgrad"], foreach=False)
    return torch.optim.SGD(params, lr=LR, momentum=opt["momentum"], dampening=opt["dampening"],
                           weight_decay=opt["weight_decay"], nesterov=opt["nesterov"], foreach=False)


def loss_of(params):
    return sum((COEF[name] * w * w + torch.sin(w)).sum() for name, w in params.items())


def trajectory(name, opt, schedule):
    params = {n: INITIAL[n].clone().requires_grad_(True) for n, _ in SHAPES}
    optimizer = torch_optimizer(opt, list(params.values()))
    lrs = schedule_lrs(schedule, STEPS) if schedule else [LR] * STEPS
    run = dict(name=name, optimizer=opt, schedule=schedule, lrs=lrs, grads=[], params_after=[])
    for step in range(STEPS):
        optimizer.zero_grad()
        loss_of(params).backward()
        for group in optimizer.param_groups:
            group["lr"] = lrs[step]
        run["grads"].append([flat(params[n].grad) for n, _ in SHAPES])
        optimizer.step()
        run["params_after"].append([flat(params[n]) for n, _ in SHAPES])
    return run


# ---- schedules -------------------------------------------------------------------------------
# fairseq's step_update(num_updates), verbatim in substance (fairseq/optim/lr_scheduler/
# inverse_square_root_schedule.py and cosine_lr_scheduler.py). fairseq's trainer calls
# step_update(0) when it builds the scheduler and step_update(n) after the n-th update, so update
# k runs with step_update(k - 1).

class FairseqInverseSqrt:
    def __init__(self, peak_lr, warmup_steps, warmup_init_lr):
        self.warmup_updates, self.warmup_init_lr = warmup_steps, warmup_init_lr
        self.lr_step = (peak_lr - warmup_init_lr) / warmup_steps
        self.decay_factor = peak_lr * warmup_steps ** 0.5

    def step_update(self, num_updates):
        if num_updates < self.warmup_updates:
            return self.warmup_init_lr + num_updates * self.lr_step
        return self.decay_factor * num_updates ** -0.5


class FairseqCosine:
    def __init__(self, max_lr, min_lr, warmup_steps, warmup_init_lr, period, t_mult, lr_shrink,
                 fix_boundaries=False):
        self.max_lr, self.min_lr, self.warmup_updates = max_lr, min_lr, warmup_steps
        self.warmup_init_lr = min_lr if warmup_init_lr < 0 else warmup_init_lr
        self.period, self.t_mult, self.lr_shrink = period, t_mult, lr_shrink
        self.lr_step = (max_lr - self.warmup_init_lr) / warmup_steps if warmup_steps > 0 else 1
        self.fix_boundaries = fix_boundaries  # the correction engine/optim/schedule.cpp applies

    def step_update(self, num_updates):
        if num_updates < self.warmup_updates:
            return self.warmup_init_lr + num_updates * self.lr_step
        curr_updates = num_updates - self.warmup_updates
        if self.t_mult != 1:
            i = math.floor(math.log(1 - curr_updates / self.period * (1 - self.t_mult), self.t_mult))
            cycle = lambda i: (self.t_mult ** i * self.period,
                               curr_updates - (1 - self.t_mult ** i) / (1 - self.t_mult) * self.period)
            t_i, t_curr = cycle(i)
            while self.fix_boundaries and t_curr < 0 and i > 0:
                i -= 1
                t_i, t_curr = cycle(i)
            while self.fix_boundaries and t_curr >= t_i:
                i += 1
                t_i, t_curr = cycle(i)
        else:
            i = math.floor(curr_updates / self.period)
            t_i = self.period
            t_curr = curr_updates - (self.period * i)
        lr_shrink = self.lr_shrink ** i
        min_lr = self.min_lr * lr_shrink
        max_lr = self.max_lr * lr_shrink
        return min_lr + 0.5 * (max_lr - min_lr) * (1 + math.cos(math.pi * t_curr / t_i))


def cosine_options(max_lr, min_lr=0.0, warmup_steps=0, warmup_init_lr=-1.0, period=1.0, t_mult=1.0,
                   lr_shrink=1.0):
    return dict(kind="cosine", max_lr=max_lr, min_lr=min_lr, warmup_steps=warmup_steps,
                warmup_init_lr=warmup_init_lr, period=period, t_mult=t_mult, lr_shrink=lr_shrink)


def fairseq_schedule(options, fix_boundaries=False):
    o = {k: v for k, v in options.items() if k != "kind"}
    if options["kind"] == "inverse_sqrt":
        return FairseqInverseSqrt(**o)
    return FairseqCosine(**o, fix_boundaries=fix_boundaries)


def schedule_lrs(options, steps):
    """Learning rates of updates 1..steps (engine/optim/schedule.h's lr(step))."""
    kind = options["kind"]
    if kind in ("inverse_sqrt", "cosine"):
        sched = fairseq_schedule(options, fix_boundaries=True)
        return [sched.step_update(k - 1) for k in range(1, steps + 1)]
    if kind == "linear":
        peak, w, total, end = (options[k] for k in ("peak_lr", "warmup_steps", "total_steps", "end_lr"))
        return [peak * k / w if k <= w else end if k >= total else
                end + (peak - end) * (total - k) / (total - w) for k in range(1, steps + 1)]
    assert kind == "constant"
    return [options["value"]] * steps


def fairseq_trainer_lrs(options, steps):
    """The lr fairseq's trainer uses for updates 1..steps: step_update(0) at start, then after each."""
    sched = fairseq_schedule(options)
    lr, used = sched.step_update(0), []
    for n in range(1, steps + 1):
        used.append(lr)
        lr = sched.step_update(n)
    return used


def torch_warm_restarts_lrs(options, steps):
    """torch's CosineAnnealingWarmRestarts: the lr of updates 1..steps (stepped after each)."""
    assert options["warmup_steps"] == 0 and options["lr_shrink"] == 1
    p = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([p], lr=options["max_lr"])
    sched = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(
        opt, T_0=int(options["period"]), T_mult=int(options["t_mult"]), eta_min=options["min_lr"])
    used = []
    for _ in range(steps):
        used.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return used


def close(a, b, rel=1e-12):
    return all(abs(x - y) <= rel * max(abs(x), abs(y), 1e-300) for x, y in zip(a, b))


def schedules():
    out = []

    def add(name, options, steps, source, lrs):
        ours = schedule_lrs(options, steps)
        assert close(ours, lrs), (name, ours, lrs)
        out.append(dict(name=name, options=options, source=source, lrs=lrs))

    for name, options, steps in [
        ("inverse_sqrt_warmup4", dict(INVERSE_SQRT), 20),
        ("inverse_sqrt_default_init", dict(kind="inverse_sqrt", peak_lr=5e-4, warmup_steps=10,
                                           warmup_init_lr=0.0), 30),
        ("cosine_warmup_shrink", cosine_options(1e-3, 1e-5, warmup_steps=5, warmup_init_lr=1e-6,
                                                period=4, t_mult=1.5, lr_shrink=0.5), 60),
        ("cosine_tmult1_shrink", cosine_options(1e-3, 1e-4, warmup_steps=2, period=6, lr_shrink=0.1), 30),
    ]:
        add(name, options, steps, "fairseq", fairseq_trainer_lrs(options, steps))

    for name, options, steps in [
        ("cosine_restarts_tmult2", cosine_options(1e-3, 1e-5, period=3, t_mult=2), 25),
        ("cosine_restarts_tmult1", cosine_options(2e-3, 0.0, period=5), 16),
    ]:
        lrs = torch_warm_restarts_lrs(options, steps)
        assert close(lrs, fairseq_trainer_lrs(options, steps), 1e-9), name
        add(name, options, steps, "torch CosineAnnealingWarmRestarts", lrs)

    # t_mult = 3, period = 1: cycle 5 starts at update 122 (c = 121), where fairseq's logarithm
    # gives 4.999..., so fairseq runs that update at the end of cycle 4 (min_lr) instead of the start
    # of cycle 5. The reference here is the corrected formula; the entry records where they differ.
    options = cosine_options(1e-3, 1e-5, period=1, t_mult=3, lr_shrink=0.9)
    fairseq, fixed = fairseq_trainer_lrs(options, 130), schedule_lrs(options, 130)
    differs = [k + 1 for k in range(130) if fairseq[k] != fixed[k]]
    assert differs == [122], differs
    out.append(dict(name="cosine_tmult3_boundary", options=options,
                    source="fairseq with the restart-boundary correction", lrs=fixed,
                    fairseq_differs_at=differs, fairseq_lr_there=fairseq[121]))

    linear = dict(kind="linear", peak_lr=1e-3, warmup_steps=4, total_steps=12, end_lr=1e-5)
    out.append(dict(name="linear", options=linear, source="formula", lrs=schedule_lrs(linear, 15)))
    constant = dict(kind="constant", value=3e-4)
    out.append(dict(name="constant", options=constant, source="formula", lrs=schedule_lrs(constant, 3)))
    return out


# ---- clipping --------------------------------------------------------------------------------

def clip_cases():
    out = []
    for max_norm, scale in [(1.0, 3.0), (100.0, 1.0), (0.25, 1e-3)]:
        grads = [torch.randn(shape) * scale for _, shape in SHAPES]
        params = [torch.zeros(shape, requires_grad=True) for _, shape in SHAPES]
        for p, g in zip(params, grads):
            p.grad = g.clone()
        total = torch.nn.utils.clip_grad_norm_(params, max_norm)
        out.append(dict(max_norm=max_norm, grads=[flat(g) for g in grads], total_norm=float(total),
                        clipped=[flat(p.grad) for p in params]))
    return out


def main():
    golden = dict(
        comment="Generated by tests/golden/make_optim_golden.py; do not edit by hand.",
        torch_version=torch.__version__,
        params=[dict(name=n, shape=list(s), initial=flat(INITIAL[n])) for n, s in SHAPES],
        runs=[trajectory(*run) for run in RUNS],
        schedules=schedules(),
        clip=clip_cases(),
    )
    with open(OUT, "w") as f:
        json.dump(golden, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {OUT} ({os.path.getsize(OUT)} bytes)")


if __name__ == "__main__":
    main()
