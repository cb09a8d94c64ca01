# `pillars study` end to end on tiny Multi30k runs: a study runs every (system, seed), skips what
# is finished, stops gracefully on SIGTERM and continues where it stopped, keeps one study per
# folder, refuses to change its device or threads or to run kernels the CPU may not use, and its
# table pairs only runs that match the study file; tools/run_studies.sh runs studies in a row; a
# larger budget continues the finished runs.
#   sh tests/cli_study.sh BUILD/pillars WORK_DIR
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/tests/cli_lib.sh" # fail, ends_within, wait_for_update; P and W from the arguments
P=$(cd "$(dirname "$P")" && pwd)/$(basename "$P")
if [ -z "${PILLARS_DATA:-}" ] || [ ! -d "$PILLARS_DATA/multi30k-de-en" ]; then
  echo "skipped: the multi30k-de-en dataset is not in the mirror (PILLARS_DATA=${PILLARS_DATA:-unset})"
  exit 77
fi
cd "$W" || exit 1
export OMP_WAIT_POLICY=PASSIVE

# study NAME UPDATES [EXTRA_SET]: a study file of two systems and two seeds on a sliver of Multi30k,
# tested on its smallest test split (test_2017_mscoco, 461 sentences) to keep the evaluations short.
study() {
  cat > "$1.json" <<JSON
{
  "base": "$ROOT/experiments/ght/vanilla.json",
  "set": {"data.train_fraction": 0.012, "data.max_tokens": 256, "train.valid_max_sentences": 10, "train.log_every": 1,
          "eval.max_len_a": 0, "eval.max_len_b": 4, "heads.metrics_sentences": 16 ${3:-}},
  "systems": [{"name": "vanilla"}, {"name": "gct", "set": {"heads.regularizer": "gct", "heads.alpha": 0.7, "heads.beta": 0.5}}],
  "seeds": [1, 2],
  "updates": $2,
  "test_splits": ["test_2017_mscoco"]
}
JSON
}

# 1. The plan, then the whole study, then nothing left to do.
study tiny 6
[ "$("$P" study tiny.json --dry-run | wc -l)" -eq 8 ] || fail "--dry-run should list 4 trainings and 4 evaluations"
"$P" study tiny.json --out tiny --jobs 2 > run1.out 2>&1 || { cat run1.out; fail "the study failed"; }
for r in vanilla/s1 vanilla/s2 gct/s1 gct/s2; do
  grep -q '"trained": true' "tiny/$r/study_run.json" || fail "$r: not recorded as trained"
  grep -q 'test_2017_mscoco' "tiny/$r/study_run.json" || fail "$r: not recorded as evaluated"
  [ -s "tiny/$r/eval_test_2017_mscoco.nll" ] || fail "$r: no per-sentence losses"
  # A finished run's head metrics are stored compressed, and xz itself reads them back.
  [ ! -e "tiny/$r/head_metrics.jsonl" ] && [ -s "tiny/$r/head_metrics.jsonl.xz" ] || fail "$r: head metrics not packed"
  xz -dc "tiny/$r/head_metrics.jsonl.xz" | python3 -c 'import json, sys; assert [json.loads(l)["modules"] for l in sys.stdin]' ||
    fail "$r: head_metrics.jsonl.xz is not the head metrics"
done
"$P" study tiny.json --out tiny > run2.out 2>&1 || fail "the finished study's second start failed"
! grep -q started run2.out || fail "a finished run was started again: $(cat run2.out)"
"$P" study tiny.json --out tiny --table > table.md || fail "--table failed"
grep -q '^| gct | 2 |' table.md || fail "the table has no gct row over 2 seeds: $(cat table.md)"
grep -q 's1 [+-]' table.md || fail "the table has no per-seed bootstrap: $(cat table.md)"
sed -n '/^## Heads at the end/,/^Convergence/p' table.md | grep -q '^| gct | 2 | [0-9.-]* ± [0-9.]* | [0-9.-]* ± ' || fail "the table has no compactness of gct over 2 seeds: $(cat table.md)"
! grep -q 'Left out' table.md || fail "a run was left out: $(cat table.md)"
[ -f tiny/table.json ] || fail "no table.json"
# The heads against the baseline across seeds (Fig. 4), and compactness against BLEU across runs (Fig. 2).
sed -n '/^Against the baseline on the same seeds/,/^## /p' table.md | grep -q '^| gct | 2 | [+-][0-9.]*, p [0-9.<a-z/]*; [0-2]/2, p ' ||
  fail "the table does not test gct's heads against vanilla's: $(cat table.md)"
