#!/usr/bin/env python3
"""The bad-input corpus: every case feeds `pillars` one bad input and checks
what happens, with the real binary.

    python3 tests/bad_input.py BINARY WORKDIR [--only SUBSTRING]... [--list] [--reuse] [-v]

The cases are data, in tests/bad_input/*.json, one file per group: experiment files, flags of
every subcommand (cli), checkpoints and the other files of a run directory, dataset files, stdin;
experiments_broken.json turns each file of tests/experiments_broken (and the error EXPECTED.json
gives for it) into a case. Each case says:

    "name"     what it checks, in a few words (group/name is its id); "about": more, if needed
    "setup"    files to make first, in order (SETUP below): a broken experiment file, a FIFO, a
               copy of a good run with a corrupted checkpoint, a crafted dataset folder, ...
    "args"     the command line after the binary, with placeholders (PLACEHOLDERS below)
    "stdin"    what the command reads: a string, {"hex": H} or {"repeat": S, "times": N,
               "then": T} (default: nothing, an empty pipe)
    "exit"     the exit code it must end with (2: bad usage or bad input; 0: a defined output)
    "stderr"   substrings stderr must contain: for exit 2, the file's path and the field, flag or
               tensor at fault (a case with exit 2 must list some)
    "stdout"   optional: {"lines": N} (exactly N lines) and/or {"has": [...]} substrings
    "timeout"  seconds it must finish in (default 20; 6x for a sanitized binary)
    "absent"   paths that must not exist afterwards (a refused `train` makes no run directory)
    "unchanged"  more folders that must be left as they were (see below)
    "needs"    "lm" / "mt" (the good runs below) or "data" (the dataset mirror): skipped, and
               counted, without the mirror ($PILLARS_DATA)
    "env"      environment variables for the command (a group may set them for all its cases)
    "known_failing"  why the binary fails the case today: reported XFAIL, not a failure. A case so
               marked that passes is a failure (XPASS), so that the mark goes with the bug.

Two shorthands: "experiment": {"from": "lm"|"mt", "set": {"a.b": V}, "raw": {"a.b": "1e400"}}
writes {e}, the good experiment with those fields changed, and by default runs
`train {e} --out {work}/out` with {work}/out absent afterwards; "ckpt": {"run": "lm"|"mt",
"cmd": "eval"|"translate"|..., "edit": EDIT, ...} copies the good run to {run}, replaces its
checkpoint_last ({ck}) by an edited copy, and runs the command on it (CHECKPOINT_COMMANDS).

Around every case the runner snapshots the good runs, every folder the setup copied and the
"unchanged" ones (the name and sha256 of each file; `.lock` aside: it records the last writer's
PID) and fails the case if a file was lost, added or changed. Commands run in their own process
group (killed at the time bound) with OMP_NUM_THREADS=1, an address-space limit of 6 GiB (a
sanitized binary: ASan's allocator limit instead) and their own PILLARS_CACHE inside WORKDIR.

Good runs, made once at the start (with the mirror only): {lm}, a Tiny Shakespeare language
model (2 layers, d 64, 3 updates) and {mt}, a Multi30k de-en translation model (the `tiny` config,
200 BPE merges, 2 updates). Exit status: 0 when every case that ran passed (or failed as marked),
1 otherwise.

PLACEHOLDERS: {bin} the binary, {src} the source tree, {work} the case's own empty folder,
{lm} {mt} the good runs, {lm_json} {mt_json} their experiment files (valid; cases copy and break
them), {broken} tests/experiments_broken, {exp} experiments/, {cache} the dataset cache the
binary uses ($PILLARS_CACHE: WORKDIR/cache, or the case's own), {e} {work}/e.json, {run}
{work}/run and {ck} {run}/checkpoint_last.safetensors.

SETUP steps: {"write": P, "text": S} | {"write": P, "json": V} | {"write": P, "hex": H} |
{"write": P, "repeat": S, "times": N, "then": T} | {"write": P, "append": H} (bytes added) |
{"fifo": P} | {"symlink": P, "to": T} | {"mkdir": P} | {"remove": P} | {"copy": SRC, "to": DST}
(a file or a folder) | {"deep_json": P, "depth": N, "inside": FIELD, "base": EXP} (N nested
arrays: the file, or one field's value) | {"edit_json": P, "from": SRC, "set": {...}, "raw": {...}}
| {"lines": P, "op": "swap", "at": [I, J]} or {"lines": P, "op": "append", "text": S} |
{"checkpoint": DST, "from": SRC, "edit": EDIT, ...} (EDIT: CHECKPOINT_EDITS) | {"pillars": ARGS}
(the binary, which must succeed: an import to damage afterwards).
"""
import argparse
import glob
import hashlib
import json
import os
import re
import resource
import shutil
import signal
import struct
import subprocess
import sys
import time

PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")  # {work}, {lm}, ...: replaced; any other brace is text
SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES = os.path.join(SRC, "tests", "bad_input")

# ---- the good runs ---------------------------------------------------------------------------

LM_EXPERIMENT = {
    "name": "bad-input-lm",
    "task": "language_modeling",
    "data": {"dataset": "tinyshakespeare", "bpe_merges": 200, "block_size": 64, "max_tokens": 1024},
    "model": {"config": "lm-small", "layers": 2, "d_model": 64, "heads": 2, "ffn": 128, "dropout": 0.0},
    "optim": {"lr": 1e-3, "warmup_updates": 10},
    "train": {"max_epochs": 1, "max_updates": 3, "label_smoothing": 0.0, "best_metric": "ppl",
              "valid_bleu": False, "log_every": 1},
    "heads": {"metrics": False, "metrics_sentences": 4},
    "eval": {"checkpoint": "last"},
}
MT_EXPERIMENT = {
    "name": "bad-input-mt",
    "task": "translation",
    "data": {"dataset": "multi30k-de-en", "source": "de", "target": "en", "bpe_merges": 200,
             "test_split": "test_2016_flickr", "max_tokens": 512},
    "model": {"config": "tiny", "dropout": 0.0, "attention_dropout": 0.0, "activation_dropout": 0.0},
    "optim": {"lr": 1e-3, "warmup_updates": 10},
    "train": {"max_epochs": 1, "max_updates": 2, "best_metric": "loss", "valid_bleu": False, "log_every": 1},
    "heads": {"metrics": False, "metrics_sentences": 4},
    "eval": {"checkpoint": "last", "beam": 2, "batch_sentences": 16},
}

# ---- safetensors, as the binary writes them (engine/io/safetensors.h) ------------------------

MASK = (1 << 64) - 1


def checksum(data):
    """base/checksum.h's Checksum64 (as tests/golden/read_safetensors.py computes it)."""
    h = 0
    padded = data + b"\0" * (-len(data) % 8)
    for (w,) in struct.iter_unpack("<Q", padded):
        h = ((h ^ w) * 0x9E3779B97F4A7C15) & MASK
    z = h ^ len(data)
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return "mix64:%016x" % (z ^ (z >> 31))


def _u64(v):
    return struct.pack("<Q", v)


def _string(s):
    b = s.encode()
    return _u64(len(b)) + b


def checksum_v2(metadata, tensors):
    """engine/io/safetensors.h's "mix64v2:" checksum: the metadata (keys in byte order, the checksum
    itself left out), the tensors' names, dtypes and shapes, then their data."""
    stream = b"".join(_string(k) + _string(v) for k, v in sorted(metadata.items(), key=lambda kv: kv[0].encode())
                      if k != "pillars.checksum")
    stream += _u64(len(tensors))
    for name, dtype, shape, _ in tensors:
        stream += _string(name) + _string(dtype) + _u64(len(shape)) + b"".join(_u64(d) for d in shape)
    stream += b"".join(t[3] for t in tensors)
    return "mix64v2:" + checksum(stream)[len("mix64:"):]


