#!/bin/sh
# The one command of a short session on a GPU machine: unpack the bundle that tools/gpu_bundle.sh
# made elsewhere, run first what is left of the research studies, then the GPU test cases that
# have never run on a GPU, then every GPU check and benchmark (tools/gpu_check.sh), then short
# end-to-end training runs on the GPU. Every log
# lands in OUT_DIR; the summary lines are printed as they come. Meant to finish in about 9 minutes
# plus STUDY_BUDGET for the studies (under a hard limit, shorten it with E2E=0, fewer BENCHES, a
# smaller SANITIZER_SECONDS or STUDY_BUDGET, or STUDIES='').
# At the end OUT_DIR/logs.tar.gz holds every log and run record (no checkpoints) and
# OUT_DIR/studies-cuda.tar.gz the studies' finished runs: the two files to bring back from a
# machine that returns few files. The binaries are unpacked into a temporary
# folder, not into OUT_DIR.
#
# Usage: tools/gpu_session.sh BUNDLE_DIR OUT_DIR
#   FIRST='cuda wgmma*,...'   the never-run cases to run first (default: the list below), one
#                              process per pattern, FIRST_SECONDS each (default 60), FIRST_BUDGET
#                              in all (default 200)
#   BENCHES, SANITIZER_SECONDS  passed to tools/gpu_check.sh (defaults: all three benches, 150 s)
#   E2E=0                      skip the end-to-end runs; E2E_EXPERIMENTS which (default GHT, Michel,
#                              Voita), E2E_SETTINGS their --set flags, E2E_SECONDS each one's limit (120)
#   STUDIES='s2-table1 s3-which-heads'   FIRST of all, these studies of experiments/studies/ on
#                              the GPU (default: all of the project's, in their order), each
#                              `pillars study FILE --device cuda --out studies/cuda/NAME` in the
#                              working tree, STUDY_JOBS runs at once (default 4), all of them within
#                              STUDY_BUDGET seconds (default 420; a finished study takes none), each
#                              then tabulated into OUT/studies/NAME-table.txt. The finished runs'
#                              records (not checkpoints, not unfinished runs) come back in
#                              OUT/studies-cuda.tar.gz: unpacked at the repository's root and
#                              committed, they travel to the next lease, whose studies skip them and
#                              run only what is left (a run stopped by the budget starts again there)
#   RESULTS=1                  then docs/RESULTS.md's Multi30k comparison on the GPU (vanilla, GHT,
#                              GHT-PS, Lite1, Michel et al., seeds 1-3, fp32 as recorded: about
#                              35 s a run), summarized by tools/results_table.py; RESULTS_SYSTEMS
#                              and RESULTS_SEEDS choose fewer
set -u
BUNDLE=$1
OUT=${2:-gpu-out}
mkdir -p "$OUT"
start=$(date +%s)
elapsed() { echo $(($(date +%s) - start)); }

# The cases written without a GPU that no GPU has run yet (keep this list with the code: a case
# leaves it once a GPU session has seen it pass). Since 2026-11-27: the Hopper forward's new V
# staging (transposed by ldmatrix in shared memory). Since 2026-12-03: the swizzled wgmma tile
# products, then the warp-specialized TMA forward that relies on them. Where the TMA forward's case
# fails or hangs, PILLARS_SKIP_TMA_FORWARD=1 keeps tools/gpu_check.sh's tests and benches off it.
FIRST=${FIRST-'cuda wgmma*,cuda attention: the Hopper (wgmma)*,cuda attention: the Hopper TMA*,cuda attention: keys past*'}

BIN=$(mktemp -d)
trap 'rm -rf "$BIN"' EXIT
trap 'exit 143' TERM # (so that the EXIT trap runs when the session is stopped)
trap 'exit 130' INT
# Every log and run record so far into OUT/logs.tar.gz, after each phase: a session stopped by a
# time limit still leaves the archive of what it did.
pack() {
  (cd "$OUT" && find . \( -name '*.log' -o -name '*.json' -o -name '*.jsonl' -o -name '*.txt' -o -name '*.nll' -o -name '*.md' \) -print |
    tar czf logs.tar.gz.part -T - && mv logs.tar.gz.part logs.tar.gz)
}
for b in pillars pillars_tests; do xz -dc "$BUNDLE/bin/$b.xz" >"$BIN/$b" && chmod +x "$BIN/$b"; done

