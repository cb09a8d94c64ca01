#!/bin/sh
# A full disk, with the real binary, on a small tmpfs. A filler file
# leaves a chosen amount of free space, then a fresh run trains into the tmpfs until a write fails:
#   - with no room for the start-up files (config.json, bpe.codes, dict.txt, ...);
#   - with room for them and half a checkpoint: the first checkpoint_last save fails;
#   - with room for one checkpoint and a half: the first save succeeds, the next one fails;
#   - with no periodic saves and the log's last page nearly full (a resumed run, one page free): a
#     training line is cut by the disk (a short write, then ENOSPC) and must be taken back; the same
#     after a cut line left by an earlier crash, which opening the log removes; and with head
#     metrics at every update and 4 pages free, log.jsonl or head_metrics.jsonl fills;
#   - with room but no inode left for config.json's temporary file.
# Each must exit 1 with "pillars: error: <the file>: ... No space left on device", leave no
# temporary file and no partial file under a checkpoint's name (each checkpoint_*.safetensors
# present loads: `pillars metrics` verifies its tensors' checksum; each .json parses), and no cut
# line: every line of log.jsonl and head_metrics.jsonl is whole JSON. Across the cases both a log
# and a checkpoint write must have been hit.
# Needs root (mount -t tmpfs); skipped with exit 77, saying why, when not root or when the mount
# fails. The tmpfs is unmounted on any exit.
# Usage: cli_disk_full.sh PILLARS_BINARY WORK_DIR. Exit 77 (skipped) without the data.
. "$(dirname "$0")/cli_lib.sh"
M=$W/tmpfs
mount_tmpfs "$M" 8m pillars-disk-full "mounting a tmpfs needs root"
python3 - "$P" "$W" "$EXP" "$M" <<'PY'
import json, os, struct, subprocess, sys, time

P, W, EXP, M = sys.argv[1:5]
FLAGS = ["--set", "data.block_size=64", "--set", "model.layers=2", "--set", "model.dropout=0", "--set", "train.log_every=1",
         "--no-eval", "--quiet", "--threads", "1", "--set", "data.max_tokens=1024", "--set", "model.d_model=64",
         "--set", "model.ffn=128", "--set", "model.heads=2", "--set", "train.max_updates=200"]
SAVE_OFTEN = ["--set", "train.save_every_minutes=0.001"]
t_begin = time.monotonic()


def fail(msg):
    print(f"FAIL: {msg}", flush=True)
    sys.exit(1)


def free_bytes():
    s = os.statvfs(M)
    return s.f_bavail * s.f_frsize


def allocated(path):
    return os.stat(path).st_blocks * 512


def clear_tmpfs():
    for name in os.listdir(M):
        path = os.path.join(M, name)
        if os.path.isdir(path):
            subprocess.run(["rm", "-rf", path], check=True)
        else:
            os.remove(path)


def fill_leaving(free):
    """A filler file that leaves `free` bytes (rounded down to pages) free on the tmpfs."""
    have = free_bytes()
    if have < free:
        fail(f"the tmpfs has {have} bytes free, fewer than the {free} a case needs")
    with open(os.path.join(M, "filler"), "wb") as f:
        left = (have - free) // 4096 * 4096
        while left > 0:
            n = min(left, 1 << 20)
            f.write(b"\0" * n)
            left -= n
    if abs(free_bytes() - free) > 4096:
        fail(f"the filler left {free_bytes()} bytes free, not {free}")


def train(run, extra):
    r = subprocess.run([P, "train", EXP, "--out", run] + FLAGS + extra, stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=600)
    return r.returncode, r.stderr


def lines_of(path):
    if not os.path.exists(path):
        return []
    data = open(path, "rb").read()
    if data and not data.endswith(b"\n"):
        fail(f"{path} ends with a cut line: {data[-120:]!r}")
    out = []
    for i, raw in enumerate(data.split(b"\n")[:-1]):
        try:
            out.append(json.loads(raw))
        except ValueError:
            fail(f"{path}:{i + 1} is not JSON: {raw[:200]!r}")
    return out