class Safetensors:
    """A checkpoint taken apart: metadata (str -> str) and tensors in file order."""

    def __init__(self, blob):
        (n,) = struct.unpack_from("<Q", blob, 0)
        header = json.loads(blob[8:8 + n])
        data = blob[8 + n:]
        self.metadata = header.pop("__metadata__", {})
        self.tensors = []  # [name, dtype, shape, bytes]
        for name, e in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"]):
            b, e_ = e["data_offsets"]
            self.tensors.append([name, e["dtype"], list(e["shape"]), data[b:e_]])

    def tensor(self, name):
        for t in self.tensors:
            if t[0] == name:
                return t
        raise KeyError(f"no tensor {name!r} in the checkpoint (have: {[t[0] for t in self.tensors][:8]}...)")

    def serialize(self, checksum_mode="recompute", raw_header=None):
        data = b"".join(t[3] for t in self.tensors)
        meta = dict(self.metadata)
        if checksum_mode == "recompute":
            meta["pillars.checksum"] = checksum_v2(meta, self.tensors)
        elif checksum_mode == "data_only":  # as files written before the metadata was covered
            meta["pillars.checksum"] = checksum(data)
        elif checksum_mode == "drop":
            meta.pop("pillars.checksum", None)
        if raw_header is None:
            header, offset = {"__metadata__": meta}, 0
            for name, dtype, shape, raw in self.tensors:
                header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
                offset += len(raw)
            raw_header = json.dumps(header, separators=(",", ":"))
        text = raw_header.encode()
        text += b" " * (-(8 + len(text)) % 8)
        return struct.pack("<Q", len(text)) + text + data


def _floats(raw):
    return list(struct.unpack(f"<{len(raw) // 4}f", raw))


def _pack_floats(values):
    return struct.pack(f"<{len(values)}f", *values)


# Each edit takes the file's bytes and the step's arguments and returns the new bytes.
def edit_truncate(blob, a):
    keep = a.get("keep", 0.5)
    return blob[:int(len(blob) * keep) if isinstance(keep, float) else keep]


def edit_flip_data_byte(blob, a):
    at = len(blob) - a.get("from_end", 100)
    return blob[:at] + bytes([blob[at] ^ 0x10]) + blob[at + 1:]


def edit_header_byte(blob, a):  # overwrite a byte of the JSON header with a given character
    (n,) = struct.unpack_from("<Q", blob, 0)
    text = blob[8:8 + n]
    at = text.find(a["find"].encode()) + a.get("shift", 0)
    assert at >= 0, a
    return blob[:8 + at] + a["put"].encode() + blob[8 + at + 1:]


def edit_header_length(blob, a):
    (n,) = struct.unpack_from("<Q", blob, 0)
    value = {"huge": 1 << 62, "past_end": len(blob), "short": n - 10, "zero": 0}.get(a["value"], a["value"])
    return struct.pack("<Q", value) + blob[8:]


def edit_append(blob, a):
    return blob + bytes.fromhex(a["hex"])


def _structural(fn):
    """An edit of the parsed checkpoint; re-serialized with its checksum recomputed (or kept: then
    the check fires; "data_only": the older checksum of the data alone; or dropped: then the file
    has none, as another writer's, and is refused without --allow-unchecked)."""
    def edit(blob, a):
        st = Safetensors(blob)
        raw_header = fn(st, a)  # None, or a header text the JSON encoder could not write
        return st.serialize(a.get("checksum", "recompute"), raw_header)
    return edit


@_structural
def edit_set_model(st, a):  # change fields of the recorded model config ("pillars.model")
    model = json.loads(st.metadata["pillars.model"])
    model.update(a["set"])
    st.metadata["pillars.model"] = json.dumps(model)


@_structural
def edit_set_state(st, a):  # change fields of the recorded trainer state ("pillars.state")
    state = json.loads(st.metadata["pillars.state"])
    state.update(a["set"])
    st.metadata["pillars.state"] = json.dumps(state)


@_structural
def edit_set_meta(st, a):  # set (or with null, remove) raw metadata strings
    for k, v in a["set"].items():
        if v is None:
            st.metadata.pop(k, None)
        else:
            st.metadata[k] = v


@_structural
def edit_drop_tensor(st, a):
    st.tensors.remove(st.tensor(a["tensor"]))


@_structural
def edit_add_tensor(st, a):
    n = 1
    for d in a["shape"]:
        n *= d
    st.tensors.append([a["tensor"], "F32", a["shape"], _pack_floats([0.5] * n)])


@_structural
def edit_dtype(st, a):  # an F32 tensor converted: to I32 (x1000, rounded), BF16 (truncated) or F64
    t = st.tensor(a["tensor"])
    if a["to"] == "BF16":
        t[3] = b"".join(struct.pack("<I", struct.unpack("<I", t[3][i:i + 4])[0])[2:] for i in range(0, len(t[3]), 4))
    elif a["to"] == "F64":
        t[3] = struct.pack(f"<{len(t[3]) // 4}d", *_floats(t[3]))
    elif a["to"] == "I32":
        t[3] = struct.pack(f"<{len(t[3]) // 4}i", *[int(x * 1000) for x in _floats(t[3])])
    t[1] = a["to"]


