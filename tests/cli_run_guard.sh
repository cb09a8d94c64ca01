#!/bin/sh
# One writer per run directory, and a graceful stop, with the real binary (base/run_guard.h):
#   - a second `pillars train` into a folder in use exits 2 naming the folder and the holder's PID;
#   - SIGTERM ends the run with exit 143 within a bounded time, after saving checkpoint_last at the
#     last update it logged, and logging the stop;
#   - a temporary file left by an interrupted save is removed when the run resumes;
#   - --resume then continues exactly: its losses equal an uninterrupted run's, update for update;
#   - --overwrite of a folder in use is refused, naming the holder; kill -9 leaves a lock file that
#     does not block the next run, which is refused in a folder holding a run's files unless
#     --overwrite, which moves them all to the folder it names.
# Usage: cli_run_guard.sh PILLARS_BINARY WORK_DIR. Exit 77 (skipped) without the data.
. "$(dirname "$0")/cli_lib.sh"
FLAGS="--set data.block_size=64 --set model.layers=2 --set model.dropout=0 --set train.log_every=1 --no-eval --quiet --threads 1"
train() { # train OUT MAX_UPDATES [more flags]
  out=$1 max=$2; shift 2
  "$P" train "$EXP" --out "$out" $FLAGS --set train.max_updates="$max" "$@"
}
# In the background, started directly so that $! is the pillars process (not a subshell);
# killed on any exit of this script.
bg=""
trap '[ -n "$bg" ] && kill -9 $bg 2>/dev/null' EXIT
train_in_background() { # OUT
  "$P" train "$EXP" --out "$1" $FLAGS --set train.max_updates=100000 >/dev/null 2>&1 &
  bg=$!
}
losses() { python3 -c "
import json, sys
print(' '.join('%d:%.9g' % (d['update'], d['loss']) for d in map(json.loads, open(sys.argv[1])) if d['type'] == 'train'))" "$1"; }

# The run to interrupt, in the background.
train_in_background "$W/a"
pid=$bg
wait_for_update "$W/a/log.jsonl" 3

# A second writer is refused at once.
out=$(train "$W/a" 5 2>&1); rc=$?
[ $rc -eq 2 ] || fail "a second writer got exit $rc, not 2: $out"
echo "$out" | grep -q "$W/a is in use by another run (process $pid" || fail "the refusal does not name the folder and PID $pid: $out"

# SIGTERM: exit 143 within 60 s (an update and a save; sanitized builds are slow), checkpoint_last at the last logged update, the stop logged.
kill -TERM $pid
ends_within $pid 60 || { kill -9 $pid; fail "still running 60 s after SIGTERM"; }
wait $pid; rc=$?
[ $rc -eq 143 ] || fail "SIGTERM gave exit $rc, not 143"
python3 - "$W/a" <<'PY' || fail "checkpoint_last or the log disagree with the last update"
import json, sys
d = sys.argv[1]
lines = [json.loads(l) for l in open(d + "/log.jsonl")]
last_train = max(l["update"] for l in lines if l["type"] == "train")
end = lines[-1]
assert end["type"] == "end" and end["reason"] == "SIGTERM", end
saved = json.load(open(d + "/checkpoint_last.json"))["state"]["updates"]
assert saved == last_train == end["update"], (saved, last_train, end)
print("stopped at update", saved)
PY
stopped=$(python3 -c "import json; print(json.load(open('$W/a/checkpoint_last.json'))['state']['updates'])")

# An interrupted save's temporary, then --resume to stopped + 4: it is removed, and the losses of
# updates stopped+1 … stopped+4 equal those of an uninterrupted run.
touch "$W/a/checkpoint_last.safetensors.tmp.999999.7"
target=$((stopped + 4))
train "$W/a" $target --resume || fail "--resume after SIGTERM"
[ -e "$W/a/checkpoint_last.safetensors.tmp.999999.7" ] && fail "the stale temporary file was not removed"
train "$W/b" $target || fail "the uninterrupted run"
a=$(losses "$W/a/log.jsonl"); b=$(losses "$W/b/log.jsonl")
[ "$a" = "$b" ] || fail "resumed losses differ from the uninterrupted run's: '$a' vs '$b'"

# --overwrite of a folder a live run writes: refused, naming the holder; nothing moved.
train_in_background "$W/c"
pid=$bg
wait_for_update "$W/c/log.jsonl" 1
out=$(train "$W/c" 2 --overwrite 2>&1); rc=$?
[ $rc -eq 2 ] || fail "--overwrite of a folder in use got exit $rc, not 2: $out"
echo "$out" | grep -q "$W/c is in use by another run (process $pid" || fail "the refusal does not name the folder and PID $pid: $out"
ls -d "$W"/c.old-* 2>/dev/null && fail "--overwrite moved a folder in use"

# kill -9: the lock file stays, and blocks nobody. The folder holds a run's files, so a new run
# into it is refused (exit 2 naming --out and --overwrite); --overwrite moves them all aside, to
# the folder it names, and the new run starts in an empty one.
kill -9 $pid; wait $pid 2>/dev/null
[ -f "$W/c/.lock" ] || fail "no lock file in $W/c"
out=$(train "$W/c" 2 2>&1); rc=$?
[ $rc -eq 2 ] || fail "a new run into a folder with a run's files got exit $rc, not 2: $out"
echo "$out" | grep -q -- "--out $W/c holds files of a run" || fail "the refusal does not name --out: $out"
echo "$out" | grep -q -- "--overwrite" || fail "the refusal does not mention --overwrite: $out"
before=$(cd "$W/c" && ls -A | sort | tr '\n' ' ')
out=$(train "$W/c" 2 --overwrite 2>&1) || fail "a killed run's lock blocked --overwrite: $out"
aside=$(echo "$out" | sed -n "s|^--overwrite: moved the earlier content of $W/c to ||p")
[ -n "$aside" ] && [ -d "$aside" ] || fail "--overwrite did not say where it moved the files: $out"
[ "$(cd "$aside" && ls -A | sort | tr '\n' ' ')" = "$before" ] || fail "$aside does not hold what $W/c held ($before)"
[ -f "$W/c/checkpoint_last.safetensors" ] || fail "no new run in $W/c after --overwrite"
echo "ok"
