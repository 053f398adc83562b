#!/bin/bash
# tools/slurm without a cluster: which shard each array task of sweep-array.sbatch runs (under the
# SLURM_ARRAY_* variables Slurm sets for that --array, with revgraph a stub printing its
# arguments), and what submit-sweep refuses before it queues anything (sbatch a stub logging its
# calls). run_slurm_test.sh runs the scripts on a real cluster.
#
# usage: test_slurm_scripts.sh REVGRAPH SOURCE_ROOT      (meson test: suite 'slurm')
# Exit 0 pass, 1 fail.
set -uo pipefail
(($# == 2)) || { echo "usage: test_slurm_scripts.sh REVGRAPH SOURCE_ROOT" >&2; exit 2; }
REVGRAPH=$(readlink -f "$1")
ROOT=$(readlink -f "$2")
work=$(mktemp -d /tmp/revgraph-slurm-scripts.XXXXXX) || exit 1
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }
# Neither the caller's Slurm job nor its REVGRAPH_* choices may leak into a case.
clean_env=(env -u REVGRAPH_SHARDS -u REVGRAPH_FIRST_INDEX -u SLURM_ARRAY_TASK_ID -u SLURM_ARRAY_TASK_MIN
           -u SLURM_ARRAY_TASK_MAX -u SLURM_ARRAY_TASK_COUNT -u SLURM_CPUS_PER_TASK)

printf '#!/bin/bash\necho "$*"\n' >"$work/echo-revgraph"
chmod +x "$work/echo-revgraph"
# ID MIN MAX COUNT: one task of an array as Slurm describes it; then VAR=VALUE... of the submitter.
array_task() {
  local id=$1 min=$2 max=$3 n=$4
  shift 4
  "${clean_env[@]}" SLURM_ARRAY_TASK_ID="$id" SLURM_ARRAY_TASK_MIN="$min" SLURM_ARRAY_TASK_MAX="$max" \
    SLURM_ARRAY_TASK_COUNT="$n" "$@" REVGRAPH="$work/echo-revgraph" \
    bash "$ROOT/tools/slurm/sweep-array.sbatch" "$work/p" --grid seed=1..8
}
# WANT (I/N) WHAT ID MIN MAX COUNT [VAR=VALUE...]
expect_shard() {
  local want=$1 what=$2 out rc
  shift 2
  out=$(array_task "$@" 2>&1)
  rc=$?
  local i=${want%/*} n=${want#*/}
  if ((rc == 0)) && [[ $out == "sweep --jobs 1 --grid seed=1..8 --shard $want --output $work/p.shard-$i-of-$n.jsonl" ]]; then
    ok "$what: shard $want"
  else
    fail "$what: want shard $want, got exit $rc: $out"
  fi
}
# WHAT ID MIN MAX COUNT [VAR=VALUE...]: exit 2, one line, no revgraph run.
expect_refused() {
  local what=$1 out rc
  shift
  out=$(array_task "$@" 2>&1)
  rc=$?
  if ((rc == 2)) && [[ $(wc -l <<<"$out") == 1 && $out == "sweep-array: "* ]]; then
    ok "$what: refused: $out"
  else
    fail "$what: want one line and exit 2, got exit $rc: $out"
  fi
}

# Whole arrays, as documented: the index less the array's first.
expect_shard 2/4 "--array=0-3, task 2" 2 0 3 4
expect_shard 2/4 "--array=1-4, task 3" 3 1 4 4
expect_shard 2/4 "submit-sweep's array (REVGRAPH_SHARDS=4 --array=0-3), task 2" 2 0 3 4 REVGRAPH_SHARDS=4
# Part of an array resubmitted: with REVGRAPH_SHARDS the index is the shard, whatever else ran.
expect_shard 1/3 "REVGRAPH_SHARDS=3 --array=1" 1 1 1 1 REVGRAPH_SHARDS=3
expect_shard 5/8 "REVGRAPH_SHARDS=8 --array=2,5, task 5" 5 2 5 2 REVGRAPH_SHARDS=8
expect_shard 3/8 "REVGRAPH_SHARDS=8 REVGRAPH_FIRST_INDEX=1 --array=4" 4 4 4 1 REVGRAPH_SHARDS=8 REVGRAPH_FIRST_INDEX=1
expect_shard 7/8 "REVGRAPH_SHARDS=8 REVGRAPH_FIRST_INDEX=1 --array=1-8, task 8" 8 1 8 8 REVGRAPH_SHARDS=8 \
  REVGRAPH_FIRST_INDEX=1
# An index that names no shard: refused by every task of the array, not run as another shard.
expect_refused "REVGRAPH_SHARDS=3 --array=3" 3 3 3 1 REVGRAPH_SHARDS=3
expect_refused "REVGRAPH_SHARDS=8 --array=1-8, task 2" 2 1 8 8 REVGRAPH_SHARDS=8
expect_refused "REVGRAPH_SHARDS=4 REVGRAPH_FIRST_INDEX=1 --array=0" 0 0 0 1 REVGRAPH_SHARDS=4 REVGRAPH_FIRST_INDEX=1
expect_refused "REVGRAPH_FIRST_INDEX without REVGRAPH_SHARDS" 1 1 4 4 REVGRAPH_FIRST_INDEX=1
expect_refused "REVGRAPH_SHARDS=four" 1 0 3 4 REVGRAPH_SHARDS=four
expect_refused "--array=0,2,3,5 without REVGRAPH_SHARDS (gaps)" 2 0 5 4

# submit-sweep: sbatch logs its arguments and the shard variables it was given, and answers job ids.
mkdir -p "$work/bin" "$work/s"
cat >"$work/bin/sbatch" <<'STUB'
#!/bin/bash
echo "$* REVGRAPH_SHARDS=${REVGRAPH_SHARDS-} REVGRAPH_FIRST_INDEX=${REVGRAPH_FIRST_INDEX-}" >>"$SBATCH_LOG"
echo $((100 + $(wc -l <"$SBATCH_LOG")))
STUB
chmod +x "$work/bin/sbatch"
cd "$work/s" || exit 1
"$REVGRAPH" data embedded --quiet --output draw.npz --test-labels-output labels.npy || { fail "revgraph data"; exit 1; }
echo '{"epochs": 1}' >config.json
ln -s labels.npy labels-link.npy
ln config.json config-hardlink.json
"$REVGRAPH" sweep --grid seed=1..2 --set epochs=0 --quiet --shard 0/2 --output p.shard-0-of-2.jsonl ||
  { fail "revgraph sweep"; exit 1; }
ln p.shard-0-of-2.jsonl old-shard.jsonl
sums=$(sha256sum draw.npz labels.npy config.json p.shard-0-of-2.jsonl)
# [VAR=VALUE...] -- OUTPUT [sbatch options -- sweep options...]: submit-sweep 4 PREFIX OUTPUT ...
submit() {
  local vars=()
  while [[ $1 != -- ]]; do vars+=("$1"); shift; done
  shift
  : >"$work/sbatch.log"
  "${clean_env[@]}" PATH="$work/bin:$PATH" SBATCH_LOG="$work/sbatch.log" REVGRAPH="$REVGRAPH" "${vars[@]}" \
    "$ROOT/tools/slurm/submit-sweep" 4 "$work/s/p" "$@" 2>&1
}
# WHAT OUTPUT [sweep options...]: refused in one line, exit 2, nothing queued, nothing written.
expect_submit_refused() {
  local what=$1 output=$2 out rc
  shift 2
  out=$(submit -- "$output" --time=5 -- --grid seed=1..8 --set epochs=1 --quiet "$@")
  rc=$?
  if ((rc == 2)) && [[ $(wc -l <<<"$out") == 1 && $out == "submit-sweep: "* && ! -s $work/sbatch.log ]] &&
    [[ $(sha256sum draw.npz labels.npy config.json p.shard-0-of-2.jsonl) == "$sums" ]]; then
    ok "OUTPUT $what: refused: $out"
  else
    fail "OUTPUT $what: want one line, exit 2 and no sbatch, got exit $rc: $out; sbatch: $(cat "$work/sbatch.log")"
  fi
}
expect_submit_refused "the --input" draw.npz --input draw.npz --test-labels labels.npy
expect_submit_refused "the --input, by another name" "$work/s/../s/draw.npz" --input=draw.npz --test-labels=labels.npy
expect_submit_refused "a symlink to the --test-labels" labels-link.npy --input "$work/s/draw.npz" --test-labels=labels.npy
expect_submit_refused "a hard link to the --config" config-hardlink.json --config config.json
expect_submit_refused "the --config, not yet written" new.json --config=new.json
expect_submit_refused "named as a shard of PREFIX" p.shard-1-of-4.jsonl
expect_submit_refused "an existing shard of PREFIX" p.shard-0-of-2.jsonl
expect_submit_refused "a hard link to a shard of PREFIX" old-shard.jsonl
# An OUTPUT holding another sweep's points: revgraph's own line (exit 1), before anything is queued.
"$REVGRAPH" sweep --grid seed=1..2 --set epochs=0 --quiet --output other.jsonl || { fail "revgraph sweep"; exit 1; }
other=$(sha256sum other.jsonl)
out=$(submit -- other.jsonl --time=5 -- --grid seed=1..8 --set epochs=1 --quiet)
rc=$?
if ((rc == 1)) && [[ $(wc -l <<<"$out") == 1 && $out == "revgraph: error: "* && ! -s $work/sbatch.log &&
  $(sha256sum other.jsonl) == "$other" ]]; then
  ok "OUTPUT another sweep's file: refused: $out"
else
  fail "OUTPUT another sweep's file: want revgraph's one line, exit 1 and no sbatch, got exit $rc: $out"
fi

# More shards than the grid's 8 points (an N past the shell's arithmetic too, which the sweep takes
# up to 2^64 - 1): refused in one line before anything is queued.
for n in 9 9223372036854775808; do
  : >"$work/sbatch.log"
  out=$("${clean_env[@]}" PATH="$work/bin:$PATH" SBATCH_LOG="$work/sbatch.log" REVGRAPH="$REVGRAPH" \
    "$ROOT/tools/slurm/submit-sweep" "$n" "$work/s/p" out-n.jsonl --time=5 -- --grid seed=1..8 --set epochs=1 --quiet 2>&1)
  rc=$?
  if ((rc == 2)) && [[ $(wc -l <<<"$out") == 1 && $out == "submit-sweep: N $n: more shards than the sweep's 8 points"* &&
    ! -s $work/sbatch.log && ! -e out-n.jsonl ]]; then
    ok "N $n for 8 points: refused: $out"
  else
    fail "N $n for 8 points: want one line, exit 2 and no sbatch, got exit $rc: $out; sbatch: $(cat "$work/sbatch.log")"
  fi
done

# A good one: an array 0-3 whose index is the shard (REVGRAPH_SHARDS=4, whatever the caller's
# environment held), then the merge after it.
out=$(submit REVGRAPH_SHARDS=3 REVGRAPH_FIRST_INDEX=2 -- out.jsonl --time=5 -- --grid seed=1..8 --set epochs=1)
rc=$?
mapfile -t calls <"$work/sbatch.log"
if ((rc == 0)) && [[ $out == "array job 101 (4 shards), merge job 102 -> $work/s/out.jsonl" && ${#calls[@]} == 2 &&
  ${calls[0]} == "--parsable --export=ALL --time=5 --array=0-3 $ROOT/tools/slurm/sweep-array.sbatch $work/s/p --grid seed=1..8 --set epochs=1 REVGRAPH_SHARDS=4 REVGRAPH_FIRST_INDEX=0" &&
  ${calls[1]} == "--parsable --export=ALL --time=5 --dependency=afterok:101 $ROOT/tools/slurm/sweep-merge.sbatch $work/s/p 4 $work/s/out.jsonl"* ]]; then
  ok "a good submission: $out"
else
  fail "a good submission: exit $rc: $out; sbatch calls:$(printf '\n  %s' "${calls[@]}")"
fi

((failures == 0)) || { echo "$failures failed"; exit 1; }
echo "PASS"
