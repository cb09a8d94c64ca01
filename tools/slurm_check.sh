#!/bin/sh
# Data-parallel training under Slurm's srun, on a one-node Slurm cluster made for the purpose on
# this machine (Debian's packages: apt-get install slurmd slurmctld slurm-client munge). Checks:
#   1. `srun -n 2 --mpi=pmix pillars train …` is one job of 2 ranks: its parameters and optimizer
#      state equal one process's with update_freq 2, bit for bit;
#   2. scancel (SIGTERM to every task, then SIGKILL after KillWait) stops both ranks after the same
#      update, rank 0 saves, and srun exits 143; so it does in a batch job (sbatch), where scancel
#      signals the batch script and its srun as well;
#   3. kill -9 of one rank under `srun --kill-on-bad-exit=1` ends the job within 60 s.
# Not part of `make test`: it starts Slurm's daemons (munged, slurmctld, slurmd) as root, on Slurm's
# default ports, and stops them when it ends.
#
# Usage (as root): PILLARS_DATA=… tools/slurm_check.sh build/pillars [WORK_DIR]
set -u
P=$(realpath "$1")
W=$(realpath -m "${2:-/tmp/pillars-slurm}")
fail() { echo "FAIL: $*"; exit 1; }
[ "$(id -u)" -eq 0 ] || fail "run as root (it starts Slurm's daemons)"
for x in munged slurmctld slurmd srun scancel; do
  command -v $x >/dev/null || fail "no $x (apt-get install slurmd slurmctld slurm-client munge)"
done
rm -rf "$W" && mkdir -p "$W/spool/ctld" "$W/spool/d" "$W/munge" || fail "cannot make $W"
H=$(hostname -s)

# The cluster: one node with this machine's cores, every daemon as root, no cgroups. KillWait is
# Slurm's default, 30 s between the SIGTERM of a cancelled step and its SIGKILL.
export SLURM_CONF="$W/slurm.conf"
cat > "$SLURM_CONF" <<EOF
ClusterName=pillars
SlurmctldHost=$H
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$W/munge/munge.socket
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
StateSaveLocation=$W/spool/ctld
SlurmdSpoolDir=$W/spool/d
SlurmctldPidFile=$W/slurmctld.pid
SlurmdPidFile=$W/slurmd.pid
SlurmctldLogFile=$W/slurmctld.log
SlurmdLogFile=$W/slurmd.log
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
KillWait=30
NodeName=$H CPUs=$(nproc) State=UNKNOWN
PartitionName=check Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
EOF
dd if=/dev/urandom of="$W/munge/munge.key" bs=1024 count=1 2>/dev/null && chmod 600 "$W/munge/munge.key"
munged --force --key-file "$W/munge/munge.key" --socket "$W/munge/munge.socket" --pid-file "$W/munge/munged.pid" \
  --log-file "$W/munge/munged.log" --seed-file "$W/munge/munged.seed" || fail "munged did not start"
slurmctld -D > "$W/slurmctld.out" 2>&1 &
ctld=$!
sleep 2
slurmd -D > "$W/slurmd.out" 2>&1 &
d=$!
trap 'kill $d $ctld $(cat "$W/munge/munged.pid" 2>/dev/null) 2>/dev/null' EXIT
for _ in $(seq 60); do sinfo -h -o %t 2>/dev/null | grep -q idle && break; sleep 0.5; done
sinfo -h -o %t | grep -q idle || { cat "$W/slurmctld.log" "$W/slurmd.log"; fail "the Slurm node is not idle"; }
echo "Slurm $(sinfo -V | cut -d' ' -f2): one node, $(nproc) cores"

