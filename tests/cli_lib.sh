# What the CLI test scripts share (sourced, after their own comment): the binary and the work
# folder from the arguments, `fail`, the waits below, the skip (exit 77) without the
# tinyshakespeare data, a fresh work folder, and the tiny language model's experiment file in EXP.
set -u
P=$1
W=$2
fail() { echo "FAIL: $*"; exit 1; }
# ends_within PID SECONDS: waits until process PID has exited, SECONDS at most; false if it still runs.
ends_within() {
  for _ in $(seq $(($2 * 10))); do
    kill -0 "$1" 2>/dev/null || return 0
    sleep 0.1
  done
  ! kill -0 "$1" 2>/dev/null
}
# wait_for_update LOG N: until the log has a train line at update >= N (300 s at most, then fail).
wait_for_update() {
  for _ in $(seq 3000); do
    [ -f "$1" ] && python3 - "$1" "$2" <<'PY' && return 0
import json, sys
ups = [json.loads(l).get("update", 0) for l in open(sys.argv[1]) if '"type":"train"' in l]
sys.exit(0 if ups and max(ups) >= int(sys.argv[2]) else 1)
PY
    sleep 0.1
  done
  fail "no update $2 in $1 within 300 s"
}
if [ -z "${PILLARS_DATA:-}" ] || [ ! -d "$PILLARS_DATA/tinyshakespeare" ]; then
  echo "skipped: the tinyshakespeare dataset is not in the mirror (PILLARS_DATA=${PILLARS_DATA:-unset})"
  exit 77
fi
rm -rf "$W" && mkdir -p "$W"
EXP=$(dirname "$0")/../experiments/tinyshakespeare-lm.json
