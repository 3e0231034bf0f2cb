#!/usr/bin/env bash
# bench/peer/peer.sh - orch's engine_bench beside llama.cpp's llama-bench on
# the same GGUF files, interleaved, so a change is measured against the peer
# and not against memory (issue 22). Not part of `make test`: `make bench-peer`.
#
#   bench/peer/peer.sh [fetch|build|models|run|busy|serve|mem|all]...   (default:
#   all, which is build, models, run, busy, serve and mem: about an hour on 2 cores)
#
# fetch   llama.cpp's source from the npm registry: the node-llama-cpp package
#         ships a git bundle of the llama.cpp release it binds (llama/gitRelease.bundle)
# build   its CPU llama-bench, once, into the work folder: the instruction sets
#         /proc/cpuinfo lists, except AMX where a trial tile instruction faults
#         (with clang where GCC would drop llama.cpp's tile configuration)
#         (all and serve also build llama-server there)
# models  the files: stories260K F32/Q8_0/Q4_0 from the test data; the
#         qwen2.5-0.5b shape Q4_K_M and Q8_0, the phi3-mini shape Q4_K_M and
#         4 of gpt-oss-20b's 24 blocks (experts MXFP4, the rest Q8_0, 3 GB)
#         written by orch-synth
# run     per file and thread count, ROUNDS rounds of engine_bench then
#         llama-bench (A, B, A, B ...): pp128, pp512 and tg128 tokens/s, the
#         medians and the ratio orch / llama.cpp of each round; one table, also
#         written to the work folder. A file llama.cpp fails on is said so.
# busy    decode (tg128) idle and with every core busy (one spinning process
#         per core at nice 19, as a background build or batch job is), both
#         engines, per file and thread count: each one's busy / idle ratio
# serve   orchd beside llama-server on the same file (SERVE_MODEL, default
#         qwen05-q4_k_m; llama-server built once beside llama-bench): 16
#         slots each, the OpenAI /v1/completions stream, orch-bench against
#         both, interleaved per round, at each of STREAMS (default "1 4 16")
#         concurrent streams, 2 requests per stream of MAX_TOKENS (64) tokens
#         with ignore_eos and a prompt unique to the run (no server answers
#         from its prompt cache): aggregate tokens/s and time to first token
#         p50, and their ratios
# mem     peak resident memory of one generation, each engine's own command
#         line: orch-worker run beside llama.cpp's llama-completion (built once
#         beside llama-bench), both on MEM_MODELS (default qwen05-q4_k_m), the
#         serve prompt, MEM_TOKENS (128) tokens with the end token banned,
#         context MEM_CONTEXT (4096, orch's default), greedy, all cores;
#         llama.cpp as it runs by default (weights mapped from the file) and
#         with -lm none (weights read into its own memory); medians of ROUNDS
#
# Environment: BUILD (orch's build folder, default build), ORCH_TESTDATA
# (default ../shared/testdata), PEER_DIR (work folder, default
# bench/peer/.work, ignored by git), ROUNDS (3), THREADS ("1 2"), MODELS (names
# to run, default all: stories-f32 stories-q8_0 stories-q4_0 qwen05-q4_k_m
# qwen05-q8_0 phi3-q4_k_m gptoss-4l; on request also qwen05-q4_1 qwen05-q5_1
# phi3-4l-q2_k phi3-4l-q3_k qwen05-f16 qwen05-bf16, the other weight types),
# PEER_VERSION (node-llama-cpp version, 3.22.1), PEER_AMX (auto: llama.cpp with
# AMX where it runs; off: a second build without AMX in llama-build-noamx, to
# see which is llama.cpp's best here - on the Intel VM of 2026-11-24 its AMX
# kernels were not faster for every file), CXX (llama.cpp's compiler, tried
# first for its AMX kernels; clang++ where it would drop their tile configuration);
# serve: SERVE_MODEL, STREAMS, MAX_TOKENS, ORCH_PORT and LLAMA_PORT (18480,
# 18481); mem: MEM_MODELS, MEM_TOKENS, MEM_CONTEXT.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-$root/build}
[[ $build = /* ]] || build=$root/$build
data=${ORCH_TESTDATA:-$root/../shared/testdata}
work=${PEER_DIR:-$root/bench/peer/.work}
rounds=${ROUNDS:-3}
threads=${THREADS:-1 2}
version=${PEER_VERSION:-3.22.1}
models=${MODELS:-stories-f32 stories-q8_0 stories-q4_0 qwen05-q4_k_m qwen05-q8_0 phi3-q4_k_m gptoss-4l}
amx=${PEER_AMX:-auto}
case $amx in
auto) lbuild=$work/llama-build ;;
off) lbuild=$work/llama-build-noamx ;;
*) printf 'peer: PEER_AMX is auto or off, not %s\n' "$amx" >&2; exit 2 ;;
esac
lb=$lbuild/bin/llama-bench
ls=$lbuild/bin/llama-server
lc=$lbuild/bin/llama-completion
# The servers serve starts: stopped when it ends, and at this script's exit whatever the
# exit (an error, ^C): a harness leaves nothing running behind it (issue 52, B7).
servers=()
stop_servers() {
	if ((${#servers[@]})); then
		kill "${servers[@]}" 2> /dev/null || true
		wait "${servers[@]}" 2> /dev/null || true
	fi
	servers=()
}
trap stop_servers EXIT
trap 'exit 130' INT TERM
prompt="The history of the city begins with a small village on the river, where farmers and fishermen traded grain, salt and cloth with travellers from the hills. Over the centuries it grew"

say() { printf 'peer: %s\n' "$*" >&2; }

peer_note=""
[[ $amx = off ]] && peer_note=" (built without AMX)"

fetch() {
	[[ -d $work/llama.cpp/.git ]] && return
	mkdir -p "$work"
	(cd "$work" && npm pack --silent "node-llama-cpp@$version" > /dev/null)
	tar -xzf "$work/node-llama-cpp-$version.tgz" -C "$work" package/llama/gitRelease.bundle
	git -c advice.detachedHead=false clone -q "$work/package/llama/gitRelease.bundle" "$work/llama.cpp"
	say "llama.cpp $(git -C "$work/llama.cpp" describe --tags --always)$peer_note from node-llama-cpp $version"
}

# Whether an AMX tile instruction runs here (a VM may list AMX and fault on it).
amx_works() {
	local src=$work/amx_probe.c bin=$work/amx_probe
	cat > "$src" <<'C'
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(void)
{
	uint8_t cfg[64];
	memset(cfg, 0, sizeof(cfg));
	cfg[0] = 1; /* palette 1, one 16x64 tile */
	cfg[16] = 64;
	cfg[48] = 16;
	if (syscall(SYS_arch_prctl, 0x1023, 18) != 0) /* ARCH_REQ_XCOMP_PERM, XTILEDATA */
		return 1;
	__asm__ volatile("ldtilecfg %0" : : "m"(cfg));
	__asm__ volatile("tilezero %%tmm0" : :);
	__asm__ volatile("tilerelease" : :);
	return 0;
}
C
	cc -O1 -mamx-tile -o "$bin" "$src" 2> /dev/null && ("$bin"; exit $?) 2> /dev/null
}

