#!/bin/bash
# The GPU figures of the README's GPU table in one device call (about 9 minutes at most): the
# PyTorch-CUDA anchors and our webgpu bench in the same lease, each step time-boxed so a slow one
# cannot starve the rest; every step writes into $OUT (8 files, the device tool's limit).
# Usage (after `npm run device:pack`): bash scripts/device/figures.sh   (carry .device)
set -uo pipefail
D=$(cd "$(dirname "$0")/../../.device" && pwd)
OUT=${OUT:-/tmp/qrag-out}; export OUT; mkdir -p "$OUT"
step() { local t=$1; shift; local s=$SECONDS; timeout "$t" "$@"; echo "figures: $* → rc $? in $((SECONDS - s)) s" >&2; }

step 20 bash "$D/run.sh" info
step 110 bash "$D/run.sh" torch --parts selftest,matmul,train,encode,eval40k,eval400k --deadline 95 \
  --train-budget 25 --encode-budget 15 --eval-budget 20 --eval400k-budget 20
step 30 bash "$D/run.sh" torch-matmul
step 40 bash "$D/run.sh" torch-encode
# ours: most important first (a part cut off by its timeout keeps the parts before it)
step 270 bash "$D/run.sh" bench --backend webgpu --lengths 40000,400000 \
  --parts webgpu-check,matmul,matmul-tiled,workload-transformer,encode-hf,workload-bow 2> "$OUT/bench.log"
# the same training iterations with one command buffer per read instead of per 15 programs
step 70 bash "$D/run.sh" bench --backend webgpu --parts dispatch --submit-batch 100000 --out "$OUT/bench-submit.json" 2>> "$OUT/bench.log"
ls -la "$OUT" >&2
