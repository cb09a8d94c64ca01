#!/usr/bin/env python3
"""The docs render as written: every Markdown file of the repository is parsed with markdown-it
(CommonMark) and checked for what a broken fence does to a page.

  - every fenced code block is closed (an unclosed fence swallows the rest of the page);
  - no code block holds a Markdown heading ("## ..." and deeper; a shell comment has one '#') or
    bold Markdown prose ("**Data-parallel training.**", "- **The batches.**"): the signs of a
    fence that closed in the wrong place and turned prose into code;
  - README.md's sections come in the order a user reads them: what Pillars is, set up and run,
    using it, results, performance, development, layout;
  - README.md and docs/ARCHITECTURE.md repeat no heading (a reader jumps to them by name);
  - docs/ARCHITECTURE.md has no prose paragraph over 120 words (MAX_PARAGRAPH_WORDS), so it reads
    like a textbook: a paragraph is a run of non-blank lines outside code fences that is not a
    heading or a table; a list item with its continuation lines is one (its sub-items are
    paragraphs of their own);
  - no file cites an issue tracker's number: the repository speaks of the project only.

Usage: markdown_structure.py REPO_ROOT. Exit 0 when all hold, 1 naming each failure, 77 (CTest:
skipped) when markdown-it is not installed (Debian: python3-markdown-it).
"""
import os
import re
import subprocess
import sys
from pathlib import Path

try:
    from markdown_it import MarkdownIt
except ImportError:
    # Debian's module lives with /usr/bin/python3, which may not be the python3 on PATH.
    if sys.executable != "/usr/bin/python3" and os.path.exists("/usr/bin/python3"):
        sys.exit(subprocess.call(["/usr/bin/python3", *sys.argv]))
    print("skipped: markdown-it is not installed (apt-get install python3-markdown-it)")
    sys.exit(77)

README_SECTIONS = ["Set up and run the main job", "Using Pillars", "Results", "Performance", "Development", "Layout"]
HEADING_IN_CODE = re.compile(r"^\s{0,3}#{2,6}\s+\S")
PROSE_IN_CODE = re.compile(r"^\s{0,3}([-*] |\d+\. )?\*\*\S")  # "**Bold.**", "- **Item**": Markdown, not code
ISSUE_NUMBER = re.compile(r"\b[Ii]ssue \d+\b")
MAX_PARAGRAPH_WORDS = 120
SHORT_PARAGRAPH_FILES = (Path("docs/ARCHITECTURE.md"),)


def markdown_files(root: Path):
    skip = {"build", "build-cpu-sanitize", "build-fuzz", ".git", "runs", "studies"}
    for path in sorted(root.rglob("*.md")):
        if not any(part in skip or part.startswith("build") for part in path.relative_to(root).parts[:-1]):
            yield path


def check_file(path: Path, root: Path) -> list:
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    name = path.relative_to(root)
    problems = []
    tokens = MarkdownIt("commonmark").parse(text)
    for tok in tokens:
        if tok.type not in ("fence", "code_block"):
            continue
        start, end = tok.map
        if tok.type == "fence":
            closing = lines[end - 1].strip() if end - 1 < len(lines) else ""
            if end - start < 2 or not closing.startswith(tok.markup[0] * len(tok.markup)):
                problems.append(f"{name}:{start + 1}: the code fence opened here is never closed")
        for offset, line in enumerate(tok.content.split("\n")):
            if HEADING_IN_CODE.match(line):
                problems.append(f"{name}:{start + 2 + offset}: a heading inside a code block: {line.strip()!r}")
            elif PROSE_IN_CODE.match(line):
                problems.append(f"{name}:{start + 2 + offset}: Markdown prose inside a code block: {line.strip()[:60]!r}")
    for number, line in enumerate(lines, 1):
        if ISSUE_NUMBER.search(line):
            problems.append(f"{name}:{number}: cites an issue number: {line.strip()!r}")
    if name in (Path("README.md"), Path("docs/ARCHITECTURE.md")):
        headings = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open"]
        for h in sorted({h for h in headings if headings.count(h) > 1}):
            problems.append(f"{name}: the heading {h!r} appears {headings.count(h)} times")
    if name in SHORT_PARAGRAPH_FILES:
        # CommonMark has no tables: markdown-it parses one as a paragraph, so table rows are skipped.
        for i, tok in enumerate(tokens):
            if tok.type != "paragraph_open":
                continue
            start = tok.map[0]
            prose = [line for line in tokens[i + 1].content.split("\n") if not line.lstrip().startswith("|")]
            words = len(" ".join(prose).split())
            if words > MAX_PARAGRAPH_WORDS:
                problems.append(f"{name}:{start + 1}: a paragraph of {words} words (at most {MAX_PARAGRAPH_WORDS})")
    if name == Path("README.md"):
        sections = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open" and t.tag == "h2"]
        if sections != README_SECTIONS:
            problems.append(f"README.md: its sections are {sections}, expected {README_SECTIONS}")
    return problems


def main() -> int:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    files = list(markdown_files(root))
    if not any(f.name == "README.md" and f.parent == root for f in files):
        print(f"no README.md in {root}")
        return 1
    problems = [p for f in files for p in check_file(f, root)]
    for p in problems:
        print(p)
    print(f"{len(files)} Markdown files checked, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
