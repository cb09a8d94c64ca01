#!/bin/sh
# The code style is .clang-format's: every C++ and CUDA source git tracks must already be as
# clang-format writes it. Run `clang-format -i FILE` (version 14, Debian 12's) to fix one.
#
#   sh tests/format_check.sh [REPO_ROOT]
#
# Formatting differs between clang-format versions, so another version, or none, is reported to
# CTest as skipped (exit 77) with the reason, never as passed.
root="${1:-$(dirname "$0")/..}"
cd "$root" || exit 1
if ! command -v clang-format >/dev/null 2>&1; then
  echo "test skipped: clang-format is not installed (tools/install-deps.sh installs it)"
  exit 77
fi
version=$(clang-format --version | sed -n 's/.*version \([0-9]*\)\..*/\1/p')
if [ "$version" != 14 ]; then
  echo "test skipped: clang-format $version formats differently from version 14, which the style was applied with"
  exit 77
fi
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "test skipped: $root is not a git checkout, so the tracked sources are not known"
  exit 77
fi
files=$(git ls-files '*.cpp' '*.h' '*.cu' '*.cuh')
count=$(echo "$files" | wc -l)
bad=$(echo "$files" | xargs clang-format --dry-run 2>&1 | sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: warning: code should be clang-formatted.*/\1/p' | sort -u)
if [ -n "$bad" ]; then
  echo "format_check: these files differ from .clang-format's style (clang-format -i FILE fixes them):"
  echo "$bad" | sed 's/^/  /'
  exit 1
fi
echo "format_check: $count files as .clang-format writes them"
