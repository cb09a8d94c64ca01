#!/bin/sh
# Kills at random moments of training and of saving, with the real binary:
#   - kill -9, at least 20 times (KILL_LOOP_KILLS): during start-up (data preparation, checkpoint
#     loading), at a random moment of training, and while a checkpoint is being saved (the moment a
#     save's temporary file appears). After each kill: every checkpoint_*.safetensors loads
#     (`pillars metrics`, which verifies the tensors' checksum), every .json sidecar, config.json and
#     pipeline.json parse, and every line of log.jsonl and head_metrics.jsonl is whole JSON;
#   - SIGTERM, several times (KILL_LOOP_TERMS), at a random moment or during a save: exit 143 within
#     60 s, no temporary file left, the stop logged, and checkpoint_last's update equals the last
#     update this process logged;
#   - each run continues with --resume (the next round's run), and once it ends its final
#     parameters and optimizer state (the tensor-data checksum of checkpoint_last and
#     checkpoint_best) equal an uninterrupted run's, and every loss it ever logged equals that run's
#     loss at the same update.
# The moments are random, drawn from a seed printed first: KILL_LOOP_SEED=S reruns the same plan.
# Usage: cli_kill_loop.sh PILLARS_BINARY WORK_DIR. Exit 77 (skipped) without the data.
. "$(dirname "$0")/cli_lib.sh"
exec python3 - "$P" "$W" "$EXP" <<'PY'
import hashlib
import json, os, random, signal, struct, subprocess, sys, time

P, W, EXP = sys.argv[1:4]
SEED = int(os.environ.get("KILL_LOOP_SEED") or random.SystemRandom().randrange(1 << 31))
KILLS = int(os.environ.get("KILL_LOOP_KILLS", "20"))
TERMS = int(os.environ.get("KILL_LOOP_TERMS", "6"))
UPDATES = int(os.environ.get("KILL_LOOP_UPDATES", "30"))
# The tiny LM of cli_run_guard.sh, smaller still (d 64, batches of 1024 tokens) so that an update
# takes a fraction of a second, with a save at least every 0.06 s of training: saves are frequent,
# and kills land in them.
FLAGS = ["--set", "data.block_size=64", "--set", "model.layers=2", "--set", "model.dropout=0", "--set", "train.log_every=1",
         "--no-eval", "--quiet", "--threads", "1", "--set", "data.max_tokens=1024", "--set", "model.d_model=64",
         "--set", "model.ffn=128", "--set", "model.heads=2", "--set", "train.save_every_minutes=0.001",
         "--set", f"train.max_updates={UPDATES}"]
rng = random.Random(SEED)
t_begin = time.monotonic()
print(f"kill loop: seed {SEED} ({KILLS} kill -9, {TERMS} SIGTERM, runs of {UPDATES} updates); "
      f"rerun this plan with KILL_LOOP_SEED={SEED}", flush=True)


def fail(msg):
    print(f"FAIL: {msg} (seed {SEED}; rerun with KILL_LOOP_SEED={SEED})", flush=True)
    sys.exit(1)


def launch(out, log_name):
    resume = os.path.isdir(out)  # --resume continues a run, or starts again one that saved nothing
    err = open(os.path.join(W, log_name), "w")
    return subprocess.Popen([P, "train", EXP, "--out", out] + FLAGS + (["--resume"] if resume else []),
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)


def stderr_of(log_name):
    with open(os.path.join(W, log_name)) as f:
        return f.read()[-2000:]


def log_lines(run, name="log.jsonl", cut_tail_ok=False):
    """The lines of a run's JSON-lines file, each parsed; fails on a cut or unparsable line.

    cut_tail_ok: right after a kill -9, a last line without its newline is allowed (SIGKILL between
    the two pages of a line's write(2) can cut it; rare), because the next run removes it when it
    opens the file (base/log_file.h) — which every later check, without the allowance, verifies."""
    path = os.path.join(run, name)
    if not os.path.exists(path):
        return []
    data = open(path, "rb").read()
    if data and not data.endswith(b"\n"):
        if not cut_tail_ok:
            fail(f"{path} ends with a cut line: {data[-120:]!r}")
        print(f"note: {path} ends with a cut line after kill -9 (the next run must remove it): {data[-80:]!r}", flush=True)
        data = data[:data.rfind(b"\n") + 1]
    lines = []
    for i, raw in enumerate(data.split(b"\n")[:-1]):
        try:
            lines.append(json.loads(raw))
        except ValueError:
            fail(f"{path}:{i + 1} is not JSON: {raw[:200]!r}")
    return lines


def header(path):
    """The safetensors header (JSON) of a checkpoint: its metadata holds state and checksum."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return json.loads(f.read(n))


def saved(path):
    """(update, SHA-256 of the tensor data): pillars.checksum also covers the metadata, where the
    run's timings are recorded, so it differs between runs with equal parameters."""
    meta = header(path)["__metadata__"]
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        f.seek(8 + n)
        digest = "sha256:" + hashlib.sha256(f.read()).hexdigest()[:16]
    return json.loads(meta["pillars.state"])["updates"], digest