grep -q '^| test_2017_mscoco | bleu | Silhouette | 4 | 2 | [+-n]' table.md ||
  fail "the table has no correlation of Silhouette with BLEU over the 4 runs: $(cat table.md)"
# The decoding speed pairs a seed only where both evaluations record the same machine.
speed_pairs() { # TABLE.json: gct's paired seeds, then its seeds left unpaired, for sentences/s
  python3 -c 'import json, sys
t = json.load(open(sys.argv[1]))
m = [m for m in t["splits"][0]["metrics"] if m["metric"] == "sentences_per_second"][0]
v = [r for r in m["systems"] if r["system"] == "gct"][0]["vs_baseline"]
print(v["seeds"], v["not_paired_other_machine"])' "$1"
}
# Each evaluation records how much of its decoding's thread time went to waiting for a core
# (another process held it). This test runs beside others, so the measured shares vary: set them
# to 0 (decoded alone) for the pairing, and to 0.5 for one run to see a speed measured under load
# left out.
set_waiting() { # SHARE EVAL.json...: set each evaluation's decode_waiting_share
  python3 -c 'import json, sys
for path in sys.argv[2:]:
    e = json.load(open(path))
    assert 0 <= e["decode_waiting_share"] <= 1, path + ": decode_waiting_share " + str(e["decode_waiting_share"])
    e["decode_waiting_share"] = float(sys.argv[1]); json.dump(e, open(path, "w"))' "$@"
}
evals="tiny/vanilla/s1/eval_test_2017_mscoco.json tiny/vanilla/s2/eval_test_2017_mscoco.json
  tiny/gct/s1/eval_test_2017_mscoco.json tiny/gct/s2/eval_test_2017_mscoco.json"
set_waiting 0 $evals || fail "an evaluation has no decode_waiting_share in [0, 1]"
"$P" study tiny.json --out tiny --table > /dev/null || fail "--table failed"
[ "$(speed_pairs tiny/table.json)" = "[1, 2] []" ] || fail "speeds measured on one machine were not paired: $(speed_pairs tiny/table.json)"
set_waiting 0.5 tiny/gct/s1/eval_test_2017_mscoco.json
"$P" study tiny.json --out tiny --table > table-load.md || fail "--table with a speed measured under load failed"
[ "$(speed_pairs tiny/table.json)" = "[2] []" ] || fail "a speed measured under load was paired: $(speed_pairs tiny/table.json)"
grep -q "^Speeds left out .*: gct s1 (50 % waiting)\.$" table-load.md || fail "the speed under load is not named: $(cat table-load.md)"
grep -q '^| gct | 2 |' table-load.md || fail "a speed under load changed the BLEU rows: $(cat table-load.md)"
set_waiting 0 tiny/gct/s1/eval_test_2017_mscoco.json
cp tiny/vanilla/s2/eval_test_2017_mscoco.json eval-s2.json
python3 -c 'import json, sys
e = json.load(open(sys.argv[1])); e["machine"]["cpu"] = "another CPU"; json.dump(e, open(sys.argv[1], "w"))' \
  tiny/vanilla/s2/eval_test_2017_mscoco.json
