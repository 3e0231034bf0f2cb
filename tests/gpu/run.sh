#!/usr/bin/env bash
# run.sh - the GPU tests and benchmarks, in phases that each finish well
# inside the device tool's 10 minutes a command.
#
#   tests/gpu/run.sh pack [oss-f32]   here: the test data a GPU run needs into
#                                     .gpudata/ (ignored), and the Debian
#                                     packages a GPU machine lacks into
#                                     .gpudeps/; prints the carry list
#   tests/gpu/run.sh PHASE...         there, in order, any of:
#     build     configure and build (sm_90 only, ninja if present)
#     test      every GPU test (kernels vs CPU twins, goldens, GPU vs CPU, the
#               paged KV cache against slots)
#     sanitize  compute-sanitizer memcheck + racecheck on the reduced kernel test
#     debug     where a forward step fails: orch-worker run on stories260K with
#               synchronous launches, then under memcheck
#     bench     orch-gpu-bench on synthesized qwen2.5-0.5b / phi3-mini Q4_K_M
#               (ORCH_GPU_BENCH_FLOAT=1: again with ORCH_CUDA_INT_DOTS=0)
#     orchd     orchd with a cuda:0 model: NVML inventory, /health, a stream,
#               the worker killed and restarted; then what leaves the device
#               sampler (orchd_gpu_api.py: logprobs against the goldens,
#               logit_bias, penalties, grammars, gpt-oss json_schema and a
#               forced call)
#     profile   Nsight Compute's kernel times for decode (batch 1 and 8) and a
#               512-token prefill of qwen2.5-0.5b Q4_K_M, summed per kernel
#     initcheck compute-sanitizer initcheck on the gpt-oss goldens
#
# On the device tool, e.g.:
#   run(command="tests/gpu/run.sh build test bench", carry=[".gpudeps", ".gpudata"])
# Each phase writes $OUT/PHASE.log and appends its lines to $OUT/summary.txt,
# which is printed last. Models are written to /tmp. Exit status: the number
# of failed phases (0 when all passed).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${GPU_BUILD:-$root/build-gpu}
out=${OUT:-$build/out}
export PATH=/usr/local/cuda/bin:$PATH

pack() {
	local src=${ORCH_TESTDATA:-$root/../shared/testdata} dst=$root/.gpudata/testdata
	[[ -d $src ]] || { echo "pack: no test data at $src" >&2; return 1; }
	rm -rf "$root/.gpudata"
	mkdir -p "$dst/models"
	cp "$src"/models/stories260K*.gguf "$src"/models/golden-stories260K*.json "$dst/models/"
	local oss=mxfp4
	[[ ${1:-} == oss-f32 ]] && oss=f32
	# the tiny gpt-oss model is 52 MB, one fits the 64 MiB a call carries, compressed
	xz -T0 -6 -c "$src/models/gpt-oss-tiny-$oss.gguf" >"$dst/models/gpt-oss-tiny-$oss.gguf.xz"
	xz -T0 -9 -c "$src/models/golden-gpt-oss-tiny-$oss.json" >"$dst/models/golden-gpt-oss-tiny-$oss.json.xz"
	[[ -d $root/.gpudeps ]] || "$root/scripts/gpu-deps.sh" || return 1
	echo "pack: $(du -sh "$root/.gpudata" | cut -f1) of test data, $(du -sh "$root/.gpudeps" | cut -f1) of packages"
	echo 'carry: [".gpudeps", ".gpudata"]'
}

