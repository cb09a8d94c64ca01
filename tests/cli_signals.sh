#!/bin/sh
# The signals that reach a run from outside, with the real binary (base/run_guard.h):
#   - SIGHUP (a closed terminal, a dropped ssh connection) saves and stops like SIGTERM: exit 129,
#     checkpoint_last at the last logged update, the stop logged; started with SIGHUP ignored
#     (nohup) the run ignores it;
#   - a pipe whose reader exits (`2>&1 | head -2`) does not end the run: it trains to its end, exits
#     0 with checkpoint_last saved, and log.jsonl notes once that stderr's lines were dropped;
#   - no other command is killed by a closed pipe either (generate, eval, metrics, report, graph,
#     schema, data: exit 0 with their stdout's reader gone);
#   - a write past `ulimit -f` fails with EFBIG: exit 1 naming the file, no temporary file left.
# Usage: cli_signals.sh PILLARS_BINARY WORK_DIR. Exit 77 (skipped) without the data.
. "$(dirname "$0")/cli_lib.sh"
FLAGS="--set data.block_size=64 --set model.layers=2 --set model.dropout=0 --set train.log_every=1 --no-eval --threads 1"
bg=""
trap '[ -n "$bg" ] && kill -9 $bg 2>/dev/null' EXIT
train_in_background() { # OUT
  "$P" train "$EXP" --out "$1" $FLAGS --quiet --set train.max_updates=100000 >/dev/null 2>&1 &
  bg=$!
}
# The log's last line and the saved state agree on the update the run stopped at, for REASON.
stopped_with() { # DIR REASON
  python3 - "$1" "$2" <<'PY'
import json, sys
d, reason = sys.argv[1], sys.argv[2]
lines = [json.loads(l) for l in open(d + "/log.jsonl")]
last_train = max(l["update"] for l in lines if l["type"] == "train")
end = lines[-1]
assert end["type"] == "end" and end["reason"] == reason, end
saved = json.load(open(d + "/checkpoint_last.json"))["state"]["updates"]
assert saved == last_train == end["update"], (saved, last_train, end)
PY
}

# SIGHUP: exit 129 after the save.
train_in_background "$W/hup"
pid=$bg
wait_for_update "$W/hup/log.jsonl" 2
kill -HUP $pid
ends_within $pid 60 || fail "still running 60 s after SIGHUP"
wait $pid; rc=$?
[ $rc -eq 129 ] || fail "SIGHUP gave exit $rc, not 129"
stopped_with "$W/hup" SIGHUP || fail "checkpoint_last or the log disagree with the last update after SIGHUP"

# Started with SIGHUP ignored (what nohup does): a SIGHUP changes nothing, a SIGTERM still stops it.
trap '' HUP
train_in_background "$W/nohup"
trap - HUP
pid=$bg
wait_for_update "$W/nohup/log.jsonl" 1
kill -HUP $pid
sleep 1
kill -0 $pid 2>/dev/null || fail "a run started with SIGHUP ignored ended on SIGHUP"
kill -TERM $pid
ends_within $pid 60 || fail "still running 60 s after SIGTERM"
wait $pid; rc=$?
[ $rc -eq 143 ] || fail "SIGTERM after an ignored SIGHUP gave exit $rc, not 143"

# A reader that leaves after two lines: the run goes on to max_updates and exits 0.
{ "$P" train "$EXP" --out "$W/pipe" $FLAGS --set train.max_updates=6; echo $? >"$W/pipe.rc"; } 2>&1 | head -2 >/dev/null
rc=$(cat "$W/pipe.rc")
[ "$rc" -eq 0 ] || fail "a closed pipe on stderr gave exit $rc, not 0 (141: killed by SIGPIPE)"
[ -f "$W/pipe/checkpoint_last.safetensors" ] || fail "no checkpoint_last after a closed pipe"
python3 - "$W/pipe" <<'PY' || fail "log.jsonl of the piped run: no end at update 6, or not one note about stderr"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1] + "/log.jsonl")]
end = lines[-1]
assert end["type"] == "end" and end["reason"] == "max_updates" and end["update"] == 6, end
notes = [l for l in lines if l["type"] == "note"]
assert len(notes) == 1 and notes[0]["stream"] == "stderr", notes
PY

# Every other command: a reader gone before the first write (`| true`; the command starts 0.3 s
# later) kills none of them with SIGPIPE (exit 141): each ends as it would have, with exit 0.
for cmd in "schema --markdown" "graph --passes" "data list" "generate $W/pipe --prompt ROMEO: --max-tokens 5" \
           "metrics $W/pipe --sentences 2" "eval $W/pipe" "report $W/pipe --no-model -o $W/pipe-report.html"; do
  { sleep 0.3; "$P" $cmd 2>/dev/null; echo $? >"$W/sigpipe.rc"; } | true
  rc=$(cat "$W/sigpipe.rc")
  [ "$rc" -eq 0 ] || fail "pillars $cmd with its stdout's reader gone gave exit $rc, not 0 (141: killed by SIGPIPE)"
done

# The file-size limit: 200 blocks (100 or 200 KiB, as the shell counts) hold the small files of a
# run, not its first checkpoint (8 MB). The data cache is made by the runs above.
out=$( (ulimit -f 200 && "$P" train "$EXP" --out "$W/big" $FLAGS --quiet --set train.max_updates=2) 2>&1); rc=$?
[ $rc -eq 1 ] || fail "a write past ulimit -f gave exit $rc, not 1 (153: killed by SIGXFSZ): $out"
echo "$out" | grep -q "$W/big/checkpoint_.*File too large" || fail "the error does not name the checkpoint and EFBIG: $out"
ls "$W/big" | grep -q '\.tmp\.' && fail "a temporary file was left in $W/big: $(ls "$W/big")"
echo "ok"