@_structural
def edit_set_value(st, a):  # one element to NaN / inf / a number
    t = st.tensor(a["tensor"])
    v = _floats(t[3])
    v[a.get("index", 0)] = float(a["value"])
    t[3] = _pack_floats(v)


@_structural
def edit_reshape(st, a):
    st.tensor(a["tensor"])[2] = a["shape"]


@_structural
def edit_rename(st, a):
    st.tensor(a["tensor"])[0] = a["to"]


@_structural
def edit_strip_optimizer(st, a):
    st.tensors = [t for t in st.tensors if not t[0].startswith("optimizer.")]


@_structural
def edit_duplicate_name(st, a):  # the header names a tensor twice (a JSON object with a repeated key)
    header = json.dumps({"__metadata__": dict(st.metadata, **{"pillars.checksum": checksum(b"".join(t[3] for t in st.tensors))})},
                        separators=(",", ":"))[:-1]
    offset, parts = 0, []
    for name, dtype, shape, raw in st.tensors:
        parts.append(json.dumps(name) + ":" + json.dumps({"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}))
        offset += len(raw)
    parts[1] = json.dumps(st.tensors[0][0]) + parts[1][parts[1].index(":"):]
    return header + "," + ",".join(parts) + "}"


CHECKPOINT_EDITS = {
    "truncate": edit_truncate, "flip_data_byte": edit_flip_data_byte,
    "header_byte": edit_header_byte, "header_length": edit_header_length, "append": edit_append,
    "set_model": edit_set_model, "set_state": edit_set_state, "set_meta": edit_set_meta, "drop_tensor": edit_drop_tensor,
    "add_tensor": edit_add_tensor, "dtype": edit_dtype, "set_value": edit_set_value, "reshape": edit_reshape,
    "rename": edit_rename, "strip_optimizer": edit_strip_optimizer, "duplicate_name": edit_duplicate_name,
}

# ---- setup steps ------------------------------------------------------------------------------


def set_dotted(obj, dotted, value):
    keys = dotted.split(".")
    for k in keys[:-1]:
        obj = obj.setdefault(k, {})
    obj[keys[-1]] = value


def run_setup(step, sub, pillars):
    p = lambda key: sub(step[key])  # noqa: E731
    if "pillars" in step:  # a command that must succeed first (an import to corrupt afterwards)
        rc, out, err = pillars([sub(a) for a in step["pillars"]])
        if rc != 0:
            raise RuntimeError(f"setup command {step['pillars']} failed (exit {rc}): {err.decode(errors='replace')[-500:]}")
    elif "write" in step:
        path = p("write")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if "append" in step:  # bytes added to an existing file (a file the binary wrote)
            open(path, "ab").write(bytes.fromhex(step["append"]))
            return
        if "json" in step:
            body = json.dumps(step["json"], indent=1).encode()
        elif "hex" in step:
            body = bytes.fromhex(step["hex"])
        elif "repeat" in step:
            body = sub(step["repeat"]).encode() * step["times"] + sub(step.get("then", "")).encode()
        else:
            body = sub(step["text"]).encode()
        open(path, "wb").write(body)
    elif "fifo" in step:
        os.makedirs(os.path.dirname(p("fifo")), exist_ok=True)
        os.mkfifo(p("fifo"))
    elif "symlink" in step:
        os.symlink(sub(step["to"]), p("symlink"))
    elif "mkdir" in step:
        os.makedirs(p("mkdir"), exist_ok=True)
    elif "remove" in step:
        target = p("remove")
        shutil.rmtree(target) if os.path.isdir(target) and not os.path.islink(target) else os.unlink(target)
    elif "copy" in step:
        src, dst = p("copy"), p("to")
        if os.path.isdir(src):
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".lock"))
        else:
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copyfile(src, dst)
    elif "deep_json" in step:  # N nested arrays, the whole file or one field's value
        depth = step["depth"]
        deep = "[" * depth + "]" * depth
        inside = step.get("inside")
        if inside:
            base = json.load(open(sub(step["base"])))
            set_dotted(base, inside, "@@DEEP@@")
            text = json.dumps(base).replace('"@@DEEP@@"', deep)
        else:
            text = deep
        open(p("deep_json"), "w").write(text)
    elif "edit_json" in step:
        path = p("edit_json")
        obj = json.load(open(sub(step.get("from", step["edit_json"]))))
        for k, v in step.get("set", {}).items():
            set_dotted(obj, k, sub(v))
        raws = list(step.get("raw", {}).items())  # values JSON cannot hold (1e400): spliced in as text
        for i, (k, v) in enumerate(raws):
            set_dotted(obj, k, f"@@RAW{i}@@")
        raw = json.dumps(obj, indent=1)
        for i, (k, v) in enumerate(raws):
            raw = raw.replace(f'"@@RAW{i}@@"', v)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, "w").write(raw)
    elif "lines" in step:
        path = p("lines")
        lines = open(path, "rb").read().split(b"\n")
        if step["op"] == "swap":
            i, j = step["at"]
            lines[i], lines[j] = lines[j], lines[i]
        elif step["op"] == "append":
            lines = lines[:-1] + [sub(step["text"]).encode(), b""]
        open(path, "wb").write(b"\n".join(lines))
    elif "checkpoint" in step:
        blob = open(p("from"), "rb").read()
        out = CHECKPOINT_EDITS[step["edit"]](blob, step)
        os.makedirs(os.path.dirname(p("checkpoint")), exist_ok=True)
        open(p("checkpoint"), "wb").write(out)
    else:
        raise ValueError(f"unknown setup step {step}")


