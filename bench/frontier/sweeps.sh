#!/usr/bin/env bash
# The selection sweeps behind bench/frontier/frontier.json, as they were run (bench/NOTES.md, "The accuracy
# frontier"): MNIST-medium selection draws whose seeds are not the qualification's, then
# `revgraph sweep` grids on them, two points at a time. Writes into DIR (default frontier-work/).
#
#   bench/frontier/sweeps.sh IDX_DIR [DIR]      ~75 min on a 2-core machine
#
# Round 1 (3 draws): stage 1, a coarse grid; stage 2, finer grids around stage 1's fastest
# candidates for 12 % and 8 % and longer, wider, deeper training for 5 %; stage 3, alpha in the
# grid for every band (stage 2 showed alpha 1 beating 0.5 on long runs). Round 2 (11 draws): the
# 12 % and 8 % grids again, after round 1's choices for those bands missed their qualification.
set -euo pipefail
idx=${1:?usage: bench/frontier/sweeps.sh IDX_DIR [DIR]}
dir=${2:-frontier-work}
rg=${REVGRAPH:-$(cd "$(dirname "$0")/../.." && pwd)/build/tools/revgraph}
mkdir -p "$dir"
cd "$dir"
for s in $(seq 2026120401 2026120411); do
  [ -f "sel-$s.npz" ] || "$rg" data mnist --idx-dir "$idx" --seed "$s" --output "sel-$s.npz" \
    --test-labels-output "sel-$s-labels.npy" 2>/dev/null
done
sweep() {  # sweep NAME SEED GRID...: one sweep file, resumed where it stopped
  local name=$1 s=$2
  shift 2
  "$rg" sweep --input "sel-$s.npz" --test-labels "sel-$s-labels.npy" --backend cpu --jobs 2 "$@" \
    --output "$name-$s.jsonl"
}
for s in 2026120401 2026120402 2026120403; do
  sweep s1 "$s" --grid width=82,128,192,256 --grid depth=1,2,3 --grid epochs=2,4,8,16,32 \
    --grid learning_rate=0.05,0.1,0.2 --grid batch_size=64,128,256
  sweep s2a "$s" --grid width=82 --grid depth=1,2 --grid epochs=1,2 --grid learning_rate=0.1,0.2,0.4,0.8 \
    --grid batch_size=128,256,512,1024
  sweep s2b "$s" --grid width=82,96,128 --grid depth=1,2 --grid epochs=8,10,12,14,16 \
    --grid learning_rate=0.1,0.2,0.3 --grid batch_size=64,128,256
  sweep s2c "$s" --grid width=128,192,256 --grid depth=2,3,4 --grid epochs=32,48,64 \
    --grid learning_rate=0.05,0.1,0.2 --grid alpha=0.5,1
  sweep s3a "$s" --grid width=82,96 --grid depth=1,2,3 --grid epochs=1,2,4,6,8,10 \
    --grid learning_rate=0.05,0.1,0.2 --grid alpha=1,1.5 --grid batch_size=128,256
  sweep s3b "$s" --grid width=82,96,128 --grid depth=3,4,6 --grid epochs=16,24,32,48 \
    --grid learning_rate=0.05,0.1 --grid alpha=1,1.5
  sweep s3c "$s" --grid width=128,192 --grid depth=4,6,8 --grid epochs=64,96,128 \
    --grid learning_rate=0.02,0.05 --grid alpha=1,1.5
done
for s in $(seq 2026120401 2026120411); do
  sweep r2a "$s" --grid width=82 --grid depth=1,2 --grid epochs=1,2,3 --grid learning_rate=0.05,0.1,0.2,0.4 \
    --grid alpha=0.5,1 --grid batch_size=128,256,512
  sweep r2b "$s" --grid width=82,96 --grid depth=1,2 --grid epochs=12,14,16,20,24 \
    --grid learning_rate=0.05,0.1,0.2 --grid alpha=0.5,1 --grid batch_size=64,128
done
