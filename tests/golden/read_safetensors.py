#!/usr/bin/env python3
"""An independent safetensors reader (struct + json only) used to check files the C++ code writes.

    python3 tests/golden/read_safetensors.py FILE

prints one JSON object:

    {"header_length": N, "data_start": 8 + N, "metadata": {...}, "data_checksum": "mix64:...",
     "checksum": "mix64v2:...", "tensors": [{"name", "dtype", "shape", "data_offsets", "values"}, ...]}   # in offset order

Values are numbers: F32 and BF16 as floats (exact: Python floats are doubles), I32 and I64 as
integers; BF16 tensors also get "bits" (the raw u16 patterns). Non-finite floats are printed as the
strings "inf", "-inf", "nan". It checks the layout the format requires (offsets inside the buffer,
sizes matching shapes, no overlaps or holes) and exits with status 1 and a message on stderr if
the file is malformed. "data_checksum" is the checksum pillars records in the metadata
("pillars.checksum"), recomputed here from the data buffer as base/checksum.h defines it: the
buffer as little-endian u64 words (the last zero-padded), h = ((h ^ w) * P) mod 2^64 with
P = 0x9E3779B97F4A7C15, then SplitMix64's finalizer of h ^ length (what files written before the
metadata was covered record). "checksum" is the same function of the stream engine/io/safetensors.h
defines, which pillars records now: every metadata entry but "pillars.checksum" (keys in byte
order; each key and value as a u64 length and its bytes), the number of tensors, each tensor's
name, dtype (as strings) and shape (u64 rank and extents) in file order, then the data buffer.
"""
import json
import struct
import sys

SIZES = {"F32": 4, "BF16": 2, "I32": 4, "I64": 8}
FORMATS = {"F32": "f", "BF16": "H", "I32": "i", "I64": "q"}


def die(msg):
    sys.stderr.write(f"read_safetensors.py: {msg}\n")
    sys.exit(1)


def num(x):
    return x if x == x and abs(x) != float("inf") else str(x)


MASK = (1 << 64) - 1


def splitmix64_mix(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def checksum(data):
    h = 0
    padded = data + b"\0" * (-len(data) % 8)
    for (w,) in struct.iter_unpack("<Q", padded):
        h = ((h ^ w) * 0x9E3779B97F4A7C15) & MASK
    return "mix64:%016x" % splitmix64_mix(h ^ len(data))


def u64(v):
    return struct.pack("<Q", v)


def string(s):
    b = s.encode("utf-8")
    return u64(len(b)) + b


def complete_checksum(metadata, tensors, data):
    stream = b"".join(string(k) + string(v) for k, v in sorted(metadata.items(), key=lambda kv: kv[0].encode("utf-8"))
                      if k != "pillars.checksum")
    stream += u64(len(tensors))
    for t in tensors:
        stream += string(t["name"]) + string(t["dtype"]) + u64(len(t["shape"])) + b"".join(u64(d) for d in t["shape"])
    return "mix64v2:" + checksum(stream + data)[len("mix64:"):]


def read(path):
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        die("file shorter than 8 bytes")
    (n,) = struct.unpack_from("<Q", blob, 0)
    if 8 + n > len(blob):
        die("header length beyond end of file")
    header = json.loads(blob[8 : 8 + n].decode("utf-8"))
    data = blob[8 + n :]
    metadata = header.pop("__metadata__", {})
    tensors = []
    for name, e in header.items():
        dtype, shape, (begin, end) = e["dtype"], e["shape"], e["data_offsets"]
        count = 1
        for d in shape:
            count *= d
        if not (0 <= begin <= end <= len(data)) or end - begin != count * SIZES[dtype]:
            die(f"bad data_offsets for {name}")
        raw = data[begin:end]
        t = {"name": name, "dtype": dtype, "shape": shape, "data_offsets": [begin, end]}
        vals = list(struct.unpack(f"<{count}{FORMATS[dtype]}", raw))
        if dtype == "BF16":
            t["bits"] = vals
            vals = [struct.unpack("<f", struct.pack("<I", b << 16))[0] for b in vals]
        t["values"] = [num(v) for v in vals] if dtype in ("F32", "BF16") else vals
        tensors.append(t)
    tensors.sort(key=lambda t: tuple(t["data_offsets"]))
    pos = 0
    for t in tensors:
        if t["data_offsets"][0] != pos:
            die(f"overlap or hole before {t['name']}")
        pos = t["data_offsets"][1]
    if pos != len(data):
        die("trailing bytes after the last tensor")
    return {"header_length": n, "data_start": 8 + n, "metadata": metadata, "data_checksum": checksum(data),
            "checksum": complete_checksum(metadata, tensors, data), "tensors": tensors}


if __name__ == "__main__":
    if len(sys.argv) != 2:
        die("usage: read_safetensors.py FILE")
    print(json.dumps(read(sys.argv[1])))