# ---- snapshots --------------------------------------------------------------------------------


def snapshot(root):
    """{relative path: sha256} of every file under root (".lock" aside), or None if root is absent."""
    if not os.path.exists(root):
        return None
    out = {}
    for dirpath, dirs, files in os.walk(root):
        dirs.sort()
        for f in sorted(files):
            full = os.path.join(dirpath, f)
            rel = os.path.relpath(full, root)
            if f == ".lock":
                continue
            if os.path.islink(full) or not os.path.isfile(full):
                out[rel] = "(special)"
                continue
            h = hashlib.sha256()
            with open(full, "rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    h.update(chunk)
            out[rel] = h.hexdigest()
    return out


def snapshot_diff(before, after):
    if before == after:
        return ""
    if after is None:
        return "the folder is gone"
    lost = sorted(set(before) - set(after))
    added = sorted(set(after) - set(before))
    changed = sorted(k for k in set(before) & set(after) if before[k] != after[k])
    return "; ".join(f"{what}: {', '.join(names[:5])}" for what, names in
                     (("lost", lost), ("added", added), ("changed", changed)) if names)


# ---- running ----------------------------------------------------------------------------------


def is_sanitized(binary):
    tail = b""
    with open(binary, "rb") as f:
        while chunk := f.read(1 << 24):
            if b"__asan_init" in tail + chunk or b"__ubsan_handle" in tail + chunk:
                return True
            tail = chunk[-32:]
    return False


def limit_resources(sanitized):
    def apply():
        os.setsid()  # its own process group: a timeout kills everything it started
        if not sanitized:  # AddressSanitizer reserves terabytes of address space; it gets its own limit
            resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))
    return apply


def run_binary(argv, stdin_bytes, timeout, env, sanitized, cwd):
    start = time.monotonic()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            cwd=cwd, preexec_fn=limit_resources(sanitized))
    try:
        out, err = proc.communicate(stdin_bytes, timeout=timeout)
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        rc = None
    return rc, out, err, time.monotonic() - start


def stdin_of(case, sub):
    s = case.get("stdin")
    if s is None:
        return b""
    if isinstance(s, str):
        return sub(s).encode()
    if "hex" in s:
        return bytes.fromhex(s["hex"])
    return sub(s["repeat"]).encode() * s["times"] + sub(s.get("then", "")).encode()