"$P" study tiny.json --out tiny --table > table-cpu.md || fail "--table with another CPU's evaluation failed"
[ "$(speed_pairs tiny/table.json)" = "[1] [2]" ] || fail "speeds from two CPUs were paired: $(speed_pairs tiny/table.json)"
grep -q "Not compared with the baseline's speed.*: gct s2\.$" table-cpu.md || fail "the unpaired speed is not named: $(cat table-cpu.md)"
grep -q '^| gct | 2 |' table-cpu.md && ! grep -q 'Left out' table-cpu.md || fail "another CPU's evaluation changed the BLEU rows: $(cat table-cpu.md)"
cp eval-s2.json tiny/vanilla/s2/eval_test_2017_mscoco.json
# Six updates leave BLEU at (nearly) 0 in every run, so Fig. 2's ρ would have no variation to rank:
# for the page (which draws table.json), the four runs get BLEU 1 to 4 (put back after).
for r in vanilla/s1 vanilla/s2 gct/s1 gct/s2; do cp "tiny/$r/eval_test_2017_mscoco.json" "tiny/$r/eval.orig"; done
python3 -c 'import json, sys
for bleu, path in enumerate(sys.argv[1:], 1):
    e = json.load(open(path)); e["bleu"] = bleu; json.dump(e, open(path, "w"))' \
  tiny/vanilla/s1/eval_test_2017_mscoco.json tiny/vanilla/s2/eval_test_2017_mscoco.json \
  tiny/gct/s1/eval_test_2017_mscoco.json tiny/gct/s2/eval_test_2017_mscoco.json
"$P" study tiny.json --out tiny --table > /dev/null || fail "--table with BLEU 1 to 4 failed"
"$P" report --study tiny -o study.html > report.out || fail "report --study failed"
for r in vanilla/s1 vanilla/s2 gct/s1 gct/s2; do mv "tiny/$r/eval.orig" "tiny/$r/eval_test_2017_mscoco.json"; done
"$P" study tiny.json --out tiny --table > /dev/null || fail "--table failed"
grep -q '5 charts' report.out || fail "the study page should draw validation, Fig. 2 and Fig. 4 (5 charts): $(cat report.out)"
grep -q 'Study tiny' study.html || fail "the study page has no study section"
grep -q "Spearman's ρ [+-][0-9.]*, p [0-9.&ltna/;]* (exact) over 4 runs of 2 systems" study.html || fail "the study page does not test Fig. 2"
# The finished runs evaluated again (tools/evaluate_again.sh: speeds measured on a quiet machine),
# seed by seed: the same scores and hypotheses, a new waiting share.
for r in vanilla/s1 vanilla/s2 gct/s1 gct/s2; do cp "tiny/$r/eval_test_2017_mscoco.hyp" "tiny/$r/hyp.before"; done
cp tiny/gct/s2/eval_test_2017_mscoco.json eval-before.json
set_waiting 0.5 tiny/gct/s2/eval_test_2017_mscoco.json
sh "$ROOT/tools/evaluate_again.sh" "$P" tiny > evaluate-again.out 2>&1 || { cat evaluate-again.out; fail "evaluate_again failed"; }
grep -q '^evaluate_again: \[1/4\] PILLARS_ISA=avx2 pillars eval tiny/gct/s1/* --split test_2017_mscoco' evaluate-again.out &&
  grep -q '^evaluate_again: \[4/4\] PILLARS_ISA=avx2 pillars eval tiny/vanilla/s2/* --split test_2017_mscoco' evaluate-again.out ||
  fail "evaluate_again did not evaluate the four runs seed by seed: $(cat evaluate-again.out)"
for r in vanilla/s1 vanilla/s2 gct/s1 gct/s2; do
  cmp -s "tiny/$r/eval_test_2017_mscoco.hyp" "tiny/$r/hyp.before" || fail "$r: evaluated again, other hypotheses"
done
python3 -c 'import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert a["bleu"] == b["bleu"] and a["loss"] == b["loss"], ("other scores", a, b)
assert a["decode_waiting_share"] != 0.5, "the waiting share was not measured again"' \
  tiny/gct/s2/eval_test_2017_mscoco.json eval-before.json || fail "gct s2 evaluated again: not the same scores, or the old share"
set_waiting 0 $evals

# 1b. A study that shares a system with the first ("copy_from"): the finished runs are copied, not
#     trained again; a system whose settings differ from those runs' trains here.
python3 - tiny.json copy.json <<'PY' || fail "cannot write copy.json"
import json, sys
s = json.load(open(sys.argv[1]))
s["systems"] = [{"name": "plain", "copy_from": "../tiny/vanilla"},
                {"name": "faster", "copy_from": "../tiny/vanilla", "set": {"optim.lr": 0.002}}]
