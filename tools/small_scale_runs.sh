#!/bin/bash
# The small-scale language-model (PTB) comparison of docs/RESULTS.md, and SAMSum's first attempt:
# vanilla, GHT (GCT throughout) and GHT → GHT-PS, each with the same wall-clock budget. (SAMSum's
# comparison proper uses its files' epoch budgets instead; RESULTS.md has its three commands.) The six runs
# go concurrently, 2 threads each, so they share one machine's conditions (12 cores busy).
#
#   tools/small_scale_runs.sh OUT_DIR [MINUTES [FINETUNE_MINUTES [SEED]]]
#
# vanilla and GHT train for MINUTES; GHT-PS trains with GCT for MINUTES − FINETUNE_MINUTES, votes
# over 150 training batches, removes the heads V2S does not keep and fine-tunes for FINETUNE_MINUTES
# (the experiment files' fixed-epoch trigger is replaced by the time limit). TASKS picks the tasks
# (default "ptb samsum"); SEQUENTIAL=1 runs one at a time with all of them on one machine's
# quiet cores instead (the development machine's way). Needs PILLARS_DATA;
# PILLARS names the binary (default build/pillars). Checkpoints are saved every minute; RESUME=1
# continues interrupted runs in OUT_DIR (same arguments) until their budgets are spent.
set -euo pipefail
out=${1:?usage: tools/small_scale_runs.sh OUT_DIR [MINUTES [FINETUNE_MINUTES [SEED]]]}
minutes=${2:-6.5}
finetune=${3:-2}
seed=${4:-1}
pillars=${PILLARS:-build/pillars}
: "${PILLARS_DATA:?set PILLARS_DATA to the dataset mirror}"
export OMP_NUM_THREADS=2
mkdir -p "$out"
phase1=$(awk -v m="$minutes" -v f="$finetune" 'BEGIN { print m - f }')

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
  start run $task-vanilla  $task-vanilla train.max_minutes=$minutes
  start run $task-ght-full $task-ght     train.max_minutes=$minutes prune.method=none
  start run $task-ght      $task-ght     train.max_minutes=$phase1 prune.epoch=1000 prune.vote_batches=150 \
                                         prune.finetune_minutes=$finetune
done
wait
