# The exit codes of every subcommand, as the README documents them: 0 success, 2 bad usage or bad
# input, 1 a run-time failure (here: a read-only file system under every output a command writes,
# and a stdout that cannot take the output), never 1 or 0 for the other's case. The signals'
# codes (128 + n after a save) are held by cli_run_guard (train), cli_deterministic (prune) and
# cli_study (study); the bad-input corpus holds exit 2 for each command's bad files.
#   1. every subcommand `pillars --help` lists: --help exits 0, an unknown flag exits 2;
#   2. root only (a read-only tmpfs; skipped with the reason otherwise): eval, metrics -o, report -o,
#      train into a new folder and --resume, study and data prepare exit 1, naming the path;
#   3. a full stdout (/dev/full) is exit 1 for schema, data list and generate; a closed pipe is not.
#   sh tests/cli_exit_codes.sh BUILD/pillars WORK_DIR
. "$(dirname "$0")/cli_lib.sh"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
P=$(cd "$(dirname "$P")" && pwd)/$(basename "$P")
cd "$W" || exit 1
export OMP_NUM_THREADS=1

# expect CODE WHAT NAMED -- COMMAND...: runs it; fails unless it exits CODE with NAMED in stderr.
expect() {
  code=$1 what=$2 named=$3
  shift 4
  "$@" > out.txt 2> err.txt < /dev/null
  rc=$?
  [ "$rc" -eq "$code" ] || fail "$what: exit $rc, not $code: $(tail -c 400 err.txt)"
  grep -qF -- "$named" err.txt || fail "$what: stderr does not name $named: $(tail -c 400 err.txt)"
}

# 1. Every subcommand.
commands=$("$P" --help | sed -n '/^Subcommands:/,$p' | awk 'NR > 1 && /^  [a-z]/ {print $1}')
[ "$(echo "$commands" | wc -w)" -ge 12 ] || fail "pillars --help lists too few subcommands: $commands"
for c in $commands; do
  "$P" "$c" --help > out.txt 2>&1 || fail "$c --help exits $?"
  [ -s out.txt ] || fail "$c --help printed nothing"
  # (CLI11 names a missing required argument before an unknown flag; either is bad usage)
  expect 2 "$c --no-such-flag" "--help" -- "$P" "$c" --no-such-flag
done
echo "ok: $(echo "$commands" | wc -w) subcommands: --help exits 0, an unknown flag 2"
expect 2 "train with an unknown flag" "--no-such-flag" -- "$P" train "$EXP" --no-such-flag
expect 2 "eval with an unknown flag" "--no-such-flag" -- "$P" eval run --no-such-flag

# A tiny language model to read.
F="--set data.block_size=64 --set model.layers=2 --set model.d_model=64 --set model.ffn=128 --set model.heads=2
   --set data.max_tokens=1024 --set train.max_updates=3 --threads 1 --quiet"
# shellcheck disable=SC2086
"$P" train "$EXP" --out run $F > train.out 2>&1 || fail "the tiny run failed: $(tail -c 400 train.out)"

# 3. stdout.
expect 1 "schema > /dev/full" "stdout" -- sh -c "\"$P\" schema > /dev/full"
expect 1 "data list > /dev/full" "stdout" -- sh -c "\"$P\" data list > /dev/full"
expect 1 "generate > /dev/full" "stdout" -- sh -c "echo ROMEO | \"$P\" generate run --max-tokens 5 > /dev/full"
# A reader that leaves after 10 bytes (the binary's own exit code, through a FIFO, not the shell's
# pipeline status, which is the reader's).
rm -f pipe && mkfifo pipe
# generate streams its tokens as they come, so it writes after the reader has left.
sh -c "echo ROMEO | \"$P\" generate run --max-tokens 2000 --seed 1 > pipe 2> pipe.err; echo \$? > pipe.rc" &
head -c 10 pipe > /dev/null
wait
[ "$(cat pipe.rc)" = 0 ] || fail "generate into a pipe closed early exits $(cat pipe.rc), not 0: $(cat pipe.err)"
echo "ok: a full stdout exits 1 (schema, data list, generate); a closed pipe exits 0"

# 2. A read-only file system under the outputs.
M=$W/ro
mount_tmpfs "$M" 16m pillars-exit-codes "the read-only file system cases need root to mount a tmpfs"
cp -r run "$M/run" && mount -o remount,ro "$M" || fail "cannot make the tmpfs read-only"
cat > study.json <<JSON
{"base": "$ROOT/experiments/tinyshakespeare-lm.json", "systems": [{"name": "a"}], "seeds": [1], "updates": 2}
JSON
expect 1 "eval into a read-only run" "$M/run" -- "$P" eval "$M/run"
expect 1 "metrics -o on a read-only disk" "$M/m.json" -- "$P" metrics "$M/run" -o "$M/m.json"
expect 1 "report -o on a read-only disk" "$M/r.html" -- "$P" report "$M/run" -o "$M/r.html"
# shellcheck disable=SC2086
expect 1 "train --out on a read-only disk" "$M/new" -- "$P" train "$EXP" --out "$M/new" $F
# shellcheck disable=SC2086
expect 1 "train --resume on a read-only disk" "$M/run" -- "$P" train "$EXP" --out "$M/run" --resume $F
expect 1 "study --out on a read-only disk" "$M/study" -- "$P" study study.json --out "$M/study"
expect 1 "data prepare into a read-only cache" "$M/cache" -- env PILLARS_CACHE="$M/cache" "$P" data prepare tinyshakespeare
echo "ok: a read-only file system exits 1, naming the path, for eval, metrics, report, train, study and data prepare"