s["seeds"] = [1]
json.dump(s, open(sys.argv[2], "w"))
PY
"$P" study copy.json --out copy --dry-run > copy-plan.out || fail "--dry-run of the copying study failed"
grep -q '^# copy tiny/vanilla/s1 to copy/plain/s1$' copy-plan.out || fail "the plan copies nothing: $(cat copy-plan.out)"
"$P" study copy.json --out copy > copy.out 2>&1 || { cat copy.out; fail "the copying study failed"; }
grep -q 'faster s1: trained here, not copied from ../tiny/vanilla: its config.json differs: optim.lr' copy.out ||
  fail "the run with another lr was not trained here, or not said why: $(cat copy.out)"
grep -q '"copied from tiny/vanilla/s1"' copy/plain/s1/study_run.json || fail "the copy's record does not say where from"
cmp -s copy/plain/s1/log.jsonl tiny/vanilla/s1/log.jsonl && cmp -s copy/plain/s1/eval_test_2017_mscoco.json tiny/vanilla/s1/eval_test_2017_mscoco.json ||
  fail "the copied run is not the original"
! grep -q '"copied' copy/faster/s1/study_run.json || fail "the run with another lr was copied"
"$P" study copy.json --out copy --table > copy-table.md || fail "--table of the copying study failed"
grep -q '^| faster | 1 |' copy-table.md && ! grep -q 'Left out' copy-table.md || fail "the copying study's table: $(cat copy-table.md)"

# 2. A changed study file: the finished runs no longer match it, and the table says why.
study tiny 6 ', "optim.lr": 0.002'
"$P" study tiny.json --out tiny --table > table2.md || fail "--table of a changed study failed"
grep -q 'Left out: gct s2: its config.json differs.*optim.lr' table2.md || fail "the changed lr was not named: $(cat table2.md)"
study tiny 6
sed 's/"updates": 6/"updates": 6, "threads": 2/' tiny.json > threads.json
"$P" study threads.json --out tiny > threads.out 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q 'threads' threads.out || fail "a study folder made with 1 thread accepted 2 (exit $rc): $(cat threads.out)"
sed 's/"updates": 6/"updates": 6, "isa": "avx512"/' tiny.json > isa.json
PILLARS_ISA=avx2 "$P" study isa.json --out isa > isa.out 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q '"isa".*avx512.*only avx2' isa.out || fail "an avx512 study ran where only avx2 may (exit $rc): $(cat isa.out)"
[ ! -e isa ] || fail "the refused study made its folder"
"$P" study tiny.json --out tiny --device cuda > dev.out 2>&1; rc=$?
[ $rc -eq 2 ] || fail "--device cuda against a cpu study: exit $rc, not 2"