# Libraries: the bundle's own, then wherever this machine keeps CUDA's (the toolkit, or the
# nvidia-* Python wheels next to PyTorch).
LIBS=$(cd "$BUNDLE/lib" && pwd)
for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && LIBS="$LIBS:$d"
done
for d in $(python3 -c 'import glob, os, nvidia; print(" ".join(glob.glob(os.path.join(list(nvidia.__path__)[0], "*", "lib"))))' 2>/dev/null); do
  LIBS="$LIBS:$d"
done
export LD_LIBRARY_PATH="$LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
missing=$(ldd "$BIN/pillars_tests" "$BIN/pillars" | grep "not found" | sort -u)
if [ -n "$missing" ]; then
  echo "gpu_session: libraries not found:"
  echo "$missing"
  exit 1
fi
[ -d "$BUNDLE/data" ] && export PILLARS_DATA=$(cd "$BUNDLE/data" && pwd)
cat "$BUNDLE/MANIFEST" 2>/dev/null
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader

# The research studies first: on a GPU a Multi30k run takes about a minute, where the CPU machine
# takes hours. The studies share STUDY_BUDGET; when it runs out, SIGTERM stops the running study's
# runs after a save, and its table covers the runs that finished (each run's eval_<split>.nll feeds
# the paired bootstrap). Study folders are studies/cuda/NAME, so that one study's "../other"
# (S3's copy_from S2) is the GPU's other study, never the CPU's.
STUDIES=${STUDIES-s2-table1 s3-which-heads s4-wikitext2 s5-samsum s6-classification}
if [ -n "$STUDIES" ] && [ -n "${PILLARS_DATA:-}" ]; then
  mkdir -p "$OUT/studies" studies/cuda
  studies_end=$(($(date +%s) + ${STUDY_BUDGET:-420}))
  for study in $STUDIES; do
    left=$((studies_end - $(date +%s)))
    if [ $left -le 10 ]; then
      echo "study $study: not run (STUDY_BUDGET spent)"
      continue
    fi
    echo "== study $study on the GPU, at most $left s ($(elapsed) s)"
    timeout -s TERM -k 60 "$left" "$BIN/pillars" study "experiments/studies/$study.json" --device cuda \
      --out "studies/cuda/$study" --jobs "${STUDY_JOBS:-4}" >"$OUT/studies/$study.log" 2>&1
    echo "study $study: exit $? ($(elapsed) s); $(grep 'runs done' "$OUT/studies/$study.log" | tail -1)"
    "$BIN/pillars" study "experiments/studies/$study.json" --out "studies/cuda/$study" --table \
      >"$OUT/studies/$study-table.txt" 2>&1 || tail -3 "$OUT/studies/$study-table.txt"
    # The finished runs' records (what the repository keeps of a run: .gitignore's studies rules)
    python3 - studies/cuda "$OUT/studies-cuda.tar.gz" <<'PY' || echo "study $study: its records were not packed"
import fnmatch, json, os, sys, tarfile
root, archive = sys.argv[1], sys.argv[2]
skip = ("checkpoint_*.safetensors", "*.tmp.*", ".lock", "bpe.codes", "dict.txt", "*.old-*")
with tarfile.open(archive + ".part", "w:gz") as tar:
    for study in sorted(os.listdir(root)):
        if os.path.isfile(os.path.join(root, study, "study.json")):
            tar.add(os.path.join(root, study, "study.json"))
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, study)):
            dirnames[:] = sorted(d for d in dirnames if d not in ("logs", "phase1"))
            record = os.path.join(dirpath, "study_run.json")
            if not os.path.isfile(record) or not json.load(open(record)).get("trained"):
                continue
            dirnames[:] = []
            for sub, _, files in os.walk(dirpath):
                for f in sorted(files):
                    if not any(fnmatch.fnmatch(f, pattern) for pattern in skip):
                        tar.add(os.path.join(sub, f))
os.replace(archive + ".part", archive)
PY
    pack
  done
fi

