#!/bin/sh
# The GPU checks of the CUDA backend in one go, for a lent GPU machine (or any CUDA machine):
# the CUDA tests, compute-sanitizer memcheck and racecheck on the kernel tests, and the GPU
# benchmarks. Usage: tools/gpu_check.sh BIN_DIR [OUT_DIR]
#   BIN_DIR holds `pillars` and `pillars_tests` built with CUDA (e.g. -DPILLARS_CUDA_ARCHITECTURES=90a).
# Logs go to OUT_DIR (default: .); the summary lines are printed last.
set -u
BIN=$1
OUT=${2:-.}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
"$BIN/pillars_tests" -tc='cuda*' >"$OUT/tests.log" 2>&1
echo "cuda tests: $(tail -3 "$OUT/tests.log" | head -2 | tr '\n' ' ')"
"$BIN/pillars" bench softmax --device cuda --repeats 20 >"$OUT/bench_softmax.log" 2>&1
"$BIN/pillars" bench attention --device cuda --repeats 10 >"$OUT/bench_attention.log" 2>&1
cat "$OUT/bench_softmax.log" "$OUT/bench_attention.log"
for tool in memcheck racecheck; do
  timeout 100 compute-sanitizer --tool $tool --error-exitcode 9 "$BIN/pillars_tests" \
    -tc='cuda ops: softmax*,cuda ops: fused attention*,cuda attention: the fp32 path*,cuda attention: the bf16*' >"$OUT/$tool.log" 2>&1
  echo "compute-sanitizer $tool: exit $? ($(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/$tool.log" | tail -1))"
done
grep -E "ERROR|FAILED|failed" "$OUT/tests.log" | head -20