# 3. SIGTERM stops the running runs after a save; the same command continues. One run is enough.
study long 40
sed -e 's/"seeds": \[1, 2\]/"seeds": [1]/' -e 's/, {"name": "gct".*}\]/]/' long.json > long1.json && mv long1.json long.json
grep -q '"seeds": \[1\]' long.json && ! grep -q gct long.json || fail "long.json should have one system and one seed: $(cat long.json)"
"$P" study long.json --out long --jobs 1 > long1.out 2>&1 &
pid=$!
wait_for_update long/vanilla/s1/log.jsonl 2
"$P" study long.json --out long > second.out 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q -i 'lock\|running' second.out || fail "a second study on the same folder: exit $rc, $(cat second.out)"
kill -TERM $pid
ends_within $pid 120 || fail "the study did not stop within 120 s of SIGTERM"
wait $pid; rc=$?
[ $rc -eq 143 ] || fail "the stopped study exited $rc, not 143: $(cat long1.out)"
grep -q 'stopped by SIGTERM' long1.out || fail "no stop message: $(cat long1.out)"
[ -f long/vanilla/s1/checkpoint_last.safetensors ] || fail "the stopped run saved no checkpoint"
"$P" study long.json --out long > long2.out 2>&1 || { cat long2.out; fail "the continued study failed"; }
python3 - long/vanilla/s1/log.jsonl <<'PY' || fail "the stopped run did not resume to its budget"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
starts = [l for l in lines if l["type"] == "start"]
assert len(starts) == 2 and starts[1]["resume"] and starts[1]["machine"]["threads"] == 1, starts
assert [l for l in lines if l["type"] == "end"][-1]["update"] == 40
PY
# 4. A system that prunes another's model ("prune_from"): the source trains its first phase and is
#    pruned by V2S; the other system prunes the same first-phase checkpoint with random heads and
#    fine-tunes on the same schedule to the same budget. Both are tabulated against the source.
cat > prune.json <<JSON
{
  "base": "$ROOT/experiments/ght/ght.json",
  "set": {"data.train_fraction": 0.006, "data.max_tokens": 256, "train.valid_max_sentences": 10, "train.log_every": 1,
          "eval.max_len_a": 0, "eval.max_len_b": 4, "heads.metrics_sentences": 16, "prune.vote_batches": 4,
          "prune.epoch": 1},
  "systems": [{"name": "v2s"}, {"name": "random", "prune_from": "v2s", "set": {"prune.keep": "random"}}],
  "baseline": "v2s",
  "seeds": [1],
  "updates": 30,
  "test_splits": ["test_2017_mscoco"]
}
JSON
"$P" study prune.json --out prune --dry-run > prune-plan.out || fail "--dry-run of the pruning study failed"
grep -q "prune .*--from .*prune/v2s/s1/checkpoint_last.safetensors" prune-plan.out ||
  fail "the random system does not prune v2s's checkpoint: $(cat prune-plan.out)"
"$P" study prune.json --out prune --jobs 1 > prune.out 2>&1 || { cat prune.out; fail "the pruning study failed"; }
python3 - prune <<'PY' || fail "the pruned runs are not what the study asked for"
import json, os, sys
d = sys.argv[1]
def log(path): return [json.loads(l) for l in open(path)]
source = log(f"{d}/v2s/s1/log.jsonl")
first_phase_end = [l for l in source if l["type"] == "end"][0]["update"]
for system in ("v2s", "random"):
    run = log(f"{d}/{system}/s1/pruned/log.jsonl")
    updates = [l["update"] for l in run if l["type"] == "train"]
    # fine-tuning continues phase 1's count and stops at the study's budget
    assert updates and updates[0] == first_phase_end + 1 and max(updates) == 30, (system, updates[:3], updates[-3:])
    record = json.load(open(f"{d}/{system}/s1/study_run.json"))
    assert record["trained"] and "test_2017_mscoco" in json.dumps(record), record
    # head metrics packed: fine-tuning's in every run, the first phase's where the run trained it
    packed = [f for f in (f"{d}/{system}/s1", f"{d}/{system}/s1/pruned") if os.path.exists(f"{f}/head_metrics.jsonl.xz")]
    assert packed == [f"{d}/{system}/s1", f"{d}/{system}/s1/pruned"][(system == "random"):], (system, packed)
    assert not any(os.path.exists(f"{f}/head_metrics.jsonl") for f in (f"{d}/{system}/s1", f"{d}/{system}/s1/pruned"))
PY
"$P" study prune.json --out prune --table > prune-table.md || fail "--table of the pruning study failed"
grep -q '^| random | 1 |' prune-table.md || fail "the table has no random row: $(cat prune-table.md)"

# 5. The pruning study on a machine without the source's checkpoint (checkpoints are not kept in
#    the repository): the first phase is trained again into v2s/s1/phase1/, checked update by
#    update against v2s's log, and the random system prunes it. A source log that does not match
#    what training gives is refused, and nothing prunes it.
mv prune/v2s/s1/checkpoint_last.safetensors prune-source-checkpoint && mv prune/random prune-random-1 ||
  fail "cannot move the source's checkpoint and the random run away"