def check_case(case, rc, out, err, timeout, snaps_before, snaps_after, sub):
    """The reasons the case failed (empty: it passed)."""
    problems = []
    if rc is None:
        return [f"still running after {timeout:.0f} s (killed)"]
    if rc != case["exit"]:
        problems.append(f"exit {rc}, expected {case['exit']}")
    text = err.decode("utf-8", "replace")
    for s in case.get("stderr", []):
        if sub(s) not in text:
            problems.append(f"stderr lacks {sub(s)!r}")
    so = case.get("stdout", {})
    otext = out.decode("utf-8", "replace")
    if "lines" in so and otext.count("\n") != so["lines"]:
        problems.append(f"stdout has {otext.count(chr(10))} lines, expected {so['lines']}")
    for s in so.get("has", []):
        if sub(s) not in otext:
            problems.append(f"stdout lacks {sub(s)!r}")
    for path, before in snaps_before.items():
        d = snapshot_diff(before, snaps_after[path])
        if d:
            problems.append(f"{path} changed: {d}")
    for a in case.get("absent", []):
        if os.path.lexists(sub(a)):
            problems.append(f"{sub(a)} exists")
    if "AddressSanitizer" in text or "runtime error:" in text or "LeakSanitizer" in text:
        problems.append("a sanitizer report")
    return problems


# The commands a checkpoint case runs ("ckpt": {"cmd": ...}) on {run}, a copy of a good run whose
# checkpoint_last is {ck}.
CHECKPOINT_COMMANDS = {
    "eval": ["eval", "{run}", "--checkpoint", "last"],
    "translate": ["translate", "{run}", "--checkpoint", "last"],
    "generate": ["generate", "{run}", "--checkpoint", "last", "--prompt", "ROMEO:", "--max-tokens", "5"],
    "metrics": ["metrics", "{run}", "--checkpoint", "last", "--sentences", "2"],
    "prune": ["prune", "{lm_json}", "--set", "prune.method=v2s", "--set", "prune.vote_batches=1", "--set", "prune.finetune_epochs=1",
              "--set", "prune.finetune_minutes=0.01", "--from", "{ck}", "--out", "{work}/out", "--quiet", "--no-eval"],
    "init_from": ["train", "{lm_json}", "--set", "model.init_from={ck}", "--out", "{work}/out", "--quiet", "--no-eval"],
}


def expand(c):
    """The shorthand "experiment": {"from": "lm"|"mt", "set": {...}, "raw": {...}}: {e} is the good
    experiment file with those fields changed, and by default the case trains it into {work}/out,
    which must not appear."""
    x = c.get("experiment")
    if x:
        step = {"edit_json": "{e}", "from": "{%s_json}" % x.get("from", "lm"), "set": x.get("set", {}), "raw": x.get("raw", {})}
        c.setdefault("setup", []).insert(0, step)
        c.setdefault("args", ["train", "{e}", "--out", "{work}/out"])
        c.setdefault("absent", ["{work}/out"])
    k = c.get("ckpt")
    if k is not None:
        run = k.get("run", "lm")
        steps = [{"copy": "{%s}" % run, "to": "{run}"}]
        if "edit" in k:
            edit = {key: v for key, v in k.items() if key not in ("run", "cmd")}
            steps.append(dict(edit, checkpoint="{ck}", **{"from": "{%s}/checkpoint_last.safetensors" % run}))
        c["setup"] = steps + c.get("setup", [])
        c.setdefault("args", CHECKPOINT_COMMANDS[k.get("cmd", "eval")])
        if k.get("cmd") == "translate":
            c.setdefault("stdin", "Ein Hund läuft über die Wiese.\n")
        c["needs"] = sorted(set(c.get("needs", []) + [run]))
    return c


def from_expected(g):
    """One case per file of tests/experiments_broken (EXPECTED.json: the error each must give):
    `pillars train FILE --out DIR` exits 2 naming the file and the field (the first quoted name in
    the expected error; the whole error where it quotes none, as for JSON syntax errors), and
    makes no DIR. The exact wording is tests/test_experiment.cpp's to check."""
    expected = json.load(open(os.path.join(SRC, g["generate_from"])))
    for f, e in expected.items():
        sets = [a for s in e.get("set", []) for a in ("--set", s)]
        quoted = re.search(r'"[^"]+"', e["error"])
        g["cases"].append({"name": f[:-len(".json")], "args": ["train", "{broken}/" + f] + sets + ["--out", "{work}/out"],
                           "exit": 2, "stderr": ["{broken}/" + f, quoted[0] if quoted else e["error"]],
                           "absent": ["{work}/out"], "timeout": 10})