def temporaries(run):
    return [n for n in os.listdir(run) if ".tmp." in n] if os.path.isdir(run) else []


verified = {}  # checkpoint path -> (inode, size, mtime) last loaded


def check_run(run, what, killed=False):
    """What must hold after any interruption: every file under a checkpoint's name loads."""
    if not os.path.isdir(run):
        return
    log_lines(run, cut_tail_ok=killed)
    log_lines(run, "head_metrics.jsonl", cut_tail_ok=killed)
    for name in sorted(os.listdir(run)):
        path = os.path.join(run, name)
        if ".tmp." in name:
            continue
        if name.endswith(".json"):
            try:
                json.load(open(path))
            except ValueError as e:
                fail(f"{what}: {path} is not whole JSON: {e}")
        if name.startswith("checkpoint_") and name.endswith(".safetensors"):
            st = os.stat(path)
            key = (st.st_ino, st.st_size, st.st_mtime_ns)
            if verified.get(path) == key:
                continue
            r = subprocess.run([P, "metrics", path, "--sentences", "1", "--threads", "1"], stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            if r.returncode != 0:
                fail(f"{what}: {path} does not load (pillars metrics exit {r.returncode}): {r.stderr[-1000:]}")
            verified[path] = key


def wait_for(pred, seconds, what, proc=None):
    """Polls pred() every millisecond; returns its value, or None when proc has exited first."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        if proc is not None and proc.poll() is not None:
            return None
        time.sleep(0.001)
    fail(f"{what}: not within {seconds} s")


def starts(run):
    """How many start lines the log holds; polled while a run writes it, so a line being written
    (no newline yet) is not looked at."""
    path = os.path.join(run, "log.jsonl")
    if not os.path.exists(path):
        return 0
    data = open(path, "rb").read()
    return data[:data.rfind(b"\n") + 1].count(b'"type":"start"')


# ---- the uninterrupted reference run ---------------------------------------------------------------
ref = os.path.join(W, "ref")
t0 = time.monotonic()
proc = launch(ref, "ref.err")
if proc.wait() != 0:
    fail(f"the reference run failed: {stderr_of('ref.err')}")
ref_seconds = time.monotonic() - t0
ref_losses = {}
for l in log_lines(ref):
    if l.get("type") == "train":
        ref_losses[l["update"]] = l["loss"]
if sorted(ref_losses) != list(range(1, UPDATES + 1)):
    fail(f"the reference run logged updates {sorted(ref_losses)}")
ref_final = {n: saved(os.path.join(ref, n)) for n in ("checkpoint_last.safetensors", "checkpoint_best.safetensors")}
last_train = max(l["elapsed_seconds"] for l in log_lines(ref) if l.get("type") == "train")
per_update = last_train / UPDATES
# Start-up of a resumed run (what most rounds pay): a --resume of the finished reference, which
# restores, saves and ends at once.
n0 = starts(ref)
t0 = time.monotonic()
proc = launch(ref, "ref-resume.err")
wait_for(lambda: starts(ref) > n0, 300, "the reference's resume logs its start")
startup = time.monotonic() - t0
if proc.wait() != 0:
    fail(f"--resume of a finished run failed: {stderr_of('ref-resume.err')}")
print(f"reference: {UPDATES} updates in {ref_seconds:.1f} s ({per_update * 1000:.0f} ms per update, saves included); "
      f"a resumed run logs its start after {startup:.2f} s", flush=True)

# ---- the plan: kill -9 in start-up, in training, in saves; SIGTERM in training and in saves --------
kinds = ["kill9-startup", "kill9-train", "kill9-save"]
plan = [kinds[i % 3] for i in range(KILLS)] + [("sigterm-train", "sigterm-save")[i % 2] for i in range(TERMS)]
rng.shuffle(plan)
plan = [(k, rng.random()) for k in plan]  # the fraction that places the kill within its window

run_index = 0
run = os.path.join(W, f"run{run_index}")


def finish_and_compare(run):
    """Resumes `run` to its end and compares it with the reference."""
    proc = launch(run, "finish.err")
    if proc.wait() != 0:
        fail(f"--resume of {run} to the end failed: {stderr_of('finish.err')}")
    check_run(run, f"{run} after its last --resume")
    if temporaries(run):
        fail(f"temporary files left in {run} after a complete run: {temporaries(run)}")
    lines = log_lines(run)
    if lines[-1].get("type") != "end" or lines[-1].get("reason") != "max_updates":
        fail(f"{run}: the log does not end with the end of training: {lines[-1]}")
    logged = 0
    for l in lines:
        if l.get("type") == "train":
            logged += 1
            if l["loss"] != ref_losses.get(l["update"]):
                fail(f"{run}: update {l['update']} logged loss {l['loss']!r}, the uninterrupted run {ref_losses.get(l['update'])!r}")
    for name, (updates, checksum) in ref_final.items():
        got = saved(os.path.join(run, name))
        if got != (updates, checksum):
            fail(f"{run}/{name}: (update, tensor checksum) {got}, the uninterrupted run's {(updates, checksum)}")
    print(f"{run}: resumed to update {UPDATES}; final parameters and optimizer state equal the uninterrupted run's "
          f"(checksums {ref_final['checkpoint_last.safetensors'][1]}, {ref_final['checkpoint_best.safetensors'][1]}); "
          f"{logged} logged losses all equal", flush=True)


for i, (kind, frac) in enumerate(plan):
    # A run close to its end is finished (and compared) first: a kill must find training to interrupt.
    last = os.path.join(run, "checkpoint_last.safetensors")
    if os.path.exists(last) and saved(last)[0] >= UPDATES - 6:
        finish_and_compare(run)
        run_index += 1
        run = os.path.join(W, f"run{run_index}")
        last = os.path.join(run, "checkpoint_last.safetensors")  # the new run's, read after the signal
    err = f"round{i}.err"
    n0 = starts(run)
    proc = launch(run, err)
    t_launch = time.monotonic()
    sig = signal.SIGKILL if kind.startswith("kill9") else signal.SIGTERM
    if kind == "kill9-startup":
        delay = frac * startup * 1.2
        time.sleep(delay)
        where = f"{delay * 1000:.0f} ms after launch"
    else:
        if not wait_for(lambda: starts(run) > n0, 300, f"round {i}: the run logs its start", proc):
            fail(f"round {i}: the run exited with {proc.returncode} before training: {stderr_of(err)}")
        if kind.endswith("-train"):
            delay = frac * 2 * per_update
            time.sleep(delay)
            where = f"{delay * 1000:.0f} ms after the run's start line"
        else:
            # The moment a save's temporary file appears, plus up to 5 ms: inside the save.
            found = wait_for(lambda: [n for n in temporaries(run) if n.startswith("checkpoint_")], 300,
                             f"round {i}: a save starts", proc)
            if not found:
                fail(f"round {i}: the run exited with {proc.returncode} before a save: {stderr_of(err)}")
            delay = frac * 0.005
            time.sleep(delay)
            where = f"{delay * 1000:.1f} ms after {found[0]} appeared"
    if proc.poll() is not None:
        fail(f"round {i} ({kind}): the run exited with {proc.returncode} before the signal: {stderr_of(err)}")
    proc.send_signal(sig)
    try:
        rc = proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        fail(f"round {i} ({kind}): still running 60 s after the signal")
    check_run(run, f"round {i} ({kind}, {where})", killed=sig == signal.SIGKILL)
    at = saved(last)[0] if os.path.exists(last) else None
    if sig == signal.SIGKILL:
        if rc != -signal.SIGKILL:
            fail(f"round {i} ({kind}): exit {rc}, not killed: {stderr_of(err)}")
        left = [n for n in temporaries(run) if n.startswith("checkpoint_")]
        inside = f" (inside the save: {left[0]} was left)" if left else ""
        print(f"round {i:2d}: kill -9 {where}{inside}; checkpoint_last at update {at}", flush=True)
        continue
    # SIGTERM: exit 143, no temporary left, the stop logged at the update checkpoint_last holds.
    if rc != 143:
        fail(f"round {i} ({kind}, {where}): SIGTERM gave exit {rc}, not 143: {stderr_of(err)}")
    if temporaries(run):
        fail(f"round {i}: temporary files left after SIGTERM: {temporaries(run)}")
    lines = log_lines(run)
    begin = max(j for j, l in enumerate(lines) if l.get("type") == "start")
    mine = lines[begin:]
    logged = max([l["update"] for l in mine if l.get("type") == "train"] + [mine[0]["update"]])
    end = mine[-1]
    sidecar = json.load(open(os.path.join(run, "checkpoint_last.json")))["state"]["updates"]
    if not (end.get("type") == "end" and end.get("reason") == "SIGTERM"):
        fail(f"round {i}: the log does not end with the SIGTERM stop: {end}")
    if not (at == sidecar == end["update"] == logged):
        fail(f"round {i} ({where}): checkpoint_last holds update {at} (sidecar {sidecar}), the stop was logged at "
             f"{end['update']}, the last update logged {logged}")
    print(f"round {i:2d}: SIGTERM {where}: exit 143, checkpoint_last at update {at} = the last logged", flush=True)

finish_and_compare(run)
print(f"ok: {KILLS} kill -9 and {TERMS} SIGTERM over {run_index + 1} run(s) in {time.monotonic() - t_begin:.0f} s", flush=True)
PY