"$P" study prune.json --out prune --jobs 1 > again.out 2>&1 || { cat again.out; fail "the study without the source's checkpoint failed"; }
grep -q -- "--out prune/v2s/s1/phase1" prune/logs/v2s-s1.log || fail "the first phase was not trained again: $(cat again.out)"
grep -q -- "prune .*--from prune/v2s/s1/phase1/checkpoint_last.safetensors" prune/logs/random-s1.log ||
  fail "random did not prune the first phase trained again"
cmp -s prune/random/s1/votes.json prune-random-1/s1/votes.json || fail "the votes on the first phase trained again differ"
python3 - prune/random/s1/pruned/log.jsonl prune-random-1/s1/pruned/log.jsonl <<'PY' || fail "fine-tuning the first phase trained again gave other losses"
import json, sys
def losses(path): return [(l["update"], l["loss"]) for l in map(json.loads, open(path)) if l["type"] == "train"]
assert losses(sys.argv[1]) == losses(sys.argv[2]), (losses(sys.argv[1])[:3], losses(sys.argv[2])[:3])
PY
rm -r prune/random && sed -i 's/"loss":\([0-9]\)/"loss":1\1/' prune/v2s/s1/log.jsonl
"$P" study prune.json --out prune --jobs 1 > edited.out 2>&1; rc=$?
[ $rc -eq 1 ] && grep -q 'is not the one its log records' edited.out || fail "an edited source log was accepted (exit $rc): $(cat edited.out)"
grep -q 'random s1: not run, the first phase of its source v2s s1 could not be trained again' edited.out &&
  grep -q ': 1 run failed or could not start' edited.out ||
  fail "the refused first phase was not reported as one run that could not start: $(cat edited.out)"
[ ! -e prune/random/s1/prune.json ] || fail "a run pruned a first phase that does not match its source"

# 6. tools/run_studies.sh runs studies one after another, from the repository's layout; a study
#    that cannot run does not stop the next.
mkdir -p chain/experiments/studies || fail "cannot make chain/"
sed -e 's/"seeds": \[1, 2\]/"seeds": [1]/' -e 's/, {"name": "gct".*}\]/]/' -e 's/"updates": 6/"updates": 2/' tiny.json \
  > chain/experiments/studies/one.json && cp chain/experiments/studies/one.json chain/experiments/studies/two.json &&
  echo '{"systems": 3}' > chain/experiments/studies/broken.json || fail "cannot write the chained studies"
(cd chain && STUDIES="one broken two" sh "$ROOT/tools/run_studies.sh" "$P") > chain.out 2>&1 ||
  fail "run_studies.sh failed: $(cat chain.out)"
grep -q 'study broken ended with exit status 2' chain.out || fail "the broken study's exit status is not reported: $(cat chain.out)"
for s in one two; do
  grep -q '"trained": true' "chain/studies/$s/vanilla/s1/study_run.json" || fail "run_studies.sh did not run study $s: $(cat chain.out)"
done

# 7. A larger budget: the finished runs continue from their last save to it, their evaluations at
#    the old budget move to evaluated_at_<N>/, their head metrics go on in the same file, and the
#    table pairs them again. A run whose checkpoint is gone cannot continue, and nothing is changed.
study tiny 6
cp tiny/gct/s2/eval_test_2017_mscoco.json gct-s2-eval-at-6.json
lines_at_6=$(xz -dc tiny/gct/s2/head_metrics.jsonl.xz | wc -l)
study tiny 9
mv tiny/vanilla/s1/checkpoint_last.safetensors vanilla-s1-last
"$P" study tiny.json --out tiny > gone.out 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q 'vanilla s1 stopped at update 6.*budget is now 9.*checkpoint_last.safetensors is gone' gone.out ||
  fail "a run without its checkpoint was not refused with the reason (exit $rc): $(cat gone.out)"
[ -f tiny/gct/s2/eval_test_2017_mscoco.json ] && grep -q '"trained": true' tiny/gct/s2/study_run.json ||
  fail "the refused study changed a run"
mv vanilla-s1-last tiny/vanilla/s1/checkpoint_last.safetensors
"$P" study tiny.json --out tiny --dry-run > longer-plan.out || fail "--dry-run of the longer budget failed"
grep -q '^# continue tiny/gct/s2 from update 6 to 9 (its evaluations move to tiny/gct/s2/evaluated_at_6)$' longer-plan.out &&
  grep -q -- '--set train.max_updates=9 .*--out tiny/gct/s2 .*--resume' longer-plan.out ||
  fail "the plan does not continue the runs: $(cat longer-plan.out)"