def check_run(run, what):
    """No cut line, no partial file under a checkpoint's name, no temporary left."""
    for name in ("log.jsonl", "head_metrics.jsonl"):
        lines_of(os.path.join(run, name))
    if not os.path.isdir(run):
        return []
    checkpoints = []
    for name in sorted(os.listdir(run)):
        path = os.path.join(run, name)
        if ".tmp." in name:
            fail(f"{what}: a temporary file was left: {path}")
        if name.endswith(".json"):
            try:
                json.load(open(path))
            except ValueError as e:
                fail(f"{what}: {path} is not whole JSON: {e}")
        if name.startswith("checkpoint_") and name.endswith(".safetensors"):
            r = subprocess.run([P, "metrics", path, "--sentences", "1", "--threads", "1"], stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            if r.returncode != 0:
                fail(f"{what}: {path} does not load (pillars metrics exit {r.returncode}): {r.stderr[-1000:]}")
            with open(path, "rb") as f:
                n = struct.unpack("<Q", f.read(8))[0]
                updates = json.loads(json.loads(f.read(n))["__metadata__"]["pillars.state"])["updates"]
            checkpoints.append(f"{name} (update {updates})")
    return checkpoints


# ---- sizes, measured on the tmpfs itself: the start-up files and a checkpoint -----------------------
probe = os.path.join(M, "probe")
rc, err = train(probe, SAVE_OFTEN + ["--set", "train.max_updates=2"])
if rc != 0:
    fail(f"the probe run on an empty 8 MB tmpfs failed (exit {rc}): {err[-1000:]}")
startup = sum(allocated(os.path.join(probe, n)) for n in os.listdir(probe)
              if not n.startswith("checkpoint_") and not n.endswith(".jsonl"))
ckpt = allocated(os.path.join(probe, "checkpoint_last.safetensors"))
sidecar = allocated(os.path.join(probe, "checkpoint_last.json"))
print(f"on the tmpfs: start-up files {startup // 1024} KiB, checkpoint_last {ckpt // 1024} KiB "
      f"(+ {sidecar // 1024} KiB sidecar)", flush=True)
PAGE = 4096
SEED_LINE = b'{"type":"seed","note":"a line written before the run"}\n'


# A run folder with a log is a run: the seeded cases resume a copy of this one (one update, made
# on the ordinary disk once) with their own log.jsonl.
BASE = os.path.join(W, "base")
subprocess.run(["rm", "-rf", BASE], check=True)
r = subprocess.run([P, "train", EXP, "--out", BASE] + FLAGS + ["--set", "train.max_updates=1"], stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=600)
if r.returncode != 0:
    fail(f"the base run for the seeded cases failed (exit {r.returncode}): {r.stderr[-1000:]}")


def seed_log(run, room, cut=b""):
    """A copy of the base run whose log.jsonl is whole JSON lines that fill its one page but `room`
    bytes, then `cut` (a cut line)."""
    os.makedirs(run)
    # .lock too: a run folder has one, so taking the lock on --resume needs no new page.
    for name in ("checkpoint_last.safetensors", "checkpoint_last.json", "config.json", "pipeline.json", "dict.txt", "bpe.codes", ".lock"):
        if os.path.exists(os.path.join(BASE, name)):
            subprocess.run(["cp", os.path.join(BASE, name), run], check=True)
    target = PAGE - room - len(cut)
    n = target // len(SEED_LINE)
    last = target - (n - 1) * len(SEED_LINE)  # the last line is padded to fill exactly
    pad = b'{"type":"seed","note":"' + b"x" * (last - len(b'{"type":"seed","note":""}\n')) + b'"}\n'
    with open(os.path.join(run, "log.jsonl"), "wb") as f:
        f.write(SEED_LINE * (n - 1) + pad + cut)
    if os.path.getsize(os.path.join(run, "log.jsonl")) != PAGE - room:
        fail("seed_log: wrong size")


cases = [
    # (name, free bytes after the filler, extra flags, (room, cut) of a seeded log.jsonl or None,
    #  the files one of which the error must name (None: any file of the run))
    ("no room at all", 0, SAVE_OFTEN, None, None),
    ("half the start-up files", startup // 2 // PAGE * PAGE, SAVE_OFTEN, None, None),
    ("half a checkpoint", startup + 2 * PAGE + ckpt // 2 // PAGE * PAGE, SAVE_OFTEN, None, {"checkpoint_last.safetensors"}),
    ("a checkpoint and a half", startup + 2 * sidecar + 2 * PAGE + ckpt * 3 // 2 // PAGE * PAGE, SAVE_OFTEN, None,
     {"checkpoint_last.safetensors"}),
    # A resumed run (--resume: the seeded log makes the folder a run) whose log's page has 60
    # bytes left, and one page free for config.json's rewrite (then free again): the log's lines
    # fill the next page and one is cut by the disk, and must be taken back.
    ("the log's start line half fits", PAGE, ["--resume"], (60, b""), {"log.jsonl"}),
    # 700 bytes: a few training lines fit, the next one is cut by the disk.
    ("a few log lines fit", PAGE, ["--resume"], (700, b""), {"log.jsonl"}),
    # A cut line left by an earlier crash: removed when the log is opened, then the log fills.
    ("a cut line left before", PAGE, ["--resume"], (1200, b'{"type":"train","upd'), {"log.jsonl"}),
    ("4 pages for the log and head metrics", startup + 4 * PAGE, ["--set", "heads.metrics_every=1"], None,
     {"log.jsonl", "head_metrics.jsonl"}),
    # Room enough, but one inode only (the lock file takes it): creating config.json's temporary
    # fails with ENOSPC, which is the disk's failure (exit 1), not the user's.
    ("no inode for the start-up files", 4 << 20, SAVE_OFTEN, "inodes", {"config.json"}),
]
inodes_total = os.statvfs(M).f_files
hit = set()
for name, free, extra, seeded, expected in cases:
    clear_tmpfs()
    run = os.path.join(M, "run")
    if seeded == "inodes":
        os.makedirs(run)
    elif seeded:
        seed_log(run, *seeded)
    fill_leaving(free)
    if seeded == "inodes":
        s = os.statvfs(M)
        subprocess.run(["mount", "-o", f"remount,nr_inodes={s.f_files - s.f_ffree + 1}", M], check=True)
    t0 = time.monotonic()
    rc, err = train(run, extra)
    what = f"case '{name}' ({free // 1024} KiB free)"
    if rc != 1:
        fail(f"{what}: exit {rc}, not 1: {err[-1000:]}")
    message = [l for l in err.splitlines() if l.startswith("pillars: error: ")]
    if not message or "No space left on device" not in message[-1]:
        fail(f"{what}: no 'pillars: error: ... No space left on device' message: {err[-1000:]}")
    named = message[-1][len("pillars: error: "):].split(":")[0]
    if not named.startswith(run + "/"):
        fail(f"{what}: the message does not start with a file of the run: {message[-1]}")
    file = os.path.relpath(named, run)
    if expected is not None and file not in expected:
        fail(f"{what}: the error names {file}, not one of {sorted(expected)}: {message[-1]}")
    if seeded == "inodes":
        subprocess.run(["mount", "-o", f"remount,nr_inodes={inodes_total}", M], check=True)
    elif seeded and seeded[1] and "removed a cut last line" not in err:
        fail(f"{what}: no note that the cut line left before was removed: {err[-1000:]}")
    hit.add(file)
    checkpoints = check_run(run, what)
    logged = [l for l in lines_of(os.path.join(run, "log.jsonl")) if l.get("type") == "train"]
    print(f"{what}: exit 1 in {time.monotonic() - t0:.1f} s, naming {file} after {len(logged)} logged updates; "
          f"whole: {', '.join(checkpoints) if checkpoints else 'no checkpoint'}; every log line parses", flush=True)
    print(f"  {message[-1]}", flush=True)
for need in ("log.jsonl", "checkpoint_last.safetensors"):
    if need not in hit:
        fail(f"no case hit a write of {need} (hit: {sorted(hit)})")
print(f"ok: {len(cases)} full-disk cases in {time.monotonic() - t_begin:.0f} s", flush=True)
PY