# Whether C++ compiler $1 keeps a tile configuration built on the stack:
# GCC 12's _tile_loadconfig does not count as reading it, drops the stores,
# and llama.cpp's AMX kernels (which configure their tiles that way) then
# fault on their first tile load.
amx_cxx_works() {
	local src=$work/amx_cfg.cpp bin=$work/amx_cfg
	cat > "$src" <<'C'
#include <immintrin.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>
struct cfg { uint8_t palette, start_row, rsvd[14]; uint16_t colsb[16]; uint8_t rows[16]; };
__attribute__((noinline)) static void configure()
{
	alignas(64) cfg tc = {};
	tc.palette = 1;
	tc.rows[0] = 16;
	tc.colsb[0] = 64;
	_tile_loadconfig(&tc);
}
int main()
{
	if (syscall(SYS_arch_prctl, 0x1023, 18) != 0) /* ARCH_REQ_XCOMP_PERM, XTILEDATA */
		return 1;
	configure();
	_tile_zero(0);
	_tile_release();
	return 0;
}
C
	"$1" -O2 -mamx-tile -o "$bin" "$src" 2> /dev/null && ("$bin"; exit $?) 2> /dev/null
}

isa_flags() {
	local f
	f=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
	local out="-DGGML_NATIVE=OFF"
	[[ $f = *" avx2 "* ]] && out+=" -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
	[[ $f = *" avx512f "* ]] && out+=" -DGGML_AVX512=ON"
	[[ $f = *" avx512_vnni "* ]] && out+=" -DGGML_AVX512_VNNI=ON"
	[[ $f = *" avx512_bf16 "* ]] && out+=" -DGGML_AVX512_BF16=ON"
	[[ $f = *" avx512vbmi "* ]] && out+=" -DGGML_AVX512_VBMI=ON"
	[[ $f = *" avx_vnni "* ]] && out+=" -DGGML_AVX_VNNI=ON"
	if [[ $f = *" amx_tile "* ]]; then
		if [[ $amx = off ]]; then
			say "PEER_AMX=off: llama.cpp built without AMX in $lbuild"
		elif ! amx_works; then
			say "the CPU lists AMX but a tile instruction faults here: llama.cpp built without AMX"
		elif amx_cxx_works "${CXX:-c++}"; then
			out+=" -DGGML_AMX_TILE=ON -DGGML_AMX_INT8=ON"
		elif command -v clang++ > /dev/null && amx_cxx_works clang++; then
			say "${CXX:-c++} drops llama.cpp's tile configuration (AMX would fault): built with clang"
			out+=" -DGGML_AMX_TILE=ON -DGGML_AMX_INT8=ON"
			out+=" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++"
		else
			say "${CXX:-c++} drops llama.cpp's tile configuration and no clang++: built without AMX"
		fi
	fi
	echo "$out"
}

