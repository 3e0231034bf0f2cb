#!/usr/bin/env bash
# gpu_cost.sh [BUILD] - orch-gpu-cost's tables for bench/RESULTS.md (docs/gpu-cost.md):
# qwen2.5-0.5b and phi3-mini-4k Q4_K_M and gpt-oss-20b (MXFP4 experts), counted on the
# simulated device from 1- and 2-layer files (gpt-oss: 2 and 4), the full set, and the
# bench set of qwen2.5-0.5b and phi3-mini-4k into bench/gpu_cost_predicted.tsv (what
# tests/gpu/run.sh bench prints beside the measured steps). Hours on one core: gpt-oss's
# 64-sequence and prefill steps most (each of its files tens of minutes).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-sim}
m=${ORCH_GPU_COST_MODELS:-/tmp/orch-gpu-cost-models}
out=${ORCH_GPU_COST_OUT:-/tmp/orch-gpu-cost}
mkdir -p "$m" "$out"
synth() { # PRESET LAYERS
	[[ -s $m/$1-$2.gguf ]] ||
		"$build/bin/orch-synth" --preset "$1" --quant Q4_K_M --layers "$2" --seed 7 -o "$m/$1-$2.gguf" >/dev/null
}
for p in "qwen2.5-0.5b 1" "qwen2.5-0.5b 2" "phi3-mini-4k 1" "phi3-mini-4k 2" "gpt-oss-20b 2" "gpt-oss-20b 4"; do
	synth $p
done
q="qwen2.5-0.5b=24:$m/qwen2.5-0.5b-1.gguf:$m/qwen2.5-0.5b-2.gguf"
p="phi3-mini-4k=32:$m/phi3-mini-4k-1.gguf:$m/phi3-mini-4k-2.gguf"
g="gpt-oss-20b=24:$m/gpt-oss-20b-2.gguf:$m/gpt-oss-20b-4.gguf"
cost="$build/bin/orch-gpu-cost"
# 64 (phi3, gpt-oss: 8 and 64) sequences of 16,384 positions would take hours on the CPU
"$cost" --set full --kernels --tsv "$out/qwen.tsv" "$q" | tee "$out/qwen.txt"
"$cost" --set full --kernels --skip "decode b8 ctx16384,decode b64 ctx16384" --tsv "$out/phi3.tsv" "$p" |
	tee "$out/phi3.txt"
"$cost" --set full --kernels --skip "decode b8 ctx16384,decode b64 ctx16384" --tsv "$out/gpt-oss.tsv" "$g" |
	tee "$out/gpt-oss.txt"
"$cost" --set bench --tsv "$root/bench/gpu_cost_predicted.tsv" "$q" "$p" | tee "$out/bench.txt"
