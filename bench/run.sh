#!/usr/bin/env bash
# bench/run.sh BUILD - the CPU benchmarks: synthesize the qwen2.5-0.5b
# Q4_K_M model (timed), then time open+validate of it and of the qwen2
# vocabulary. Results go in bench/RESULTS.md by hand, with the machine.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
data=${ORCH_TESTDATA:-$root/../shared/testdata}
work=$build/bench
mkdir -p "$work"
model=$work/qwen2.5-0.5b-Q4_K_M.gguf
start=$(date +%s.%N)
"$build/bin/orch-synth" --preset qwen2.5-0.5b --quant Q4_K_M --vocab "$data/vocab/ggml-vocab-qwen2.gguf" --seed 1 -o "$model"
awk -v a="$start" -v b="$(date +%s.%N)" -v f="$model" 'BEGIN { printf "orch-synth qwen2.5-0.5b Q4_K_M: %.2f s\n", b - a }'
"$build/bin/gguf_open_bench" -n 50 "$data/vocab/ggml-vocab-qwen2.gguf" "$model" \
	"$data/models/stories260K.gguf"
"$build/bin/tok_bench" "$data"
# constrained decoding (issue 20): token masks on the qwen2 and o200k vocabularies
"$build/bin/grammar_bench" "$data"

# Engine (issue 4): memory bandwidth, then prefill / decode / batched decode
# for stories260K and qwen2.5-0.5b (Q8_0 and Q4_K_M) at 1 and 2 threads.
q8=$work/qwen2.5-0.5b-Q8_0.gguf
[[ -f $q8 ]] || "$build/bin/orch-synth" --preset qwen2.5-0.5b --quant Q8_0 \
	--vocab "$data/vocab/ggml-vocab-qwen2.gguf" --seed 1 -o "$q8"
"$build/bin/membw" 1024 1 2
for m in "$data/models/stories260K.gguf" "$q8" "$model"; do
	"$build/bin/engine_bench" "$m" 1 2
done

# Paged KV (issue 19): a shared system prompt, mixed lengths at the same KV
# memory (uniform, then log-uniform lengths), a multi-turn chat; qwen2.5-0.5b
# cut to 4 blocks, so that the three fit in minutes on 2 cores.
kv=$work/qwen2.5-0.5b-L4-Q8_0.gguf
[[ -f $kv ]] || "$build/bin/orch-synth" --preset qwen2.5-0.5b --layers 4 --quant Q8_0 \
	--vocab "$data/vocab/ggml-vocab-qwen2.gguf" --seed 1 -o "$kv"
"$build/bin/kv_bench" "$kv"
"$build/bin/kv_bench" "$kv" --only 2 --dist log
# the shared system prompt on gpt-oss tiny: sliding-window layers in a pool of their own
"$build/bin/kv_bench" "$data/models/gpt-oss-tiny-mxfp4.gguf" --only 1

# The supervisor <-> worker hop (issue 5): the channel alone, then a real
# worker with 1 and 64 concurrent jobs.
if [[ -x $build/bin/ipc_bench ]]; then
	"$build/bin/ipc_bench" raw 200000
	"$build/bin/ipc_bench" worker "$build/bin/orch-worker" "$data/models/stories260K.gguf" 2>/dev/null
fi

# orchd under load (issue 6): supervisor overhead, concurrent streams, idle streams.
if [[ -x $build/bin/orchd ]]; then
	"$root/bench/orchd_bench.sh" "$build" "$model"
fi
