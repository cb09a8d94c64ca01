#!/usr/bin/env python3
"""The top-level folders depend one way: checks every #include "folder/..." against the DAG.

The DAG (drawn in docs/ARCHITECTURE.md) lists, for each folder of the library and the CLI, the
folders it may include. A folder not listed may include nothing of the project; tests/ may include
anything. Inside kernels/, KERNEL_RULES keep the device-neutral headers (kernels/args/, kernels/*.h)
below both device folders and CPU code off CUDA headers. Exit status 1 names every include that
runs against the DAG, with its file and line.

    python3 tests/include_dag.py [REPO_ROOT]
"""
import pathlib
import re
import sys

# folder -> the folders it may include (besides itself)
ALLOWED = {
    "base": set(),
    "runtime": {"base"},
    "kernels": {"base", "runtime"},
    "engine": {"base", "runtime", "kernels"},
    "text": {"base"},
    "metrics": {"base", "text"},
    "datasets": {"base"},
    "models": {"base", "engine"},
    "steps": {"base", "runtime", "kernels", "engine", "models"},
    "ght": {"base", "runtime", "kernels", "engine", "models", "steps"},
    "decode": {"base", "runtime", "kernels", "engine", "text", "models"},
    "train": {"base", "runtime", "kernels", "engine", "text", "metrics", "datasets", "models", "steps", "ght", "decode"},
    "study": {"base", "runtime", "kernels", "engine", "text", "metrics", "datasets", "models", "steps", "ght", "decode", "train"},
    "report": {"base", "runtime", "kernels", "engine", "text", "metrics", "datasets", "models", "steps", "ght", "decode", "train",
               "study"},
    "tools": {"base", "runtime", "kernels", "engine", "text", "metrics", "datasets", "models", "steps", "ght", "decode", "train",
              "study", "report"},
}
SOURCES = (".h", ".cpp", ".cu", ".cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s+([<"])([^>"]+)[>"]')


# Inside kernels/, one way too: the device-neutral argument structs (kernels/args/) include only
# standard headers (no extension: no CUDA, no intrinsics) and base/; they and the root headers
# (kernels/*.h) include neither device folder; CPU code never includes a CUDA header.
KERNEL_RULES = (
    ("kernels/args", lambda kind, target: target.startswith("base/") if kind == '"' else "." not in target,
     "kernels/args/ includes only standard headers and base/"),
    ("kernels/cpu", lambda kind, target: not (kind == '"' and target.startswith("kernels/cuda/")),
     "kernels/cpu/ may not include kernels/cuda/"),
)



def includes(paths):
    """(path, line number, line, kind, target) for every #include in the source files among paths;
    kind is '"' or '<', target the text between the delimiters."""
    for path in paths:
        if path.suffix not in SOURCES:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            m = INCLUDE.match(line)
            if m:
                yield path, number, line, m.group(1), m.group(2)


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
    wrong, checked = [], 0
    for folder, allowed in ALLOWED.items():
        for path, number, line, kind, target in includes(sorted((root / folder).rglob("*"))):
            if kind != '"' or "/" not in target:
                continue
            checked += 1
            top = target.split("/")[0]
            if top != folder and top in ALLOWED and top not in allowed:
                wrong.append(f"{path.relative_to(root)}:{number}: {folder}/ may not include {top}/ ({line.strip()})")
    for sub, allowed_include, rule in KERNEL_RULES:
        for path, number, line, kind, target in includes(sorted((root / sub).rglob("*"))):
            checked += 1
            if not allowed_include(kind, target):
                wrong.append(f"{path.relative_to(root)}:{number}: {rule} ({line.strip()})")
    for path, number, line, kind, target in includes(sorted((root / "kernels").glob("*.h"))):
        if kind != '"':
            continue
        checked += 1
        if target.startswith(("kernels/cpu/", "kernels/cuda/")):
            wrong.append(f"{path.relative_to(root)}:{number}: kernels/*.h includes neither device folder "
                         f"({line.strip()})")
    # Every top-level folder with sources must be in the table, or the test would miss it.
    for d in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "build"))):
        if d.name not in ALLOWED and d.name not in ("tests", "docs", "experiments") and any(
                f.suffix in SOURCES for f in d.rglob("*")):
            wrong.append(f"{d.name}/: a folder of sources that the include DAG does not place")
    for w in wrong:
        print(w)
    print(f"include_dag: {checked} project includes checked, {len(wrong)} against the DAG")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
