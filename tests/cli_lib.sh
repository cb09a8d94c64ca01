# What the CLI test scripts share (sourced, after their own comment): the binary and the work
# folder from the arguments, `fail`, the waits below, a small tmpfs for a full or read-only disk,
# the skip (exit 77) without the tinyshakespeare data, a fresh work folder, and the tiny language
# model's experiment file in EXP.
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
# mount_tmpfs DIR SIZE NAME REASON: mounts a tmpfs of SIZE (mount's size=, e.g. 8m) on DIR, made
# if need be, named NAME in the mount table: a small disk of its own, to fill or to make read-only.
# It is unmounted on any exit (INT, TERM and HUP exit 1, so they unmount too). Needs root: without
# it the script is skipped (exit 77) with "skipped: REASON (running as uid N)", and so it is, with
# mount's message, when the mount fails.
mount_tmpfs() {
  if [ "$(id -u)" != 0 ]; then
    echo "skipped: $4 (running as uid $(id -u))"
    exit 77
  fi
  TMPFS_DIR=$1
  mkdir -p "$TMPFS_DIR"
  if ! out=$(mount -t tmpfs -o "size=$2,mode=0755" "$3" "$TMPFS_DIR" 2>&1); then
    echo "skipped: cannot mount a tmpfs on $TMPFS_DIR: $out"
    exit 77
  fi
  trap 'umount "$TMPFS_DIR" 2>/dev/null || umount -l "$TMPFS_DIR"' EXIT
  trap 'exit 1' INT TERM HUP
}
if [ -z "${PILLARS_DATA:-}" ] || [ ! -d "$PILLARS_DATA/tinyshakespeare" ]; then
  echo "skipped: the tinyshakespeare dataset is not in the mirror (PILLARS_DATA=${PILLARS_DATA:-unset})"
  exit 77
fi
rm -rf "$W" && mkdir -p "$W"
EXP=$(dirname "$0")/../experiments/tinyshakespeare-lm.json
