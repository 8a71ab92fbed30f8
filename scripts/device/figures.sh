#!/bin/bash
# The GPU figures of the GPU table in docs/benchmarks/gpu.md in one device call (about 6–8
# minutes, at most ~9.5; each step time-boxed so a slow one cannot starve the rest): our webgpu
# bench and the PyTorch-CUDA anchors in the same lease (with the GPU time per program and the
# host's time by function: where to work next; encode-stream also with f16 activations,
# gpu_storage f16), then the recorded loop's counts and GPU time per phase, hf BERT's recorded
# forward and update, a BERT-base training iteration by phase and program, both again with the
# weight gradients whole, one thread per query in attention and 64×64 tiles for products of few
# blocks (--split-k 1 --key-lanes 1 --tiny-tiles 0: the small grids' workgroups as before) and
# with a read per run and the values read (--deferred-reads 0), and with the layers' programs
# after the QKV apart (--layer-tail 0), against the defaults, and
# BERT-base trained through the platform (the mission's base phase). At most 8 files in $OUT (the device tool's limit):
# info.txt, bench.json, bench.log (every step's log), torch.json, torch-matmul.json,
# torch-encode.json, dispatch.json, mission.json. (64 programs per command buffer instead of
# tfjs's 15 was slower on the H200: 401 vs 344 ms an iteration.)
# Usage (after `npm run device:pack`): bash scripts/device/figures.sh   (carry .device), then
#   npx tsx server/qrag/bench/gpu-table.ts PREFIX   on the files copied to bench-results/PREFIX-*.json
set -uo pipefail
D=$(cd "$(dirname "$0")/../../.device" && pwd)
OUT=${OUT:-/tmp/qrag-out}; export OUT; mkdir -p "$OUT"
step() { local t=$1; shift; local s=$SECONDS; timeout "$t" "$@"; echo "figures: $* → rc $? in $((SECONDS - s)) s" >&2; }

step 20 bash "$D/run.sh" info
# ours first (a part cut off by its timeout keeps the parts before it); layer-tail last: a rollout
# step's forward with the layer tail and without, by rows (bench/layer-tail.ts: TAIL_MAX_ROWS's figures)
step 200 bash "$D/run.sh" bench --backend webgpu --lengths 40000,400000 --host-profile 3 \
  --parts matmul,matmul-tiled,workload-transformer,encode-stream,encode-hf,workload-bow,layer-tail 2> "$OUT/bench.log"
step 110 bash "$D/run.sh" torch --parts selftest,matmul,train,encode,eval40k,eval400k --deadline 95 \
  --train-budget 25 --encode-budget 15 --eval-budget 20 --eval400k-budget 20
cat "$OUT/torch.log" >> "$OUT/bench.log" 2>/dev/null; rm -f "$OUT/torch.log"
step 30 bash "$D/run.sh" torch-matmul
step 40 bash "$D/run.sh" torch-encode
# the recorded hot loop's split (dispatches, submits, reads, host vs GPU ms per phase), hf BERT's
# recorded forward/update, one babilong-gpu iteration with BERT-base split by phase and program
# (dispatch-bert: where the paper's recipe spends its time; one more iteration of each under the
# host's CPU profiler, BERT-base's host time by function), then BERT-base on the babilong-gpu
# preset through the platform (server, worker, REST) for its update rate: one file each (the tool
# brings back 8 files)
step 150 bash "$D/run.sh" bench --backend webgpu --host-profile 1 --parts dispatch,dispatch-hf,dispatch-bert --out "$OUT/dispatch.json" 2>> "$OUT/bench.log" > /dev/null
# against the defaults above, in the same lease (the reference workload's iteration and
# BERT-base's; their figures in bench.log only, the 8 files are spoken for): the weight gradients
# whole (--split-k 1), one thread per query in attention (--key-lanes 1) and 64×64 tiles where
# a product has few blocks (--tiny-tiles 0: split-k.ts, attention.ts's lanes, matmul.ts tileFor;
# matmul-tiled above times each tile on a rollout step's products alone), then a read at each run of lock-steps' end and the values read
# (--deferred-reads 0: rollout.ts deviceRuns, lambda-returns.ts); their evaluation, timed above, left out (--eval 0)
step 90 bash "$D/run.sh" bench --backend webgpu --eval 0 --split-k 1 --key-lanes 1 --tiny-tiles 0 --parts dispatch,dispatch-bert --out /tmp/qrag-split-1.json 2>> "$OUT/bench.log" > /dev/null
step 90 bash "$D/run.sh" bench --backend webgpu --eval 0 --deferred-reads 0 --parts dispatch,dispatch-bert --out /tmp/qrag-reads-0.json 2>> "$OUT/bench.log" > /dev/null
# and the rollout's forwards with each layer's programs after its QKV apart (--layer-tail 0:
# layer-tail.ts, 5 programs a layer in place of 1 where a forward has at most 2,048 rows)
step 60 bash "$D/run.sh" bench --backend webgpu --eval 0 --layer-tail 0 --parts dispatch --out /tmp/qrag-tail-0.json 2>> "$OUT/bench.log" > /dev/null
# and every program a dispatch of its own (--join 0: fused-steps.ts, the two encoders' programs
# and a plan's independent neighbours as joint programs, 150 dispatches an iteration against 184)
step 60 bash "$D/run.sh" bench --backend webgpu --eval 0 --join 0 --parts dispatch --out /tmp/qrag-join-0.json 2>> "$OUT/bench.log" > /dev/null
# what is left of the call's 10 minutes (less a margin for the files' return), at most 150 s
M=$(( 570 - SECONDS )); [ "$M" -gt 150 ] && M=150
if [ "$M" -ge 60 ]; then
  W=/tmp/qrag-mission-out; mkdir -p "$W"
  (export OUT=$W; step "$M" bash "$D/run.sh" mission --phases base --base-seconds $(( M - 50 )) --deadline $(( M - 5 )) --expect-backend webgpu)
  cp "$W/mission.json" "$OUT/mission.json" 2>/dev/null; cat "$W/mission.log" >> "$OUT/bench.log" 2>/dev/null
else
  echo "figures: no time left for the mission's BERT-base phase ($M s)" >&2
fi
ls -la "$OUT" >&2
