#!/bin/bash
# A real Slurm run of tools/slurm: installs Debian's slurm-wlm and munge where missing, starts
# munged, slurmctld and slurmd on this machine as a one-node cluster (private ports, socket,
# state and spool under a temporary directory; nothing in /etc touched), submits a four-shard
# sweep array and its dependent merge through tools/slurm/submit-sweep, waits, and checks the
# merged file against a local unsharded sweep byte for byte (times aside); then the same sweep with
# one shard failing, recovered as docs/sweeps.md says (the merge left pending cancelled, that shard
# resubmitted with a finished one, a merge after them), to the same bytes; then stops the daemons.
#
# usage: run_slurm_test.sh REVGRAPH SOURCE_ROOT      (meson test: suite 'slurm')
# Exit 0 pass, 1 fail, 77 skip (not root, packages unavailable, or the daemons cannot run here;
# the reason is printed). REVGRAPH_SLURM_KEEP=1 keeps the working directory for a look.
set -uo pipefail
(($# == 2)) || { echo "usage: run_slurm_test.sh REVGRAPH SOURCE_ROOT" >&2; exit 2; }
REVGRAPH=$(readlink -f "$1")
ROOT=$(readlink -f "$2")
# Everything, the install included, within 170 s: each wait below gets what is left.
budget=170
left() { echo $((budget - SECONDS)); }
say() { echo "slurm-test: $* ($((SECONDS))s)"; }
skip() { say "SKIP: $*"; exit 77; }

[[ $(id -u) == 0 ]] || skip "needs root to install slurm-wlm and munge and to run slurmd"
missing=()
for p in slurm-wlm munge; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  say "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # Leave 60 s for the cluster and the sweep.
  { timeout $(($(left) - 60)) apt-get update -qq &&
    timeout $(($(left) - 60)) apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >/dev/null 2>&1 ||
    skip "cannot install ${missing[*]} within the time (no package mirror reachable?)"
fi
for tool in munged munge slurmctld slurmd sbatch squeue sinfo scancel; do
  command -v "$tool" >/dev/null || skip "$tool is missing after installing slurm-wlm and munge"
done

work=$(mktemp -d /tmp/revgraph-slurm.XXXXXX) || exit 1
chmod 755 "$work"  # munged wants every directory above its socket searchable by all
mkdir -p "$work/munge" "$work/state" "$work/spool" "$work/out"
chmod 755 "$work/munge"
pids=()
munge_socket=$work/munge/munge.socket
cleanup() {
  local rc=$?
  [[ -n ${SLURM_CONF:-} && -f $SLURM_CONF ]] && timeout 10 scancel --quiet --user=root >/dev/null 2>&1
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  [[ -S $munge_socket ]] && munged --stop --socket="$munge_socket" >/dev/null 2>&1
  if [[ ${REVGRAPH_SLURM_KEEP:-0} == 1 ]]; then echo "slurm-test: kept $work"; else rm -rf "$work"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
logs() {
  for f in "$work"/*.log "$work"/out/*.log; do
    [[ -f $f ]] && { echo "----- ${f#"$work"/} (last lines)"; tail -n 15 "$f"; }
  done
}
fail() { say "FAIL: $*"; logs; exit 1; }

# munge: a fresh key, our own socket.
head -c 1024 /dev/urandom >"$work/munge/munge.key" && chmod 400 "$work/munge/munge.key"
munged --key-file="$work/munge/munge.key" --socket="$munge_socket" --pid-file="$work/munge/munged.pid" \
  --log-file="$work/munged.log" --seed-file="$work/munge/munged.seed" --force ||
  skip "munged does not start here: $(tail -n 1 "$work/munged.log" 2>/dev/null)"
munge -n --socket="$munge_socket" | unmunge --socket="$munge_socket" >/dev/null 2>&1 ||
  skip "munge cannot encode and decode a credential here"

# Two free TCP ports on the loopback for slurmctld and slurmd.
read -r ctld_port slurmd_port < <(/usr/bin/python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*(x.getsockname()[1] for x in s))')
[[ -n ${slurmd_port:-} ]] || fail "no free ports"
host=$(hostname -s)
cpus=$(nproc)
((cpus > 2)) && cpus=2
export SLURM_CONF=$work/slurm.conf
cat >"$SLURM_CONF" <<CONF
# One node, this machine; no cgroups (a container may not have them), no accounting.
ClusterName=revgraphtest
SlurmctldHost=${host}(127.0.0.1)
SlurmctldPort=${ctld_port}
SlurmdPort=${slurmd_port}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=${munge_socket}
SlurmUser=root
SlurmdUser=root
StateSaveLocation=${work}/state
SlurmdSpoolDir=${work}/spool
SlurmctldPidFile=${work}/slurmctld.pid
SlurmdPidFile=${work}/slurmd.pid
SlurmctldLogFile=${work}/slurmctld.log
SlurmdLogFile=${work}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
MpiDefault=none
MailProg=/bin/true
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
NodeName=${host} NodeAddr=127.0.0.1 CPUs=${cpus} State=UNKNOWN
PartitionName=test Nodes=${host} Default=YES MaxTime=10 State=UP
CONF

slurmctld -D -c -f "$SLURM_CONF" >"$work/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" >"$work/slurmd.out" 2>&1 &
pids+=($!)
say "slurmctld (port $ctld_port) and slurmd (port $slurmd_port) started on $host, $cpus CPUs"
state=
up_deadline=$((SECONDS + 30))
while ((SECONDS < up_deadline)); do
  for pid in "${pids[@]}"; do
    kill -0 "$pid" 2>/dev/null ||
      skip "a Slurm daemon exited at start: $(cat "$work"/slurm*.out "$work"/slurm*.log 2>/dev/null | grep -i error | tail -n 1)"
  done
  state=$(timeout 5 sinfo -h -N -o %T 2>/dev/null | head -n 1)
  [[ $state == idle ]] && break
  sleep 0.5
done
[[ $state == idle ]] ||
  skip "the node did not come up (state '${state}') within 30 s: $(grep -ih error "$work"/slurm*.log 2>/dev/null | tail -n 1)"
say "node $host is idle"

# The sweep: 8 points (4 seeds × 2 depths, one epoch) on the embedded digits.
sweep_opts=(--grid seed=1..4 --grid depth=1,2 --set epochs=1 --backend cpu --quiet)
"$REVGRAPH" sweep "${sweep_opts[@]}" --jobs 2 --output "$work/local.jsonl" || fail "the local sweep failed"
say "local unsharded sweep done"
# A mistake is refused before anything is queued: revgraph's one line, exit 2, no job.
if bad=$(cd "$work/out" && REVGRAPH=$REVGRAPH "$ROOT/tools/slurm/submit-sweep" 4 "$work/out/bad" "$work/bad.jsonl" \
  --time=5 -- --grid sed=1..4 --set epochs=1 2>&1); then
  fail "submit-sweep queued a sweep with an unknown key: $bad"
fi
[[ $bad == "revgraph: error: --grid sed=1..4: unknown key 'sed'" ]] || fail "submit-sweep's refusal: $bad"
[[ -z $(timeout 5 squeue -h -o %i 2>/dev/null) ]] || fail "a refused submission queued jobs: $(squeue -h 2>&1)"
say "a bad grid refused before any job"
submitted=$(cd "$work/out" && REVGRAPH=$REVGRAPH "$ROOT/tools/slurm/submit-sweep" 4 "$work/out/part" \
  "$work/merged.jsonl" --time=5 -- "${sweep_opts[@]}" 2>&1) || fail "submit-sweep failed: $submitted"
say "$submitted"
jobs_deadline=$((budget - 5))
# Until the queue is empty, or fail at the deadline naming what is left (id, state, reason).
wait_for_empty_queue() {
  while ((SECONDS < jobs_deadline)); do
    [[ -z $(timeout 5 squeue -h -o %i 2>/dev/null) ]] && return 0
    sleep 0.5
  done
  [[ -z $(timeout 5 squeue -h -o %i 2>/dev/null) ]] ||
    fail "jobs still queued or running at ${SECONDS} s: $(squeue -h -o '%i %T %r' 2>&1)"
}
wait_for_empty_queue
say "all jobs left the queue"

shards=("$work"/out/part.shard-*-of-4.jsonl)
((${#shards[@]} == 4)) || fail "expected 4 shard files, found ${#shards[@]}"
[[ -f $work/merged.jsonl ]] || fail "the merge job wrote no merged.jsonl"
strip() { sed -E 's/,"run_seconds":[^,}]*\}$/}/' "$1"; }
[[ $(wc -l <"$work/local.jsonl") == 8 ]] || fail "the local sweep has $(wc -l <"$work/local.jsonl") lines, not 8"
same_as_local() {
  cmp -s <(strip "$work/local.jsonl") <(strip "$1") ||
    fail "$1 differs from the local unsharded sweep (times aside):" \
      "$(diff <(strip "$work/local.jsonl") <(strip "$1") | head -c 600)"
  grep -q '"run_seconds":' "$1" || fail "$1 has no run_seconds"
}
same_as_local "$work/merged.jsonl"
say "the 4-shard Slurm array + afterok merge equals the local sweep byte for byte (times aside)"

# One shard fails (its node lost, say): shard 2's first run exits 1 before revgraph starts.
cat >"$work/flaky-revgraph" <<FLAKY
#!/bin/bash
if [[ " \$* " == *" --shard 2/4 "* ]] && mkdir "$work/failed-once" 2>/dev/null; then
  echo "flaky-revgraph: shard 2 fails once" >&2
  exit 1
fi
exec "$REVGRAPH" "\$@"
FLAKY
chmod +x "$work/flaky-revgraph"
submitted=$(cd "$work/out" && REVGRAPH=$work/flaky-revgraph "$ROOT/tools/slurm/submit-sweep" 4 "$work/out/flaky" \
  "$work/flaky.jsonl" --time=5 -- "${sweep_opts[@]}" 2>&1) || fail "submit-sweep failed: $submitted"
ids='^array job [0-9]+ .*, merge job ([0-9]+) '
[[ $submitted =~ $ids ]] || fail "submit-sweep said: $submitted"
merge=${BASH_REMATCH[1]}
say "$submitted (shard 2 to fail)"
# The array done, the merge stays pending for ever: afterok can no longer be met.
waiting=
while ((SECONDS < jobs_deadline)); do
  waiting=$(timeout 5 squeue -h -o '%i %r' 2>/dev/null)
  [[ $waiting == "$merge DependencyNeverSatisfied" ]] && break
  sleep 0.5
done
[[ $waiting == "$merge DependencyNeverSatisfied" ]] ||
  fail "want only the merge left, pending on DependencyNeverSatisfied; the queue: $waiting"
[[ -d $work/failed-once && ! -e $work/out/flaky.shard-2-of-4.jsonl ]] || fail "shard 2 did not fail as arranged"
say "shard 2 failed; merge job $merge pending: DependencyNeverSatisfied"
# docs/sweeps.md's recovery: cancel the merge, resubmit the failed shard (with shard 1, finished:
# it resumes as a no-op), merge after them.
scancel "$merge" || fail "scancel $merge failed"
cp "$work/out/flaky.shard-1-of-4.jsonl" "$work/shard-1.before"
rerun=$(cd "$work/out" && REVGRAPH=$work/flaky-revgraph REVGRAPH_SHARDS=4 sbatch --parsable --time=5 --array=1-2 \
  "$ROOT/tools/slurm/sweep-array.sbatch" "$work/out/flaky" "${sweep_opts[@]}" 2>&1) || fail "sbatch of shard 2: $rerun"
remerge=$(cd "$work/out" && REVGRAPH=$REVGRAPH sbatch --parsable --time=5 --dependency="afterok:${rerun%%;*}" \
  "$ROOT/tools/slurm/sweep-merge.sbatch" "$work/out/flaky" 4 "$work/flaky.jsonl" 2>&1) ||
  fail "sbatch of the merge: $remerge"
say "merge $merge cancelled; shards 1-2 resubmitted (job ${rerun%%;*}), merge job ${remerge%%;*} after them"
wait_for_empty_queue
[[ -f $work/out/flaky.shard-2-of-4.jsonl ]] || fail "the resubmitted task did not run shard 2"
cmp -s "$work/shard-1.before" "$work/out/flaky.shard-1-of-4.jsonl" || fail "finished shard 1 changed when run again"
[[ -f $work/flaky.jsonl ]] || fail "the merge after the resubmitted shard wrote no flaky.jsonl"
same_as_local "$work/flaky.jsonl"
say "PASS: also with one shard failed, resubmitted and merged after it"
exit 0
