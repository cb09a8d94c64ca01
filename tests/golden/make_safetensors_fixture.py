#!/usr/bin/env python3
"""Writes tests/golden/fixture.safetensors, a safetensors file made independently of the C++ code.

Only `struct` and `json` are used, so the file's bytes follow from the format description alone
(https://github.com/huggingface/safetensors):

    8-byte little-endian u64 N | N bytes of JSON header (space-padded) | tensor data, back to back

tests/test_safetensors.cpp ("safetensors: reads the Python-written fixture") checks every value
below exactly; keep the two in sync. Run from anywhere:  python3 tests/golden/make_safetensors_fixture.py
"""
import json
import os
import struct

# name, safetensors dtype, shape, raw little-endian bytes. Deliberately NOT in alphabetical order,
# so a reader that sorts by name instead of by offset is caught.
F32 = [1.0, -2.5, 0.1, 3.0e38, -0.0, 1.0e-30]            # 0.1 is stored as the nearest float
BF16_BITS = [0x3F80, 0xC020, 0x0000, 0x4049, 0x7F80]     # 1.0, -2.5, 0.0, 3.140625, +inf
I32 = [0, -1, 2147483647, -2147483648]
I64 = [1, -1, 2**40 + 3, -(2**62), 2**63 - 1, -(2**63)]
SCALAR = 42.0

TENSORS = [
    ("zeta.weight", "F32", [2, 3], struct.pack("<6f", *F32)),
    ("alpha.bf16", "BF16", [5], struct.pack("<5H", *BF16_BITS)),
    ("mid.ids", "I32", [4], struct.pack("<4i", *I32)),
    ("beta.counts", "I64", [3, 2], struct.pack("<6q", *I64)),
    ("scalar", "F32", [], struct.pack("<f", SCALAR)),
    ("empty", "F32", [0, 4], b""),
]
METADATA = {"format": "pt", "producer": "make_safetensors_fixture.py"}


def build(tensors, metadata):
    entries = {}
    data = b""
    for name, dtype, shape, raw in tensors:
        entries[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    # The header lists the tensors in yet another order (reversed), with the metadata last: the
    # order of header keys carries no meaning.
    header = {name: entries[name] for name, _, _, _ in reversed(tensors)}
    header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * ((8 - (8 + len(text)) % 8) % 8)  # the data starts 8-byte aligned
    return struct.pack("<Q", len(text)) + text + data


def cross_check_with_torch():
    """If torch is importable, confirm the hand-written bf16 bit patterns (optional: not required)."""
    try:
        import torch
    except ImportError:
        print("torch not importable: skipping the bf16 cross-check")
        return
    floats = [1.0, -2.5, 0.0, 3.140625, float("inf")]
    got = [b & 0xFFFF for b in torch.tensor(floats, dtype=torch.bfloat16).view(torch.int16).tolist()]
    assert got == BF16_BITS, f"bf16 bit patterns disagree with torch: {got} vs {BF16_BITS}"
    print(f"torch {torch.__version__} agrees with the bf16 bit patterns")


def main():
    cross_check_with_torch()
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixture.safetensors")
    blob = build(TENSORS, METADATA)
    with open(out, "wb") as f:
        f.write(blob)
    print(f"wrote {out} ({len(blob)} bytes)")


if __name__ == "__main__":
    main()