[ -f tiny/gct/s2/eval_test_2017_mscoco.json ] || fail "--dry-run moved an evaluation"
"$P" study tiny.json --out tiny --jobs 2 > longer.out 2>&1 || { cat longer.out; fail "the study with a larger budget failed"; }
grep -q 'gct s2 continues from update 6 to 9' longer.out || fail "no note of the continued runs: $(cat longer.out)"
cmp -s gct-s2-eval-at-6.json tiny/gct/s2/evaluated_at_6/eval_test_2017_mscoco.json || fail "the evaluation at 6 updates was not kept"
[ -s tiny/gct/s2/evaluated_at_6/eval_test_2017_mscoco.hyp ] || fail "the hypotheses at 6 updates were not kept"
python3 - tiny "$lines_at_6" <<'PY' || fail "the continued runs are not their first 6 updates and 3 more"
import json, lzma, sys
d, lines_at_6 = sys.argv[1], int(sys.argv[2])
for run in ("vanilla/s1", "vanilla/s2", "gct/s1", "gct/s2"):
    log = [json.loads(l) for l in open(f"{d}/{run}/log.jsonl")]
    starts = [l for l in log if l["type"] == "start"]
    assert len(starts) == 2 and starts[1]["resume"], (run, starts)
    assert [l["update"] for l in log if l["type"] == "train"] == list(range(1, 10)), run
    record = json.load(open(f"{d}/{run}/study_run.json"))
    assert record["trained"] and record["evaluated"] == ["test_2017_mscoco"], (run, record)
    assert json.load(open(f"{d}/{run}/eval_test_2017_mscoco.json"))["bleu"] >= 0, run
metrics = lzma.open(f"{d}/gct/s2/head_metrics.jsonl.xz", "rt").read().splitlines()
assert len(metrics) > lines_at_6, (len(metrics), lines_at_6)
PY
"$P" study tiny.json --out tiny --table > longer-table.md || fail "--table after the larger budget failed"
grep -q '^| gct | 2 |' longer-table.md && ! grep -q 'Left out' longer-table.md || fail "the continued runs are not tabulated: $(cat longer-table.md)"
study tiny 12 ', "optim.schedule": "cosine"'
"$P" study tiny.json --out tiny > cosine.out 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q 'cannot continue: its learning rate decays over the budget (optim.schedule "cosine")' cosine.out ||
  fail "a run whose schedule depends on the budget was continued (exit $rc): $(cat cosine.out)"
study tiny 9
# The same for a system that prunes within its run and one that prunes another's first phase:
# both continue their fine-tuning.
mkdir -p longer && sed 's/"updates": 30/"updates": 24/' prune.json > longer/prune.json || fail "cannot write longer/prune.json"
"$P" study longer/prune.json --out prunex --jobs 1 > prunex1.out 2>&1 || { cat prunex1.out; fail "the pruning study at 24 updates failed"; }
sed -i 's/"updates": 24/"updates": 30/' longer/prune.json
"$P" study longer/prune.json --out prunex --jobs 1 > prunex2.out 2>&1 || { cat prunex2.out; fail "the pruning study continued to 30 failed"; }
python3 - prunex <<'PY' || fail "the pruned runs did not continue their fine-tuning"
import json, os, sys
d = sys.argv[1]
for system in ("v2s", "random"):
    log = [json.loads(l) for l in open(f"{d}/{system}/s1/pruned/log.jsonl")]
    updates = [l["update"] for l in log if l["type"] == "train"]
    assert max(updates) == 30 and len(updates) == len(set(updates)), (system, updates)
    assert os.path.exists(f"{d}/{system}/s1/pruned/evaluated_at_24/eval_test_2017_mscoco.json"), system
    assert json.load(open(f"{d}/{system}/s1/study_run.json"))["trained"], system
PY

echo "cli_study: ok"