def load_cases(only):
    groups = []
    for path in sorted(glob.glob(os.path.join(CASES, "*.json"))):
        g = json.load(open(path))
        g["file"] = os.path.relpath(path, SRC)
        if "generate_from" in g:
            from_expected(g)
        g["cases"] = [expand(c) for c in g["cases"]]
        seen = set()
        for c in g["cases"]:
            assert c["name"] not in seen, f"{path}: case {c['name']} twice"
            seen.add(c["name"])
            assert "exit" in c and "args" in c, f"{path}: case {c['name']} needs args and exit"
            if c["exit"] == 2:
                assert c.get("stderr"), f"{path}: case {c['name']}: an exit-2 case must say what stderr names"
        g["cases"] = [c for c in g["cases"] if not only or any(o in f"{g['group']}/{c['name']}" for o in only)]
        groups.append(g)
    return groups


def make_good_runs(binary, work, env, sanitized, reuse, log):
    """The two good runs, trained once; {} for each one the mirror cannot make."""
    runs = {}
    for key, exp in (("lm", LM_EXPERIMENT), ("mt", MT_EXPERIMENT)):
        exp_path = os.path.join(work, f"{key}.json")
        json.dump(exp, open(exp_path, "w"), indent=1)
        run_dir = os.path.join(work, "runs", key)
        if reuse and os.path.exists(os.path.join(run_dir, "checkpoint_last.safetensors")):
            runs[key] = run_dir
            continue
        shutil.rmtree(run_dir, ignore_errors=True)
        t = time.monotonic()
        rc, out, err, _ = run_binary([binary, "train", exp_path, "--out", run_dir, "--no-eval", "--quiet", "--threads", "2"],
                                     b"", 600 * (4 if sanitized else 1), env, sanitized, work)
        if rc != 0:
            log(f"could not make the good run {key} (exit {rc}):\n{err.decode(errors='replace')[-3000:]}")
            sys.exit(1)
        log(f"good run {key}: {run_dir} ({time.monotonic() - t:.1f} s)")
        runs[key] = run_dir
    return runs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("binary")
    ap.add_argument("workdir")
    ap.add_argument("--only", action="append", default=[], help="run the cases whose group/name contains this")
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    ap.add_argument("--reuse", action="store_true", help="keep WORKDIR's good runs from an earlier invocation")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every case's stderr")
    args = ap.parse_args()
    groups = load_cases(args.only)
    if args.list:
        for g in groups:
            for c in g["cases"]:
                mark = "  [known failing]" if c.get("known_failing") else ""
                print(f"{g['group']}/{c['name']}{mark}")
        return 0

    binary = os.path.abspath(args.binary)
    work = os.path.abspath(args.workdir)
    if not args.reuse:
        shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work, exist_ok=True)
    shutil.rmtree(os.path.join(work, "cases"), ignore_errors=True)
    sanitized = is_sanitized(binary)
    scale = 6 if sanitized else 1
    env = dict(os.environ)
    env["PILLARS_CACHE"] = os.path.join(work, "cache")
    env["OMP_NUM_THREADS"] = "1"
    if sanitized:  # allocations the release build's address-space limit refuses are refused here too
        env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "") + ":allocator_may_return_null=1:max_allocation_size_mb=6000").lstrip(":")
    data = os.environ.get("PILLARS_DATA", "")
    have_data = bool(data) and os.path.isdir(os.path.join(data, "tinyshakespeare")) and \
        os.path.isdir(os.path.join(data, "multi30k-de-en"))
    log = lambda s: print(s, flush=True)  # noqa: E731
    log(f"bad-input corpus: {binary}{' (sanitized: time limits x6)' if sanitized else ''}, "
        f"{sum(len(g['cases']) for g in groups)} cases in {len(groups)} groups")
    t0 = time.monotonic()
    runs = {}
    needed = {n for g in groups for c in g["cases"] for n in c.get("needs", []) if n in ("lm", "mt")}
    if have_data and needed:
        runs = make_good_runs(binary, work, env, sanitized, args.reuse, log)
    elif not have_data:
        log(f"no dataset mirror (PILLARS_DATA={data or 'unset'}): the cases that need data are skipped")
        for key, exp in (("lm", LM_EXPERIMENT), ("mt", MT_EXPERIMENT)):
            json.dump(exp, open(os.path.join(work, f"{key}.json"), "w"), indent=1)

    counts = {"pass": 0, "fail": 0, "xfail": 0, "xpass": 0, "skip": 0}
    failures, xpasses, xfails, timings = [], [], [], []
    for g in groups:
        gcounts = dict.fromkeys(counts, 0)
        for case in g["cases"]:
            cid = f"{g['group']}/{case['name']}"
            needs = case.get("needs", [])
            if needs and not have_data:
                gcounts["skip"] += 1
                continue
            cwork = os.path.join(work, "cases", g["group"], case["name"])
            os.makedirs(cwork)
            values = {"bin": binary, "src": SRC, "work": cwork, "lm": runs.get("lm", os.path.join(work, "runs", "lm")),
                      "mt": runs.get("mt", os.path.join(work, "runs", "mt")), "lm_json": os.path.join(work, "lm.json"),
                      "mt_json": os.path.join(work, "mt.json"), "e": os.path.join(cwork, "e.json"),
                      "run": os.path.join(cwork, "run"), "ck": os.path.join(cwork, "run", "checkpoint_last.safetensors"),
                      "broken": os.path.join(SRC, "tests", "experiments_broken"),
                      "exp": os.path.join(SRC, "experiments")}
            sub = lambda s, v=values: PLACEHOLDER.sub(lambda m: v.get(m[1], m[0]), s) if isinstance(s, str) else s  # noqa: E731
            case_env = dict(env, **{k: sub(v) for k, v in dict(g.get("env", {}), **case.get("env", {})).items()})
            values["cache"] = case_env["PILLARS_CACHE"]

            def pillars(a, case_env=case_env, cwork=cwork):
                return run_binary([binary] + a, b"", 60 * scale, case_env, sanitized, cwork)[:3]
            try:
                for step in case.get("setup", []):
                    run_setup(step, sub, pillars)
            except Exception as err:  # a case whose files cannot be made is a broken case: a failure
                gcounts["fail"] += 1
                failures.append((cid, [], [f"setup failed: {type(err).__name__}: {err}"], ""))
                continue
            watched = [runs[k] for k in ("lm", "mt") if k in runs]
            watched += [sub(s["to"]) for s in case.get("setup", []) if "copy" in s and os.path.isdir(sub(s["to"]))]
            watched += [sub(p) for p in case.get("unchanged", [])]
            before = {p: snapshot(p) for p in watched}
            timeout = case.get("timeout", 20) * scale
            argv = [binary] + [sub(a) for a in case["args"]]
            rc, out, err, seconds = run_binary(argv, stdin_of(case, sub), timeout, case_env, sanitized, cwork)
            after = {p: snapshot(p) for p in watched}
            problems = check_case(case, rc, out, err, timeout, before, after, sub)
            lines = [line for line in err.decode("utf-8", "replace").splitlines() if line.strip()]
            said = " | ".join(lines)[:600] if lines else "(nothing on stderr)"
            timings.append((seconds, cid))
            if args.verbose:
                log(f"  {cid}: exit {rc} in {seconds:.2f}s: {said}")
            if case.get("known_failing"):
                if problems:
                    gcounts["xfail"] += 1
                    xfails.append((cid, case["known_failing"], problems))
                else:
                    gcounts["xpass"] += 1
                    xpasses.append(cid)
            elif problems:
                gcounts["fail"] += 1
                failures.append((cid, argv, problems, said))
            else:
                gcounts["pass"] += 1
        for k in counts:
            counts[k] += gcounts[k]
        log(f"{g['group']:<12} {len(g['cases']):3d} cases: " + ", ".join(f"{v} {k}" for k, v in gcounts.items() if v))

    for cid, reason, problems in xfails:
        log(f"XFAIL {cid}: {reason} [{'; '.join(problems)}]")
    for cid, argv, problems, said in failures:
        log(f"FAIL  {cid}: {'; '.join(problems)}\n      $ {' '.join(argv)}\n      stderr: {said}")
    for cid in xpasses:
        log(f"XPASS {cid}: marked known_failing but passes now: remove its \"known_failing\"")
    if args.verbose:
        log("slowest: " + ", ".join(f"{c} {t:.1f}s" for t, c in sorted(timings, reverse=True)[:12]))
    log(f"total: {', '.join(f'{v} {k}' for k, v in counts.items())} ({time.monotonic() - t0:.0f} s)"
        + (" — the data cases were skipped (no mirror)" if counts["skip"] else ""))
    return 1 if failures or xpasses else 0


if __name__ == "__main__":
    sys.exit(main())
