#!/bin/sh
# Runs the evaluations of a study's finished runs again, one at a time and seed by seed (every
# system's seed 1, then every system's seed 2, ...), with the study's own eval commands (the last
# one of each split in the run's study_run.json) on the instruction set each evaluation recorded,
# and the given binary:
#
#   sh tools/evaluate_again.sh BIN/pillars studies/s2-table1      (from the repository's root)
#
# What it is for: decoding speeds that compare. A study's evaluations run when each run ends,
# beside whatever the machine is doing then; `pillars eval` records how long its threads waited for
# a core another process held (decode_waiting_share), and `pillars study --table` leaves out the
# speeds measured under load. Run this on a machine with nothing else running: the scores come out
# the same (decoding is deterministic), and each eval_<split>.json gets the new speed and share.
# Each evaluation's last line says when its threads still waited.
set -u
if [ $# -ne 2 ] || [ ! -x "$1" ] || [ ! -d "$2" ]; then
  echo "usage: sh tools/evaluate_again.sh BIN/pillars STUDY_DIR   (from the repository's root)" >&2
  exit 2
fi
BIN=$1
list=${TMPDIR:-/tmp}/evaluate_again.$$
log=$list.log
trap 'rm -f "$list" "$log"' EXIT
python3 - "$2" <<'PY' > "$list" || exit 2
import glob, json, os, shlex, sys
runs = []
for path in glob.glob(os.path.join(sys.argv[1], "*", "s*", "study_run.json")):
    r = json.load(open(path))
    if r.get("trained") and r.get("evaluated"):
        runs.append((r["seed"], r["system"], r))
for seed, system, r in sorted(runs, key=lambda x: (x[0], x[1])):
    for split in r["evaluated"]:
        evals = [shlex.split(c) for c in r["commands"] if " eval " in c and "--split " + split in c]
        if not evals:
            continue
        # The study's last evaluation of this split (the binary's arguments), on the instruction
        # set it recorded: a study pins one (PILLARS_ISA), and another would round differently.
        args = evals[-1][1:]
        try:
            isa = json.load(open(os.path.join(args[1], "eval_" + split + ".json")))["machine"]["isa"]
        except (OSError, KeyError, TypeError, ValueError):
            isa = ""
        print(isa + "\t" + shlex.join(args))
PY
n=$(wc -l < "$list")
echo "evaluate_again: $n evaluations"
i=0
tab=$(printf '\t')
while IFS="$tab" read -r isa args; do
  i=$((i + 1))
  echo "evaluate_again: [$i/$n] ${isa:+PILLARS_ISA=$isa }pillars $args"
  if [ -n "$isa" ]; then export PILLARS_ISA="$isa"; else unset PILLARS_ISA; fi
  eval "\"\$BIN\" $args" < /dev/null > /dev/null 2> "$log" || { cat "$log" >&2; echo "evaluate_again: failed: $args" >&2; exit 1; }
  grep '^eval ' "$log" | tail -1
  python3 -c 'import json, sys
w = json.load(open(sys.argv[1])).get("decode_waiting_share")
print("  waited for a core " + ("(not recorded)" if w is None else "%.1f %% of the time" % (100 * w)))' \
    "$(echo "$args" | sed -E 's/^eval ([^ ]+) --split ([^ ]+).*/\1\/eval_\2.json/')"
done < "$list"
