#!/bin/sh
# One fuzz target as one CTest test (CMakeLists.txt, PILLARS_FUZZ):
#   run.sh BINARY TESTS_FUZZ_DIR TARGET WORK_DIR SECONDS MAX_LEN
# 1. replays every input of TESTS_FUZZ_DIR/regressions/TARGET/ once (each once crashed a target);
# 2. copies the seeds of TESTS_FUZZ_DIR/corpus/TARGET/ into WORK_DIR/corpus/ (so the committed
#    corpus is never written to) and fuzzes from there for SECONDS, inputs up to MAX_LEN bytes.
# Any crash, sanitizer report, timeout (10 s for one input), OOM (2 GB) or broken invariant fails
# the test; the input that did it is left in WORK_DIR/.
set -e
bin=$1 src=$2 name=$3 work=$4 seconds=$5 max_len=$6
rm -rf "$work"
mkdir -p "$work/corpus"
if [ -d "$src/regressions/$name" ] && [ -n "$(ls -A "$src/regressions/$name")" ]; then
  echo "pillars fuzz: replaying $(ls -A "$src/regressions/$name" | wc -l) regression input(s) of $name"
  find "$src/regressions/$name" -type f -exec "$bin" -rss_limit_mb=2048 -timeout=10 {} + || {
    echo "pillars fuzz: fuzz_$name fails on a regression input of tests/fuzz/regressions/$name/ (above)"
    exit 1
  }
fi
cp "$src/corpus/$name"/* "$work/corpus/"
"$bin" -rss_limit_mb=2048 -timeout=10 -max_len="$max_len" -max_total_time="$seconds" -print_final_stats=1 \
  -artifact_prefix="$work/" "$work/corpus" || {
  echo "pillars fuzz: fuzz_$name found a problem; the input is in $work/ (crash-*, leak-*, timeout-*, oom-*)."
  echo "Reproduce it with: $bin FILE; keep it as a regression in tests/fuzz/regressions/$name/"
  exit 1
}
