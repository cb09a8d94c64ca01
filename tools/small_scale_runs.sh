#!/bin/bash
# The small-scale language-model (PTB) comparison of docs/RESULTS.md, and SAMSum's first attempt:
# vanilla, GHT (GCT throughout) and GHT → GHT-PS, each with the same number of updates. (SAMSum's
# comparison proper uses its files' epoch budgets instead; RESULTS.md has its three commands.) The six runs
# go concurrently, 2 threads each, so they share one machine's conditions (12 cores busy).
#
#   tools/small_scale_runs.sh OUT_DIR [UPDATES [FINETUNE_UPDATES [SEED]]]
#
# vanilla and GHT train for UPDATES updates (train.max_updates); GHT-PS trains with GCT for
# UPDATES − FINETUNE_UPDATES updates, votes over 150 training batches, removes the heads V2S does not
# keep and fine-tunes for FINETUNE_UPDATES (prune.finetune_updates) on phase 1's optimizer and
# learning-rate schedule: both phases share train.max_updates = UPDATES, and phase 1 leaves
# prune.finetune_updates of them to the fine-tuning (prune.finetune_schedule "continue"). The
# experiment files' fixed-epoch trigger is moved out of reach (prune.epoch=1000): phase 1 ends at
# UPDATES − FINETUNE_UPDATES, and the run goes on to vote, prune and fine-tune as after the trigger. The defaults, 727 and 188, are the PTB
# table's (vanilla's updates, and GHT-PS's fine-tuning updates, in the recorded runs, which were
# budgeted in minutes: 15 and 3.5). TASKS picks the tasks (default "ptb samsum"); SEQUENTIAL=1 runs
# one at a time with all of them on one machine's quiet cores instead (the development machine's
# way). Needs PILLARS_DATA; PILLARS names the binary (default build/pillars). Checkpoints are saved
# every minute; RESUME=1 continues interrupted runs in OUT_DIR (same arguments) until their budgets
# are spent.
set -euo pipefail
out=${1:?usage: tools/small_scale_runs.sh OUT_DIR [UPDATES [FINETUNE_UPDATES [SEED]]]}
updates=${2:-727}
finetune=${3:-188}
seed=${4:-1}
pillars=${PILLARS:-build/pillars}
: "${PILLARS_DATA:?set PILLARS_DATA to the dataset mirror}"
export OMP_NUM_THREADS=2
mkdir -p "$out"
phase1=$((updates - finetune))
[ "$finetune" -gt 0 ] && [ "$phase1" -gt 0 ] || { echo "need 0 < FINETUNE_UPDATES < UPDATES (got $finetune, $updates)" >&2; exit 2; }

run() { # name experiment overrides (key=value)...
  local name=$1 exp=$2; shift 2
  local sets=(--set seed=$seed --set train.save_every_minutes=1)
  [ "${RESUME:-0}" = 1 ] && sets+=(--resume)
  for kv in "$@"; do sets+=(--set "$kv"); done
  "$pillars" train "experiments/ght/$exp.json" --threads 2 --out "$out/$name" "${sets[@]}" >"$out/$name.log" 2>&1 \
    && echo "$(date +%T) $name done" || echo "$(date +%T) $name FAILED (see $out/$name.log)"
}
start() { if [ "${SEQUENTIAL:-0}" = 1 ]; then "$@"; else "$@" & fi; }
for task in ${TASKS:-ptb samsum}; do
  start run $task-vanilla  $task-vanilla train.max_updates=$updates
  start run $task-ght-full $task-ght     train.max_updates=$updates prune.method=none
  start run $task-ght      $task-ght     train.max_updates=$updates prune.epoch=1000 prune.vote_batches=150 \
                                         prune.finetune_updates=$finetune
done
wait
