#!/bin/bash
# The GPU figures of the GPU table in docs/benchmarks/gpu.md in one device call (about 4 minutes; each step
# time-boxed so a slow one cannot starve the rest): our webgpu bench and the PyTorch-CUDA anchors
# in the same lease, then the transformer workload under a CPU profile and a training iteration
# with the buffer pool untrimmed. At most 8 files in $OUT (the device tool's
# limit): info.txt, bench.json, bench.log, torch.json, torch-matmul.json, torch-encode.json,
# dispatch.json (both variants) and the .cpuprofile. (64 programs per command buffer instead of
# tfjs's 15 was slower on the H200: 401 vs 344 ms an iteration.)
# Usage (after `npm run device:pack`): bash scripts/device/figures.sh   (carry .device), then
#   npx tsx server/qrag/bench/gpu-table.ts PREFIX   on the files copied to bench-results/PREFIX-*.json
set -uo pipefail
D=$(cd "$(dirname "$0")/../../.device" && pwd)
OUT=${OUT:-/tmp/qrag-out}; export OUT; mkdir -p "$OUT"
step() { local t=$1; shift; local s=$SECONDS; timeout "$t" "$@"; echo "figures: $* → rc $? in $((SECONDS - s)) s" >&2; }

step 20 bash "$D/run.sh" info
# ours first (a part cut off by its timeout keeps the parts before it)
step 200 bash "$D/run.sh" bench --backend webgpu --lengths 40000,400000 \
  --parts matmul,matmul-tiled,workload-transformer,encode-stream,encode-hf,workload-bow 2> "$OUT/bench.log"
step 110 bash "$D/run.sh" torch --parts selftest,matmul,train,encode,eval40k,eval400k --deadline 95 \
  --train-budget 25 --encode-budget 15 --eval-budget 20 --eval400k-budget 20
cat "$OUT/torch.log" >> "$OUT/bench.log" 2>/dev/null; rm -f "$OUT/torch.log"
step 30 bash "$D/run.sh" torch-matmul
step 40 bash "$D/run.sh" torch-encode
W=/tmp/qrag-variants; mkdir -p "$W"
# where the host time goes: the transformer workload (training, encode, a 1M-token episode) under a CPU profile
QRAG_NODE_FLAGS="--cpu-prof --cpu-prof-dir=$OUT --cpu-prof-interval 500" \
  step 60 bash "$D/run.sh" bench --backend webgpu --parts workload-transformer --lengths 40000 --out "$W/profiled.json" 2>> "$OUT/bench.log"
step 60 bash "$D/run.sh" bench --backend webgpu --parts dispatch --pool-ratio off --out "$W/pool-off.json" 2>> "$OUT/bench.log"
python3 -c 'import json,sys; print(json.dumps({n: json.load(open(f"/tmp/qrag-variants/{n}.json")) for n in sys.argv[1:]}, indent=1))' \
  profiled pool-off > "$OUT/dispatch.json"
ls -la "$OUT" >&2