# Libraries the GPU machine may lack, carried as Debian packages: unpacked into
# a private prefix, found through pkg-config's sysroot and CMake's prefix path,
# loaded through LD_LIBRARY_PATH.
cmake_extra=()
deps_env() {
	local deps=/tmp/orch-gpudeps lib
	compgen -G "$root/.gpudeps/*.deb" >/dev/null || return 0
	if [[ ! -d $deps ]]; then
		mkdir -p "$deps"
		for f in "$root"/.gpudeps/*.deb; do dpkg -x "$f" "$deps"; done
	fi
	lib=$deps/usr/lib/x86_64-linux-gnu
	export PATH=$deps/usr/bin:$PATH
	export PKG_CONFIG_LIBDIR=$lib/pkgconfig:$deps/usr/share/pkgconfig
	export PKG_CONFIG_SYSROOT_DIR=$deps
	export LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	cmake_extra=(-DCMAKE_PREFIX_PATH="$deps/usr" -DPKG_CONFIG_EXECUTABLE="$deps/usr/bin/pkg-config")
}

# The test data: ../shared/testdata where it is beside the clone, else the
# carried subset uncompressed into /tmp (ORCH_GPU_SUBSET: a model it lacks is
# reported as not carried rather than failed).
data_env() {
	local d=/tmp/orch-gpudata
	export ORCH_BIN=$build/bin TMPDIR=/tmp
	if [[ -z ${ORCH_TESTDATA:-} && -d $root/../shared/testdata ]]; then
		export ORCH_TESTDATA=$root/../shared/testdata
		return
	fi
	if [[ ! -d $d && -d $root/.gpudata/testdata ]]; then
		cp -r "$root/.gpudata/testdata" "$d"
		for f in "$d"/models/*.xz; do [[ -e $f ]] && xz -d -T0 "$f"; done
	fi
	export ORCH_TESTDATA=${ORCH_TESTDATA:-$d} ORCH_GPU_SUBSET=1
}

sum() { echo "$*" | tee -a "$out/summary.txt"; }

phase_build() {
	local gen=()
	command -v ninja >/dev/null && [[ ! -f $build/Makefile ]] && gen=(-G Ninja)
	cmake -S "$root" -B "$build" "${gen[@]}" -DORCH_WERROR=ON -DORCH_CUDA=ON \
		-DORCH_CUDA_ARCHS=90-real -DCMAKE_BUILD_TYPE=Release "${cmake_extra[@]}" || return 1
	cmake --build "$build" -j"$(nproc)" --target device_test kernels_test kernels_moe_test \
		kernels_qdot_test gpu_model_test gpu_paged_test orch-gpu-bench orch-synth orch-worker orchd orchctl \
		orch-cuda || return 1
	sum "  $(nvcc --version | tail -n 1 | cut -d, -f1);" \
		"$(nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader)"
}

# One GPU test: its output into the phase log, a line into the summary.
run_one() {
	local t=$1 start rc secs res
	shift
	start=$(date +%s.%N)
	echo "=== $t $*"
	timeout "${ORCH_GPU_TEST_SECS:-300}" "$build/bin/$t" "$@" 2>&1
	rc=$?
	secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	case $rc in 0) res=pass ;; 77) res=skip ;; *) res="FAIL($rc)" ;; esac
	sum "$(printf '  %-18s %-9s %6ss' "$t" "$res" "$secs")"
	[[ $rc == 0 || $rc == 77 ]]
}

phase_test() {
	local bad=0
	for t in device_test kernels_test kernels_moe_test kernels_qdot_test gpu_model_test \
		gpu_paged_test; do
		run_one "$t" || bad=1
	done
	return $bad
}

# Where a forward step fails: the worker's CLI on stories260K with the launches
# synchronous, then under memcheck (with and without graphs).
phase_debug() {
	local m=$root/models/stories260K.gguf args=(--device cuda:0 --prompt "Once upon a time" -n 8)
	echo "=== CUDA_LAUNCH_BLOCKING=1 orch-worker run"
	CUDA_LAUNCH_BLOCKING=1 timeout 60 "$build/bin/orch-worker" run --model "$m" "${args[@]}" 2>&1
	echo "=== memcheck orch-worker run --no-graphs"
	timeout 120 compute-sanitizer --tool memcheck --print-limit 5 "$build/bin/orch-worker" run \
		--model "$m" "${args[@]}" --no-graphs 2>&1 | head -n 120
	echo "=== memcheck orch-worker run (graphs)"
	timeout 120 compute-sanitizer --tool memcheck --print-limit 5 "$build/bin/orch-worker" run \
		--model "$m" "${args[@]}" 2>&1 | head -n 120
	return 0
}

phase_sanitize() {
	local bad=0 tool
	for tool in memcheck racecheck; do
		echo "=== compute-sanitizer --tool $tool kernels_test (ORCH_KT_QUICK=1)"
		ORCH_KT_QUICK=1 timeout 150 compute-sanitizer --tool "$tool" --error-exitcode 99 \
			"$build/bin/kernels_test" 2>&1
		local rc=$?
		sum "  $tool kernels_test quick: $([[ $rc == 0 ]] && echo clean || echo "ERRORS($rc)")"
		[[ $rc == 0 ]] || bad=1
	done
	return $bad
}

# The benchmark models, synthesized once into /tmp/orch-bench-models.
bench_models() {
	local m=/tmp/orch-bench-models p
	mkdir -p "$m"
	for p in qwen2.5-0.5b phi3-mini-4k; do
		[[ -f $m/$p.gguf ]] || "$build/bin/orch-synth" --preset "$p" --quant Q4_K_M --seed 7 \
			-o "$m/$p.gguf" || return 1
	done
}

phase_bench() {
	local m=/tmp/orch-bench-models
	bench_models || return 1
	# beside each measured step, what the cost model predicted (docs/gpu-cost.md)
	timeout 300 "$build/bin/orch-gpu-bench" --predicted "$root/bench/gpu_cost_predicted.tsv" \
		"$m/qwen2.5-0.5b.gguf" "$m/phi3-mini-4k.gguf" | tee "$out/bench.txt"
	local rc=${PIPESTATUS[0]}
	sed 's/^/  /' "$out/bench.txt" >>"$out/summary.txt"
	# ORCH_GPU_BENCH_FLOAT=1: the same again with cuk_mmv's float products, for a before/after
	if [[ ${ORCH_GPU_BENCH_FLOAT:-0} == 1 ]]; then
		sum "  -- ORCH_CUDA_INT_DOTS=0 (float mat-vecs):"
		ORCH_CUDA_INT_DOTS=0 timeout 300 "$build/bin/orch-gpu-bench" "$m/qwen2.5-0.5b.gguf" \
			"$m/phi3-mini-4k.gguf" | tee "$out/bench-float.txt"
		[[ ${PIPESTATUS[0]} == 0 ]] || rc=1
		sed 's/^/  /' "$out/bench-float.txt" >>"$out/summary.txt"
	fi
	return "$rc"
}

# Kernel times per step: the bench's --profile mode under ncu, one CSV row a
# launch, summed per kernel name by tests/gpu/ncu_sum.py.
phase_profile() {
	local m=/tmp/orch-bench-models/qwen2.5-0.5b.gguf ncu
	bench_models || return 1
	ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -n 1)
	[[ -n $ncu ]] || { sum "  no ncu on this machine"; return 1; }
	"$build/bin/orch-gpu-bench" --predicted "$root/bench/gpu_cost_predicted.tsv" --profile "$m" |
		tee -a "$out/summary.txt"
	timeout 400 "$ncu" --profile-from-start off --clock-control none --metrics gpu__time_duration.sum \
		--csv --page raw "$build/bin/orch-gpu-bench" --profile "$m" >"$out/ncu.csv" || return 1
	python3 "$root/tests/gpu/ncu_sum.py" "$out/ncu.csv" | tee -a "$out/summary.txt"
}

# compute-sanitizer TOOL (initcheck by default) on the gpt-oss goldens, each
# step's sequences traced (ORCH_CUDA_TRACE) so a report can be placed.
phase_initcheck() {
	local rc tool=${ORCH_GPU_SANITIZER:-initcheck}
	ORCH_CUDA_TRACE=1 T_ONLY=gpt_oss_golden timeout 170 compute-sanitizer --tool "$tool" \
		--print-limit 3 --error-exitcode 99 "$build/bin/gpu_model_test" 2>&1 | head -n 3000
	rc=${PIPESTATUS[0]}
	sum "  $tool gpu_model_test gpt_oss_golden: $([[ $rc == 0 ]] && echo clean || echo "ERRORS($rc)")"
	return "$rc"
}

phase_orchd() {
	local d=/tmp/orchd-gpu port=$((40000 + $$ % 10000)) rc=1 pid
	rm -rf "$d"
	mkdir -p "$d"
	cat >"$d/orchd.conf" <<-EOF
		[server]
		listen = 127.0.0.1:$port
		runtime_dir = $d
		state_dir = $d
		[model "stories"]
		path = $root/models/stories260K.gguf
		device = cuda:0
	EOF
	local oss=${ORCH_TESTDATA:-}/models/gpt-oss-tiny-mxfp4.gguf
	[[ -f $oss ]] && printf '[model "oss"]\npath = %s\ndevice = cuda:0\ncontext = 2048\n' "$oss" >>"$d/orchd.conf"
	"$build/bin/orchd" --config "$d/orchd.conf" >"$d/orchd.log" 2>&1 &
	pid=$!
	timeout 150 python3 "$root/tests/gpu/orchd_gpu.py" "$port" "$d" &&
		timeout 240 python3 "$root/tests/gpu/orchd_gpu_api.py" "$port" "$d" && rc=0
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	cat "$d/orchd.log"
	sum "  orchd on cuda:0: $([[ $rc == 0 ]] && echo pass || echo FAIL)"
	return $rc
}

if [[ ${1:-} == pack ]]; then
	shift
	pack "$@"
	exit
fi
[[ $# -gt 0 ]] || set -- build test
mkdir -p "$out"
: >"$out/summary.txt"
deps_env
data_env
failed=0
for ph in "$@"; do
	if ! declare -F "phase_$ph" >/dev/null; then
		echo "run.sh: unknown phase '$ph' (build test sanitize bench orchd debug profile initcheck; pack here)" >&2
		exit 2
	fi
	sum "== $ph"
	start=$(date +%s)
	"phase_$ph" >"$out/$ph.log" 2>&1
	rc=$?
	[[ $rc == 0 ]] || { failed=$((failed + 1)); tail -n 25 "$out/$ph.log" | sed 's/^/  | /' >>"$out/summary.txt"; }
	sum "== $ph: $([[ $rc == 0 ]] && echo ok || echo FAILED) in $(($(date +%s) - start))s"
	[[ $ph == build && $rc != 0 ]] && break
done
echo
cat "$out/summary.txt"
exit $failed
