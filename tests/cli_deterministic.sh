#!/bin/sh
# A run's result depends on its seed, its thread count and the instruction set of the kernels,
# and on nothing else (README: "The main job"): the same short training with 2 threads, run twice,
# once with both cores otherwise idle and once with a busy loop competing for them (so OpenMP's
# dynamic schedules hand work out differently), ends with bit-identical parameters, as the
# SHA-256 of checkpoint_last's tensor data shows (not its pillars.checksum, which also covers the
# metadata, where a run's timings are recorded), and identical logged losses.
# Nor on interruptions in a pruning run: V2S after 10 updates, then fine-tuning that continues phase
# 1's optimizer and schedule (prune.finetune_schedule "continue") to update 70, stopped by SIGTERM
# in the fine-tuning and resumed, ends with the uninterrupted run's parameters and optimizer state
# and logs its losses, its update numbers running on from phase 1's.
# Usage: cli_deterministic.sh PILLARS_BINARY WORK_DIR. Exit 77 (skipped) without the data.
. "$(dirname "$0")/cli_lib.sh"
FLAGS="--set data.block_size=64 --set model.layers=2 --set train.log_every=1 --set train.max_updates=6 --no-eval --quiet --threads 2"
# The SHA-256 of a checkpoint's tensor data (parameters and optimizer state: the bytes after the
# safetensors header).
checksum() { python3 - "$1/checkpoint_last.safetensors" <<'PY'
import hashlib, struct, sys
with open(sys.argv[1], "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    f.seek(8 + n)
    print("sha256:" + hashlib.sha256(f.read()).hexdigest()[:16])
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

# ---- a pruning run, interrupted in its fine-tuning ----------------------------------------------
PFLAGS="--set data.block_size=64 --set data.max_tokens=1024 --set model.layers=2 --set model.d_model=64 --set model.ffn=128
  --set train.log_every=1 --set heads.metrics=false --set heads.groups=2 --set prune.method=v2s --set prune.epoch=1000
  --set prune.vote_batches=2 --set train.max_updates=70 --set prune.finetune_updates=60 --no-eval --quiet --threads 2"
"$P" train "$EXP" --out "$W/prune" $PFLAGS || fail "the uninterrupted pruning run"
"$P" train "$EXP" --out "$W/prune_cut" $PFLAGS >/dev/null 2>&1 &
pid=$!
trap 'kill -9 $pid 2>/dev/null' EXIT
wait_for_update "$W/prune_cut/pruned/log.jsonl" 13
kill -TERM $pid
ends_within $pid 60 || { kill -9 $pid; fail "the pruning run still runs 60 s after SIGTERM"; }
wait $pid; rc=$?
[ $rc -eq 143 ] || fail "SIGTERM in the fine-tuning gave exit $rc, not 143 (did it end before the signal?)"
cut=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['state']['updates'])" "$W/prune_cut/pruned/checkpoint_last.json")
[ "$cut" -lt 70 ] || fail "the fine-tuning was not interrupted (checkpoint_last at update $cut)"
"$P" train "$EXP" --out "$W/prune_cut" $PFLAGS --resume || fail "the resumed pruning run"
a=$(checksum "$W/prune/pruned"); b=$(checksum "$W/prune_cut/pruned")
[ -n "$a" ] && [ "$a" = "$b" ] || fail "the fine-tuned model differs after the interruption at update $cut: checksum $a vs $b"
la=$(losses "$W/prune/pruned/log.jsonl"); lb=$(losses "$W/prune_cut/pruned/log.jsonl")
[ "$la" = "$lb" ] || fail "the fine-tuning's losses differ after the interruption at update $cut: '$la' vs '$lb'"
case "$la" in 11:*) ;; *) fail "the fine-tuning's updates do not run on from phase 1's 10: $la" ;; esac
echo "ok: pruning run stopped at update $cut of the fine-tuning and resumed: checksum $a at update 70, as uninterrupted"