build_peer() {
	[[ -x $lb ]] && return
	fetch
	# shellcheck disable=SC2046 # the flags are words
	cmake -S "$work/llama.cpp" -B "$lbuild" -DCMAKE_BUILD_TYPE=Release \
		$(isa_flags) -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF \
		-DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DGGML_CUDA=OFF > "$lbuild.cmake.log" 2>&1
	cmake --build "$lbuild" -j"$(nproc)" --target llama-bench > "$lbuild.build.log" 2>&1
	say "built $lb"
}

# llama.cpp's tool $1 (llama-server, llama-completion) at path $2, once.
build_tool() {
	[[ -x $2 ]] && return
	build_peer
	cmake -S "$work/llama.cpp" -B "$lbuild" -DLLAMA_BUILD_SERVER=ON \
		-DLLAMA_BUILD_TOOLS=ON > "$lbuild.cmake-$1.log" 2>&1
	cmake --build "$lbuild" -j"$(nproc)" --target "$1" > "$lbuild.build-$1.log" 2>&1
	say "built $2"
}

build_server() { build_tool llama-server "$ls"; }

model_path() {
	case $1 in
	stories-f32) echo "$data/models/stories260K.gguf" ;;
	stories-q8_0) echo "$data/models/stories260K-Q8_0.gguf" ;;
	stories-q4_0) echo "$data/models/stories260K-Q4_0.gguf" ;;
	qwen05-q4_k_m) echo "$work/models/qwen2.5-0.5b-Q4_K_M.gguf" ;;
	qwen05-q8_0) echo "$work/models/qwen2.5-0.5b-Q8_0.gguf" ;;
	phi3-q4_k_m) echo "$work/models/phi3-mini-Q4_K_M.gguf" ;;
	gptoss-4l) echo "$work/models/gpt-oss-20b-4l.gguf" ;;
	qwen05-q4_1) echo "$work/models/qwen2.5-0.5b-Q4_1.gguf" ;;
	qwen05-q5_1) echo "$work/models/qwen2.5-0.5b-Q5_1.gguf" ;;
	phi3-4l-q2_k) echo "$work/models/phi3-mini-4l-Q2_K.gguf" ;;
	phi3-4l-q3_k) echo "$work/models/phi3-mini-4l-Q3_K.gguf" ;;
	qwen05-f16) echo "$work/models/qwen2.5-0.5b-F16.gguf" ;;
	qwen05-bf16) echo "$work/models/qwen2.5-0.5b-BF16.gguf" ;;
	*) say "unknown model $1"; return 1 ;;
	esac
}

