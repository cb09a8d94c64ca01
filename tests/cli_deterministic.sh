#!/bin/sh
# A run's result depends on its seed, its thread count and the instruction set of the kernels,
# and on nothing else (README: "The main job"): the same short training with 2 threads, run twice,
# once with both cores otherwise idle and once with a busy loop competing for them (so OpenMP's
# dynamic schedules hand work out differently), ends with bit-identical parameters, as the
# checksum of the tensor data in checkpoint_last's metadata shows, and identical logged losses.
# Usage: cli_deterministic.sh PILLARS_BINARY WORK_DIR. Exit 77 (skipped) without the data.
. "$(dirname "$0")/cli_lib.sh"
FLAGS="--set data.block_size=64 --set model.layers=2 --set train.log_every=1 --set train.max_updates=6 --no-eval --quiet --threads 2"
checksum() { python3 - "$1/checkpoint_last.safetensors" <<'PY'
import json, struct, sys
with open(sys.argv[1], "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    print(json.loads(f.read(n))["__metadata__"]["pillars.checksum"])
PY
}
losses() { python3 -c "
import json, sys
print(' '.join('%d:%r' % (d['update'], d['loss']) for d in map(json.loads, open(sys.argv[1])) if d['type'] == 'train'))" "$1"; }

"$P" train "$EXP" --out "$W/quiet" $FLAGS || fail "the first run"
# The second run shares the cores with two busy loops.
sh -c 'while :; do :; done' & hog1=$!
sh -c 'while :; do :; done' & hog2=$!
trap 'kill $hog1 $hog2 2>/dev/null' EXIT
"$P" train "$EXP" --out "$W/loaded" $FLAGS || fail "the second run"
kill $hog1 $hog2 2>/dev/null

a=$(checksum "$W/quiet"); b=$(checksum "$W/loaded")
[ -n "$a" ] && [ "$a" = "$b" ] || fail "the parameters differ: checksum $a (idle) vs $b (loaded)"
la=$(losses "$W/quiet/log.jsonl"); lb=$(losses "$W/loaded/log.jsonl")
[ "$la" = "$lb" ] || fail "the losses differ: '$la' vs '$lb'"
echo "ok: checksum $a after 6 updates, both runs"