EXP=$(dirname "$0")/../experiments/tinyshakespeare-lm.json
LM="--set data.block_size=64 --set model.layers=2 --set train.log_every=1 --set data.max_tokens=1024 --no-eval --quiet --threads 1"
# 1. Two ranks under srun against one process with update_freq 2.
"$P" train "$EXP" --out "$W/one" $LM --set train.max_updates=20 --set train.update_freq=2 || fail "one process"
srun -n 2 --mpi=pmix "$P" train "$EXP" --out "$W/two" $LM --set train.max_updates=20 --set train.update_freq=1 || fail "srun -n 2"
python3 - "$W/one" "$W/two" <<'PY' || fail "2 ranks under srun differ from one process"
import json, struct, sys
def tensors(run):
    with open(run + "/checkpoint_last.safetensors", "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        head, data = json.loads(f.read(n)), f.read()
    return {k: data[v["data_offsets"][0]:v["data_offsets"][1]] for k, v in head.items() if k != "__metadata__"}
a, b = (tensors(d) for d in sys.argv[1:])
assert a.keys() == b.keys() and all(a[k] == b[k] for k in a), "not bit-identical"
print(f"1. srun -n 2: {len(a)} tensors (parameters and optimizer state) bit-identical to one process x 2")
PY
# stopped_by_sigterm RUN WHAT TAIL: the log of RUN ends with a SIGTERM stop at the update its
# checkpoint_last holds.
stopped_by_sigterm() {
  python3 - "$1" "$2" "$3" <<'PY' || fail "$2: checkpoint_last or the log disagree"
import json, sys
run, what, tail = sys.argv[1:]
end = [json.loads(l) for l in open(run + "/log.jsonl")][-1]
saved = json.load(open(run + "/checkpoint_last.json"))["state"]["updates"]
assert end["type"] == "end" and end["reason"] == "SIGTERM" and saved == end["update"], (end, saved)
print(f"{what}: both ranks stopped after update {saved}, which rank 0 saved{tail}")
PY
}
# 2. scancel: SIGTERM to every task.
srun -n 2 --mpi=pmix -J pillars-term "$P" train "$EXP" --out "$W/term" $LM --set train.update_freq=30 \
  --set train.max_updates=100000 > "$W/term.txt" 2>&1 &
job=$!
for _ in $(seq 1500); do grep -q '"type":"train"' "$W/term/log.jsonl" 2>/dev/null && break; sleep 0.2; done
scancel -n pillars-term
wait $job; rc=$?
[ $rc -eq 143 ] || { cat "$W/term.txt"; fail "srun exited $rc after scancel, not 143"; }
stopped_by_sigterm "$W/term" "2. scancel" "; srun exited 143"
grep -q "send mpirun SIGUSR1" "$W/term.txt" && fail "under srun, rank 0 printed the note meant for Open MPI's mpirun"
sbatch -n 2 -J pillars-batch -o "$W/batch.txt" --wrap "srun --mpi=pmix $P train $EXP --out $W/batch $LM \
  --set train.update_freq=30 --set train.max_updates=100000" > /dev/null || fail "sbatch"
for _ in $(seq 1500); do grep -q '"type":"train"' "$W/batch/log.jsonl" 2>/dev/null && break; sleep 0.2; done
scancel -n pillars-batch
for _ in $(seq 600); do [ -z "$(squeue -h -n pillars-batch)" ] && break; sleep 0.2; done
[ "$(grep -c "stopped by SIGTERM after update" "$W/batch.txt")" -eq 1 ] ||
  { cat "$W/batch.txt"; fail "sbatch + scancel: not one 'stopped by' line (rank 0's)"; }
stopped_by_sigterm "$W/batch" "   scancel of a batch job" ""
# 3. kill -9 of one rank, with --kill-on-bad-exit: Slurm ends the other (SIGTERM, then SIGKILL
#    after KillWait, since the survivor waits in a collective and cannot end its update).
srun -n 2 --mpi=pmix --kill-on-bad-exit=1 "$P" train "$EXP" --out "$W/kill" $LM --set train.update_freq=2 \
  --set train.max_updates=100000 > "$W/kill.txt" 2>&1 &
job=$!
for _ in $(seq 1500); do grep -q '"type":"train"' "$W/kill/log.jsonl" 2>/dev/null && break; sleep 0.2; done
victim=$(pgrep -f "$W/kill" | while read -r p; do [ "$(cat /proc/$p/comm 2>/dev/null)" = pillars ] && echo "$p"; done | tail -1)
[ -n "$victim" ] || fail "no rank process found"
start=$(date +%s)
kill -9 "$victim"
wait $job; rc=$?
took=$(( $(date +%s) - start ))
[ $rc -ne 0 ] && [ $took -le 60 ] || fail "a job with a killed rank exited $rc after $took s"
pgrep -f "$W/kill" >/dev/null && fail "a rank still runs after the job ended"
echo "3. kill -9 of one rank: the job ended in $took s (exit $rc)"
echo ok
