# What the CLI test scripts share (sourced, after their own comment): the binary and the work
# folder from the arguments, `fail`, the skip (exit 77) without the tinyshakespeare data, a fresh
# work folder, and the tiny language model's experiment file in EXP.
set -u
P=$1
W=$2
fail() { echo "FAIL: $*"; exit 1; }
if [ -z "${PILLARS_DATA:-}" ] || [ ! -d "$PILLARS_DATA/tinyshakespeare" ]; then
  echo "skipped: the tinyshakespeare dataset is not in the mirror (PILLARS_DATA=${PILLARS_DATA:-unset})"
  exit 77
fi
rm -rf "$W" && mkdir -p "$W"
EXP=$(dirname "$0")/../experiments/tinyshakespeare-lm.json