# Each pattern runs in a process of its own, under its own time limit: a kernel that faults leaves
# the CUDA context unusable for the rest of its process, and one that hangs would eat the session,
# so neither may hide the cases after it. Together they get FIRST_BUDGET seconds (each at most
# FIRST_SECONDS of what is left), so the checks and benchmarks after them keep their time.
# first-N.log holds pattern N's output.
[ -n "$FIRST" ] && echo "== never run on a GPU before ($(elapsed) s)"
first_end=$(($(date +%s) + ${FIRST_BUDGET:-200}))
n=0
set -f # the patterns hold '*': no file-name expansion
old_ifs=$IFS
IFS=','
for pattern in $FIRST; do
  IFS=$old_ifs
  n=$((n + 1))
  left=$((first_end - $(date +%s)))
  limit=${FIRST_SECONDS:-60}
  [ $left -lt $limit ] && limit=$left
  if [ $limit -le 0 ]; then
    echo "first $n '$pattern': not run (FIRST_BUDGET spent)"
    continue
  fi
  timeout -k 10 "$limit" "$BIN/pillars_tests" -tc="$pattern" >"$OUT/first-$n.log" 2>&1
  status=$?
  [ $status -eq 124 ] && status="124 (stopped after $limit s)"
  echo "first $n '$pattern': exit $status ($(grep -E '^\[doctest\] (test cases|assertions)' "$OUT/first-$n.log" | tr '\n' ' '))"
  case "$pattern" in *'Hopper TMA'*) [ "$status" != 0 ] && export PILLARS_SKIP_TMA_FORWARD=1 ;; esac
  grep -E "ERROR|FAILED|skipped|MESSAGE" "$OUT/first-$n.log" | sort | uniq -c | sort -rn | head -12
done
IFS=$old_ifs
set +f

pack
echo "== tools/gpu_check.sh ($(elapsed) s)"
SANITIZER_SECONDS=${SANITIZER_SECONDS:-150} sh tools/gpu_check.sh "$BIN" "$OUT/check"
pack

# End to end on the GPU, each experiment under E2E_SECONDS: GHT (GCT, V2S, GHT-PS), then the two
# pruning baselines (Michel et al.'s importance, Voita et al.'s gates), in E2E_SETTINGS (default
# bf16 with bf16 saved activations). Each run's log is e2e-NAME.log, its directory e2e-NAME/.
if [ "${E2E:-1}" != 0 ] && [ -n "${PILLARS_DATA:-}" ]; then
  settings=${E2E_SETTINGS---set train.precision=bf16 --set train.saved_activations=bf16}
  for exp in ${E2E_EXPERIMENTS-experiments/ght/ght.json experiments/ght/michel.json experiments/ght/voita.json}; do
    name=$(basename "$exp" .json)
    echo "== end to end: $exp on the GPU, $settings ($(elapsed) s)"
    # shellcheck disable=SC2086 # settings is a list of arguments
    timeout "${E2E_SECONDS:-120}" "$BIN/pillars" train "$exp" --out "$OUT/e2e-$name" --set train.device=cuda $settings \
      >"$OUT/e2e-$name.log" 2>&1
    echo "e2e $name: exit $?"
    grep -E "^(stopped|prune|test BLEU)" "$OUT/e2e-$name.log" || tail -3 "$OUT/e2e-$name.log"
    pack
  done
fi
if [ "${RESULTS:-0}" = 1 ] && [ -n "${PILLARS_DATA:-}" ]; then
  echo "== docs/RESULTS.md's Multi30k comparison on the GPU ($(elapsed) s)"
  mkdir -p "$OUT/results"
  for x in ${RESULTS_SYSTEMS:-vanilla ght-full ght lite1 michel}; do
    for seed in ${RESULTS_SEEDS:-1 2 3}; do
      "$BIN/pillars" train "experiments/ght/$x.json" --set seed="$seed" --set train.device=cuda \
        --out "$OUT/results/$x-s$seed" >"$OUT/results/$x-s$seed.log" 2>&1
      echo "results $x-s$seed: exit $? ($(elapsed) s)"
      pack
    done
  done
  python3 tools/results_table.py "$OUT/results" | tee "$OUT/results/table.txt"
fi
pack
echo "gpu_session: done in $(elapsed) s; logs in $OUT (all of them in $OUT/logs.tar.gz)"
