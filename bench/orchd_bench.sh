#!/usr/bin/env bash
# bench/orchd_bench.sh BUILD [QWEN.gguf] - orchd under load (issue 6):
#  1. supervisor overhead: a stream's decode rate through orchd (orch-bench,
#     1 stream) over `orch-worker run` with the same model, prompt, tokens,
#     threads and temperature 0 (medians; target >= 0.97), on stories260K
#     (~0.14 ms a token: the supervisor's per-token cost laid bare) and, when
#     given, qwen2.5-0.5b Q4_K_M (~40 ms a token on one thread);
#  2. 1, 16, 64 and 256 concurrent streams (64 slots, 128 tokens each);
#  3. 1,000 idle SSE streams held open against a paused worker: orchd's
#     memory per stream.
# Results go in bench/RESULTS.md by hand, with the machine.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
data=${ORCH_TESTDATA:-$root/../shared/testdata}
model=$data/models/stories260K.gguf
qwen=${2:-}  # optional: a qwen2.5-0.5b GGUF (bench/run.sh synthesizes one), ~40 ms a token
threads=${THREADS:-1}
tokens=256
prompt="Once upon a time"
tmp=$(mktemp -d)
port=$((30000 + $$ % 20000))
orchd_pid=
cleanup() {
	[[ -n $orchd_pid ]] && kill "$orchd_pid" 2>/dev/null && wait "$orchd_pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

cat >"$tmp/orchd.conf" <<CONF
[server]
listen = 127.0.0.1:$port
admin_socket = $tmp/orchd.sock
runtime_dir = $tmp
max_queue = 2048
max_connections = 4096
heartbeat_timeout_s = 600

[model "s"]
path = $model
slots = 64
context = 512
threads = $threads

$( [[ -n $qwen ]] && printf '[model "q"]\npath = %s\nslots = 4\ncontext = 512\nthreads = %s\n' "$qwen" "$threads" )

[model "idle"]
path = $model
slots = 1
context = 128
threads = 1
CONF
"$build/bin/orchd" --config "$tmp/orchd.conf" >"$tmp/orchd.log" 2>&1 &
orchd_pid=$!
for _ in $(seq 200); do
	curl -sf "http://127.0.0.1:$port/ready" >/dev/null && break
	sleep 0.05
done

# overhead NAME PATH TOKENS RUNS: decode rate of `orch-worker run` against
# one stream through orchd's model NAME (the same file), medians of RUNS.
overhead() {
	local name=$1 path=$2 n=$3 runs=$4 direct=()
	for _ in $(seq "$runs"); do
		"$build/bin/orch-worker" run --model "$path" --prompt "$prompt" -n "$n" --temperature 0 \
			--threads "$threads" --context 512 --format jsonl 2>/dev/null | tail -1 >"$tmp/run.json"
		direct+=("$(python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); print((o["tokens_out"]-1)/o["decode_ms"]*1000)' "$tmp/run.json")")
	done
	"$build/bin/orch-bench" --port "$port" --model "$name" --streams 1 --requests "$runs" \
		--max-tokens "$n" --prompt "$prompt" --json >"$tmp/one.json"
	python3 - "$name" "$tmp/one.json" "${direct[@]}" <<'PY'
import json, statistics, sys
via = json.load(open(sys.argv[2]))["stream_decode_tok_s_p50"]
direct = statistics.median(float(x) for x in sys.argv[3:])
print("%-6s orch-worker run: %8.1f tok/s   through orchd: %8.1f tok/s   ratio %.3f"
      % (sys.argv[1], direct, via, via / direct))
PY
}

echo "== 1. supervisor overhead: one stream, threads=$threads (medians)"
overhead s "$model" 256 7
if [[ -n $qwen ]]; then
	overhead q "$qwen" 64 3
fi

echo "== 2. concurrent streams (128 tokens each; 64 slots)"
for n in 1 16 64 256; do
	reqs=$((n * 4 > 64 ? n * 4 : 64))
	"$build/bin/orch-bench" --port "$port" --model s --streams $n --requests $reqs --max-tokens 128 \
		--prompt "$prompt"
done

echo "== 3. 1000 idle SSE streams (worker paused: keep-alives only)"
curl -sf "http://127.0.0.1:$port/v1/completions" -H 'Content-Type: application/json' -d '{"model":"idle","prompt":"x","max_tokens":1}' >/dev/null
idle_pid=$(curl -sf --unix-socket "$tmp/orchd.sock" http://orchd/admin/workers |
	python3 -c 'import json,sys; print([w["pid"] for w in json.load(sys.stdin) if w["model"]=="idle"][0])')
kill -STOP "$idle_pid"
"$build/bin/orch-bench" --port "$port" --model idle --idle 1000 --hold-s 5 --orchd-pid "$orchd_pid" --max-tokens 4 || true
kill -CONT "$idle_pid"
