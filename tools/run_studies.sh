#!/bin/sh
# Runs the project's studies one after another on this machine's CPU, each continuing where it
# stopped (`pillars study` skips finished runs and resumes interrupted ones), at the lowest
# priority, so that a machine left alone works through all of them:
#
#   PILLARS_DATA=/path/to/datasets nohup sh tools/run_studies.sh BIN/pillars >> studies.log 2>&1 &
#
# from the repository's root. The order is the studies' order of need: S3 copies S2's GHT-PS runs
# and prunes their first-phase checkpoints, so it comes after S2. S1 comes last: it pins the AVX2
# kernels, which every CPU here has, where S2 to S6 pin AVX-512, so on a CPU without AVX-512 those
# refuse at once (their exit status logged) and S1 runs. A study whose runs fail does not
# stop the next one (its own output names what failed); stopping this script first (SIGTERM) and
# then the running study (`pkill -TERM -f 'pillars study'`, which saves its runs) stops the chain.
# STUDIES lists other study names (experiments/studies/NAME.json) to run instead.
set -u
if [ $# -ne 1 ] || [ ! -x "$1" ]; then
  echo "usage: sh tools/run_studies.sh BIN/pillars   (from the repository's root)" >&2
  exit 2
fi
BIN=$1
[ -n "${PILLARS_DATA:-}" ] || { echo "run_studies: set PILLARS_DATA to the datasets' folder" >&2; exit 2; }
STUDIES=${STUDIES:-"s2-table1 s3-which-heads s4-wikitext2 s5-samsum s6-classification s1-gct-scale"}
trap 'echo "run_studies: stopped; the study running now goes on until it is stopped itself"; exit 143' TERM INT
for study in $STUDIES; do
  [ -f "experiments/studies/$study.json" ] || { echo "run_studies: no experiments/studies/$study.json" >&2; exit 2; }
done
for study in $STUDIES; do
  echo "run_studies: $(date -u '+%Y-%m-%d %H:%M') study $study"
  nice -n 19 "$BIN" study "experiments/studies/$study.json" &
  wait $! # in the background and waited for, so that a SIGTERM to this script is handled at once
  status=$?
  echo "run_studies: $(date -u '+%Y-%m-%d %H:%M') study $study ended with exit status $status"
done