synth() { # NAME PRESET QUANT VOCAB [LAYERS]
	local out layers=()
	out=$(model_path "$1")
	[[ -f $out ]] && return
	mkdir -p "$work/models"
	[[ -n ${5:-} ]] && layers=(--layers "$5")
	"$build/bin/orch-synth" --preset "$2" --quant "$3" --vocab "$data/vocab/$4" --seed 1 \
		"${layers[@]}" -o "$out" > /dev/null
}

make_models() {
	for m in $models; do
		case $m in
		qwen05-q4_k_m) synth "$m" qwen2.5-0.5b Q4_K_M ggml-vocab-qwen2.gguf ;;
		qwen05-q8_0) synth "$m" qwen2.5-0.5b Q8_0 ggml-vocab-qwen2.gguf ;;
		phi3-q4_k_m) synth "$m" phi3-mini-4k Q4_K_M ggml-vocab-phi-3.gguf ;;
		gptoss-4l) synth "$m" gpt-oss-20b Q8_0 ggml-vocab-gpt-oss.gguf 4 ;;
		qwen05-q4_1) synth "$m" qwen2.5-0.5b Q4_1 ggml-vocab-qwen2.gguf ;;
		qwen05-q5_1) synth "$m" qwen2.5-0.5b Q5_1 ggml-vocab-qwen2.gguf ;;
		phi3-4l-q2_k) synth "$m" phi3-mini-4k Q2_K ggml-vocab-phi-3.gguf 4 ;;
		phi3-4l-q3_k) synth "$m" phi3-mini-4k Q3_K ggml-vocab-phi-3.gguf 4 ;;
		qwen05-f16) synth "$m" qwen2.5-0.5b F16 ggml-vocab-qwen2.gguf ;;
		qwen05-bf16) synth "$m" qwen2.5-0.5b BF16 ggml-vocab-qwen2.gguf ;;
		esac
	done
}

# One round of orch on file $1 with $2 threads: "pp128 pp512 tg128".
orch_round() {
	local a b
	a=$("$build/bin/engine_bench" -p 128 -n 128 --no-batch "$1" "$2" | tail -1)
	b=$("$build/bin/engine_bench" -p 512 -n 1 --no-batch "$1" "$2" | tail -1)
	echo "$(sed -E 's/.*prefill +([0-9.]+).*/\1/' <<< "$a")" \
		"$(sed -E 's/.*prefill +([0-9.]+).*/\1/' <<< "$b")" \
		"$(sed -E 's/.*decode +([0-9.]+).*/\1/' <<< "$a")"
}

