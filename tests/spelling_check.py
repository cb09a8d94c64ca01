#!/usr/bin/env python3
"""One spelling in the repository: American English, as the configuration keys already are
(`heads.regularizer`, `summarization`).

    python3 tests/spelling_check.py [ROOT]          list every British form, exit 1 if any
    python3 tests/spelling_check.py [ROOT] --fix    rewrite them (and rename files) in place

It reads the files git tracks. Two kinds of text are left as they are:
  * text that is data, not ours: reference texts and token lists from the datasets
    (tests/golden/metrics/), and dataset file names;
  * a line that says `spelling: kept`: a name older files carry, still read beside the new one, or a name the data itself uses
    (a log key written before the rename, a manifest field), beside the new name.
"""
import os
import re
import subprocess
import sys

# Stems whose British -ise/-isation forms become -ize/-ization. An explicit list: "raise",
# "noise", "precise", "otherwise" and "emphasis" end the same way and are not candidates.
IZE_STEMS = """optim regular normal homogen summar initial serial material special vector token
recogn organ general minim maxim synchron visual final util categor random priorit custom author
character parameter quant stabil penal standard local memor amort emphas real capital
trivial canonical""".split()
IZE_ENDINGS = "e|es|ed|ing|er|ers|ation|ations|able"

WORDS = {
    "centre": "center", "centres": "centers", "centred": "centered", "centring": "centering",
    "colour": "color", "colours": "colors", "coloured": "colored",
    "licence": "license", "licences": "licenses",
    "behaviour": "behavior", "behaviours": "behaviors",
    "neighbour": "neighbor", "neighbours": "neighbors", "neighbouring": "neighboring",
    "favour": "favor", "favours": "favors", "favoured": "favored",
    "modelling": "modeling", "modelled": "modeled",
    "labelled": "labeled", "labelling": "labeling",
    "artefact": "artifact", "artefacts": "artifacts",
    "catalogue": "catalog", "grey": "gray",
    "analyse": "analyze", "analysed": "analyzed", "analyses": "analyzes", "analysing": "analyzing",
}

# A word starts where no lower-case letter comes before it or at a capital, and ends before a
# letter that is not a capital, so the parts of snake_case and camelCase names count as words.
START, END = r"(?:(?<![a-z])|(?=[A-Z]))", r"(?![a-z])"
IZE = re.compile(START + r"(?i:(un|re|de)?(" + "|".join(IZE_STEMS) + r")is(" + IZE_ENDINGS + r"))" + END)
WORD = re.compile(START + r"(?i:(" + "|".join(sorted(WORDS, key=len, reverse=True)) + r"))" + END)

# "analyses" is also the plural noun; the verb is rare in this code, so the noun is kept.
KEEP = {"analyses"}

SKIP_PREFIXES = ("tests/golden/metrics/",)
SELF = "tests/spelling_check.py"  # its tables name the British forms
TEXT_SUFFIXES = (".cpp", ".h", ".cu", ".cuh", ".py", ".sh", ".md", ".json", ".txt", ".cmake", ".in",
                 "Makefile", ".gitignore", "run", ".clang-format", ".html", ".css", ".js")


def same_case(src, dst):
    if src.isupper():
        return dst.upper()
    if src[:1].isupper():
        return dst[:1].upper() + dst[1:]
    return dst


def americanize(text):
    def ize(m):
        word = m.group(0)
        if word.lower() in KEEP:
            return word
        prefix, stem, ending = m.group(1) or "", m.group(2), m.group(3)
        return prefix + stem + same_case("is", "iz") + ending if not stem.isupper() else prefix + stem + "IZ" + ending.upper()

    def word(m):
        w = m.group(0)
        return w if w.lower() in KEEP else same_case(w, WORDS[w.lower()])

    return WORD.sub(word, IZE.sub(ize, text))


def tracked(root):
    """The files git tracks under root, or None where root is not a git checkout."""
    got = subprocess.run(["git", "-C", root, "ls-files", "-z"], capture_output=True)
    return [p for p in got.stdout.decode().split("\0") if p] if got.returncode == 0 else None


def main(argv):
    fix = "--fix" in argv
    args = [a for a in argv if not a.startswith("--")]
    root = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    paths = tracked(root)
    if paths is None:
        print(f"test skipped: {root} is not a git checkout, so the tracked files are not known")
        return 77
    problems = 0
    for path in paths:
        if path.startswith(SKIP_PREFIXES) or path == SELF or not path.endswith(TEXT_SUFFIXES):
            continue
        full = os.path.join(root, path)
        if os.path.islink(full) or not os.path.isfile(full):
            continue
        try:
            with open(full, encoding="utf-8") as f:
                lines = f.read().split("\n")
        except UnicodeDecodeError:
            continue  # a deliberately broken input of the bad-input tests
        changed = False
        for i, line in enumerate(lines):
            if "spelling: kept" in line:
                continue
            new = americanize(line)
            if new != line:
                problems += 1
                changed = True
                if not fix:
                    bad = sorted({m.group(0) for m in IZE.finditer(line)} | {m.group(0) for m in WORD.finditer(line)})
                    print(f"{path}:{i + 1}: British spelling: {', '.join(bad)}")
                lines[i] = new
        if fix and changed:
            with open(full, "w", encoding="utf-8") as f:
                f.write("\n".join(lines))
        new_path = americanize(path)
        if new_path != path:
            problems += 1
            if fix:
                subprocess.run(["git", "-C", root, "mv", path, new_path], check=True)
            else:
                print(f"{path}: British spelling in the file name (would be {new_path})")
    if fix:
        print(f"spelling: {problems} lines and names rewritten")
        return 0
    print(f"spelling: {problems} British forms" if problems else "spelling: American throughout")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