# One round of llama.cpp: the same three, or "failed".
peer_round() {
	local csv
	if ! csv=$("$lb" -m "$1" -t "$2" -p 128,512 -n 128 -r 1 -o csv 2> "$work/last-peer.err"); then
		echo failed
		return
	fi
	awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) { gsub(/"/, "", $i); col[$i] = i } next }
		{ gsub(/"/, ""); p = $col["n_prompt"]; g = $col["n_gen"]; ts = $col["avg_ts"]
		  if (g == 0 && p == 128) a = ts; else if (g == 0 && p == 512) b = ts; else c = ts }
		END { print a, b, c }' <<< "$csv"
}

# tg128 of both engines on file $1 with $2 threads: "orch llama.cpp" (llama.cpp: 0 if it failed).
tg_pair() {
	local a b
	a=$("$build/bin/engine_bench" -p 16 -n 128 --no-batch "$1" "$2" | tail -1 |
		sed -E 's/.*decode +([0-9.]+).*/\1/')
	b=$("$lb" -m "$1" -t "$2" -p 0 -n 128 -r 1 -o csv 2> "$work/last-peer.err" |
		awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) { gsub(/"/, "", $i); c[$i] = i } next }
			{ gsub(/"/, ""); print $c["avg_ts"] }') || b=0
	echo "$a ${b:-0}"
}

busy() {
	local out
	out=$work/busy-$(date +%Y%m%d-%H%M).txt
	{
		local hogs=()
		trap 'kill "${hogs[@]}" 2> /dev/null || true' EXIT
		trap 'exit 130' INT TERM
		echo "decode idle and with $(nproc) nice-19 spinners; orch $(git -C "$root" describe --always --dirty)" \
			"vs llama.cpp $(git -C "$work/llama.cpp" describe --tags --always)$peer_note; median of $rounds rounds"
		printf '%-15s %3s %10s %10s %7s %10s %10s %7s\n' file thr orch busy ratio llama.cpp busy ratio
		for m in $models; do
			local path
			path=$(model_path "$m")
			for t in $threads; do
				local idle=() loaded=()
				for ((r = 0; r < rounds; r++)); do
					idle+=("$(tg_pair "$path" "$t")")
					for ((i = 0; i < $(nproc); i++)); do
						nice -n 19 sh -c 'while :; do :; done' &
						hogs+=($!)
					done
					loaded+=("$(tg_pair "$path" "$t")")
					kill "${hogs[@]}" 2> /dev/null || true
					wait "${hogs[@]}" 2> /dev/null || true
					hogs=()
				done
				local oi ob li lb2
				oi=$(col_median 1 "${idle[@]}")
				ob=$(col_median 1 "${loaded[@]}")
				li=$(col_median 2 "${idle[@]}")
				lb2=$(col_median 2 "${loaded[@]}")
				printf '%-15s %3s %10.1f %10.1f %7.2f %10.1f %10.1f %7s\n' "$m" "$t" "$oi" "$ob" \
					"$(awk -v a="$ob" -v b="$oi" 'BEGIN { print a / b }')" "$li" "$lb2" \
					"$(awk -v a="$lb2" -v b="$li" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "failed" }')"
			done
		done
	} | tee "$out"
	say "table in $out"
}

# Wait until $1 (a URL) answers 200, at most 120 s; false if process $2 died first.
wait_up() {
	for ((i = 0; i < 240; i++)); do
		curl -sf -o /dev/null "$1" && return 0
		kill -0 "$2" 2> /dev/null || return 1
		sleep 0.5
	done
	return 1
}

# One orch-bench run against port $1 with $2 streams: "tokens/s ttft_p50_ms".
serve_round() {
	local j
	j=$("$build/bin/orch-bench" --openai --ignore-eos --unique --json --model peer --port "$1" \
		--streams "$2" --requests $(($2 * 2)) --max-tokens "$max_tokens" --prompt "$prompt" \
		2> "$work/last-serve.err") || true
	python3 -c 'import json, sys
try:
    r = json.loads(sys.argv[1])
    print(r["tokens_per_s"], r["ttft_ms_p50"]) if r["errors"] == 0 and r["tokens_per_s"] > 0 else print("failed")
except ValueError:
    print("failed")' "$j"
}

serve() {
	local m=${SERVE_MODEL:-qwen05-q4_k_m} path out
	out=$work/serve-$(date +%Y%m%d-%H%M).txt
	local po=${ORCH_PORT:-18480} pl=${LLAMA_PORT:-18481} ctx=512 slots=16
	local max_tokens=${MAX_TOKENS:-64}
	path=$(model_path "$m")
	rm -rf "$work/orchd-run"
	mkdir -p "$work/orchd-run"
"$build/bin/orchd" --model "$path" --name peer --port "$po" --slots "$slots" --context "$ctx" \
		--runtime-dir "$work/orchd-run" --worker-bin "$build/bin/orch-worker" \
		> "$work/orchd-run/orchd.log" 2>&1 &
	servers+=($!)
	"$ls" -m "$path" -a peer -t "$(nproc)" -c $((ctx * slots)) -np "$slots" --host 127.0.0.1 \
		--port "$pl" > "$work/llama-server.log" 2>&1 &
	servers+=($!)
	wait_up "http://127.0.0.1:$po/ready" "${servers[0]}" || { say "orchd did not start: $work/orchd-run/orchd.log"; stop_servers; return 1; }
	wait_up "http://127.0.0.1:$pl/health" "${servers[1]}" || { say "llama-server did not start: $work/llama-server.log"; stop_servers; return 1; }
	{
		echo "orchd $(git -C "$root" describe --always --dirty) vs llama-server" \
			"$(git -C "$work/llama.cpp" describe --tags --always)$peer_note on $m, $slots slots, context $ctx a slot," \
			"$(nproc) threads; /v1/completions streamed, $max_tokens tokens, ignore_eos;" \
			"median of $rounds rounds, interleaved"
		printf '%7s %10s %10s %7s %10s %10s %7s %s\n' streams "orch tok/s" llama.cpp ratio \
			"orch TTFT" llama.cpp ratio "tok/s ratio per round"
		for s in ${STREAMS:-1 4 16}; do
			local o=() p=() ratios=""
			local failed=0
			for ((r = 0; r < rounds; r++)); do
				o+=("$(serve_round "$po" "$s")")
				p+=("$(serve_round "$pl" "$s")")
				if [[ ${o[-1]} = failed || ${p[-1]} = failed ]]; then
					failed=1
					break
				fi
				ratios+=$(awk -v a="${o[-1]%% *}" -v b="${p[-1]%% *}" 'BEGIN { printf "%.2f ", a / b }')
			done
			if ((failed)); then
				printf '%7s failed (orch: %s, llama.cpp: %s): %s\n' "$s" "${o[-1]}" "${p[-1]}" \
					"$(head -c 200 "$work/last-serve.err" | tr '\n' ' ')"
				continue
			fi
			local ot pt of pf
			ot=$(col_median 1 "${o[@]}")
			pt=$(col_median 1 "${p[@]}")
			of=$(col_median 2 "${o[@]}")
			pf=$(col_median 2 "${p[@]}")
			printf '%7s %10.1f %10.1f %7.2f %8.0fms %8.0fms %7.2f %s\n' "$s" "$ot" "$pt" \
				"$(awk -v a="$ot" -v b="$pt" 'BEGIN { print a / b }')" "$of" "$pf" \
				"$(awk -v a="$of" -v b="$pf" 'BEGIN { print a / b }')" "$ratios"
		done
		echo "tok/s ratio: orch / llama.cpp (above 1: orch faster); TTFT ratio: orch / llama.cpp (below 1: orch sooner)"
	} | tee "$out"
	stop_servers # orchd drains and takes its worker with it; llama-server exits on SIGTERM
	say "table in $out"
}

# Peak resident memory (KiB) of a command, measured by the kernel (wait4's
# ru_maxrss): a helper compiled once, "peak_rss OUT CMD ARGS..." writes it to OUT.
rss_helper() {
	local src=$work/peak_rss.c bin=$work/peak_rss
	[[ -x $bin ]] && return
	cat > "$src" <<'C'
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv)
{
	struct rusage ru;
	FILE *f;
	int st;
	pid_t p;

	if (argc < 3)
		return 2;
	if ((p = fork()) == 0) {
		execvp(argv[2], argv + 2);
		_exit(127);
	}
	if (p < 0 || wait4(p, &st, 0, &ru) < 0 || (f = fopen(argv[1], "w")) == NULL)
		return 127;
	fprintf(f, "%ld\n", ru.ru_maxrss);
	fclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
C
	cc -O1 -o "$bin" "$src"
}

# Peak RSS in MiB of the command that follows, or "failed" (its stderr in last-mem.err).
peak() {
	if "$work/peak_rss" "$work/rss.out" "$@" > /dev/null 2> "$work/last-mem.err" < /dev/null; then
		awk '{ printf "%.1f\n", $1 / 1024 }' "$work/rss.out"
	else
		echo failed
	fi
}

mem() {
	local out n=${MEM_TOKENS:-128} ctx=${MEM_CONTEXT:-4096} t
	t=$(nproc)
	out=$work/mem-$(date +%Y%m%d-%H%M).txt
	rss_helper
	{
		echo "peak RSS (MiB) of one generation: orch $(git -C "$root" describe --always --dirty)" \
			"orch-worker run vs llama.cpp $(git -C "$work/llama.cpp" describe --tags --always)$peer_note" \
			"llama-completion; $n tokens, end token banned, context $ctx, greedy, $t threads;" \
			"median of $rounds rounds"
		printf '%-15s %10s %10s %7s %12s %7s\n' file orch llama.cpp ratio "not mapped" ratio
		for m in ${MEM_MODELS:-qwen05-q4_k_m}; do
			local path o=() a=() b=()
			path=$(model_path "$m")
			for ((r = 0; r < rounds; r++)); do
				o+=("$(peak "$build/bin/orch-worker" run --model "$path" --prompt "$prompt" -n "$n" \
					--context "$ctx" --threads "$t" --temperature 0 --ignore-eos)")
				a+=("$(peak "$lc" -m "$path" -p "$prompt" -n "$n" -c "$ctx" -t "$t" --temp 0 \
					--ignore-eos -no-cnv)")
				b+=("$(peak "$lc" -m "$path" -p "$prompt" -n "$n" -c "$ctx" -t "$t" --temp 0 \
					--ignore-eos -no-cnv -lm none)")
			done
			if [[ " ${o[*]} ${a[*]} ${b[*]} " = *" failed "* ]]; then
				printf '%-15s failed (orch: %s; llama.cpp: %s; not mapped: %s): %s\n' "$m" "${o[*]}" \
					"${a[*]}" "${b[*]}" "$(head -c 200 "$work/last-mem.err" | tr '\n' ' ')"
				continue
			fi
			local om am bm
			om=$(printf '%s\n' "${o[@]}" | median)
			am=$(printf '%s\n' "${a[@]}" | median)
			bm=$(printf '%s\n' "${b[@]}" | median)
			printf '%-15s %10.1f %10.1f %7.2f %12.1f %7.2f\n' "$m" "$om" "$am" \
				"$(awk -v a="$om" -v b="$am" 'BEGIN { print a / b }')" "$bm" \
				"$(awk -v a="$om" -v b="$bm" 'BEGIN { print a / b }')"
		done
		echo "ratio: orch / llama.cpp (below 1: orch smaller)"
	} | tee "$out"
	say "table in $out"
}

# The median of field $1 of the remaining arguments (space-separated numbers each).
col_median() {
	local k=$1
	shift
	printf '%s\n' "$@" | cut -d' ' -f"$k" | median
}

median() { sort -g | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

run() {
	local out
	out=$work/peer-$(date +%Y%m%d-%H%M).txt
	{
		echo "orch $(git -C "$root" describe --always --dirty) vs llama.cpp" \
			"$(git -C "$work/llama.cpp" describe --tags --always)$peer_note; $rounds rounds, interleaved;" \
			"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores"
		printf '%-15s %3s %6s %10s %10s %7s %s\n' file thr test orch llama.cpp ratio "ratio per round"
		for m in $models; do
			local path
			path=$(model_path "$m")
			for t in $threads; do
				local o=() p=() ok=1
				for ((r = 0; r < rounds; r++)); do
					o+=("$(orch_round "$path" "$t")")
					p+=("$(peer_round "$path" "$t")")
					[[ ${p[-1]} = failed ]] && ok=0
				done
				for k in 1 2 3; do
					local name
					name=$(cut -d' ' -f"$k" <<< "pp128 pp512 tg128")
					local om pm ratios=""
					om=$(col_median "$k" "${o[@]}")
					if ((!ok)); then
						printf '%-15s %3s %6s %10.1f %10s %7s %s\n' "$m" "$t" "$name" "$om" \
							failed - "$(head -c 200 "$work/last-peer.err" | tr '\n' ' ')"
						continue
					fi
					pm=$(col_median "$k" "${p[@]}")
					for ((r = 0; r < rounds; r++)); do
						ratios+=$(awk -v a="$(cut -d' ' -f"$k" <<< "${o[r]}")" \
							-v b="$(cut -d' ' -f"$k" <<< "${p[r]}")" 'BEGIN { printf "%.2f ", a / b }')
					done
					printf '%-15s %3s %6s %10.1f %10.1f %7.2f %s\n' "$m" "$t" "$name" "$om" "$pm" \
						"$(awk -v a="$om" -v b="$pm" 'BEGIN { print a / b }')" "$ratios"
				done
			done
		done
	} | tee "$out"
	say "table in $out"
}

steps=${*:-all}
for s in $steps; do
	case $s in
	fetch) fetch ;;
	build) build_peer ;;
	models) make_models ;;
	run) run ;;
	busy) busy ;;
	serve) build_server && models=${SERVE_MODEL:-qwen05-q4_k_m} make_models && serve ;;
	mem) build_tool llama-completion "$lc" && models=${MEM_MODELS:-qwen05-q4_k_m} make_models && mem ;;
	all)
		build_peer && build_server && build_tool llama-completion "$lc" && make_models &&
			run && busy && serve && models=${MEM_MODELS:-qwen05-q4_k_m} make_models && mem
		;;
	*) say "usage: peer.sh [fetch|build|models|run|busy|serve|mem|all]..."; exit 2 ;;
	esac
done
