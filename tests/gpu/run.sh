#!/usr/bin/env bash
# run.sh - build and run every GPU test and benchmark in one go, on a machine
# with an NVIDIA GPU (the device tool runs it from the repository root).
# Logs go to $OUT (or build-gpu/out); a short table is printed last.
# Each test also runs under compute-sanitizer memcheck and racecheck when the
# toolkit has it. On the device tool: run scripts/gpu-deps.sh here once, then
#   run(command="tests/gpu/run.sh", carry=[".gpudeps"])
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${GPU_BUILD:-$root/build-gpu}
out=${OUT:-$build/out}
mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH

nvidia-smi >"$out/nvidia-smi.txt" 2>&1 || echo "nvidia-smi failed (see $out/nvidia-smi.txt)"

# Libraries the GPU machine may lack, carried as Debian packages
# (scripts/gpu-deps.sh fetches them here into .gpudeps/; the device tool
# carries that folder): unpacked into a private prefix, found through
# pkg-config's sysroot and CMake's prefix path, loaded through
# LD_LIBRARY_PATH. Used only when the machine's own pkg-config cannot find
# PCRE2 and cJSON (or with ORCH_GPU_DEPS=carried, to try it anywhere).
cmake_extra=()
have_deps() { command -v pkg-config >/dev/null && pkg-config --exists libpcre2-8 libcjson; }
if { [[ ${ORCH_GPU_DEPS:-} == carried ]] || ! have_deps; } && compgen -G "$root/.gpudeps/*.deb" >/dev/null; then
	deps=$build/deps
	rm -rf "$deps"
	mkdir -p "$deps"
	for f in "$root"/.gpudeps/*.deb; do
		if command -v dpkg >/dev/null; then
			dpkg -x "$f" "$deps"
		else
			(cd "$deps" && ar p "$f" "$(ar t "$f" | grep '^data.tar')" | tar -xJ)
		fi
	done
	lib=$deps/usr/lib/x86_64-linux-gnu
	export PATH=$deps/usr/bin:$PATH
	export PKG_CONFIG_LIBDIR=$lib/pkgconfig:$deps/usr/share/pkgconfig
	export PKG_CONFIG_SYSROOT_DIR=$deps
	export LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	cmake_extra=(-DCMAKE_PREFIX_PATH="$deps/usr" -DPKG_CONFIG_EXECUTABLE="$deps/usr/bin/pkg-config")
	grep -qF "$deps" "$build/CMakeCache.txt" 2>/dev/null || rm -f "$build/CMakeCache.txt"
	echo "using the carried packages of .gpudeps (unpacked in $deps)"
fi
if ! cmake -S "$root" -B "$build" -DORCH_WERROR=ON -DORCH_CUDA=ON "${cmake_extra[@]}" >"$out/configure.log" 2>&1; then
	tail -n 30 "$out/configure.log"
	echo "configure failed"
	exit 1
fi
if ! cmake --build "$build" -j"$(nproc)" >"$out/build.log" 2>&1; then
	grep -E 'error|warning' "$out/build.log" | head -n 40
	echo "build failed"
	exit 1
fi

sanitizer=$(command -v compute-sanitizer || true)
tests=$(ctest --test-dir "$build" -N -L gpu | awk '/Test +#/ {print $3}')
rows=()
failed=0
for t in $tests; do
	start=$(date +%s.%N)
	"$build/bin/$t" >"$out/$t.log" 2>&1
	rc=$?
	secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
	case $rc in 0) res=pass ;; 77) res=skip ;; *) res="FAIL($rc)"; failed=$((failed + 1)) ;; esac
	mem=-
	race=-
	if [[ -n $sanitizer && $rc -eq 0 ]]; then
		"$sanitizer" --tool memcheck --error-exitcode 99 "$build/bin/$t" >"$out/$t.memcheck.log" 2>&1 && mem=clean || { mem=ERRORS; failed=$((failed + 1)); }
		"$sanitizer" --tool racecheck --error-exitcode 99 "$build/bin/$t" >"$out/$t.racecheck.log" 2>&1 && race=clean || { race=ERRORS; failed=$((failed + 1)); }
	fi
	rows+=("$(printf '%-24s %-9s %8.2fs  memcheck %-7s racecheck %-7s' "$t" "$res" "$secs" "$mem" "$race")")
done

# The benchmarks (bench/RESULTS.md): synthesized qwen2.5-0.5b and
# phi3-mini-4k Q4_K_M, written here by orch-synth.
bench_rows=()
if [[ -x $build/bin/orch-gpu-bench && -x $build/bin/orch-synth ]]; then
	mdir=$out/models
	mkdir -p "$mdir"
	for p in qwen2.5-0.5b phi3-mini-4k; do
		"$build/bin/orch-synth" --preset "$p" --quant Q4_K_M --seed 7 -o "$mdir/$p-Q4_K_M.gguf" \
			>>"$out/synth.log" 2>&1 || echo "orch-synth $p failed (see $out/synth.log)"
	done
	if "$build/bin/orch-gpu-bench" "$mdir"/qwen2.5-0.5b-Q4_K_M.gguf "$mdir"/phi3-mini-4k-Q4_K_M.gguf \
		>"$out/gpu-bench.txt" 2>&1; then
		mapfile -t bench_rows <"$out/gpu-bench.txt"
	else
		failed=$((failed + 1))
		bench_rows=("orch-gpu-bench FAILED: $(tail -n 3 "$out/gpu-bench.txt")")
	fi
	rm -rf "$mdir"
fi

# orchd's GPU inventory through the real NVML (when orchd was built here:
# it needs NNG, protobuf-c, libevent, libinih and libsystemd).
if [[ -x $build/bin/orchd ]]; then
	inv=$out/orchd-inventory
	mkdir -p "$inv"
	printf '[server]\nlisten = 127.0.0.1:%d\nadmin_socket = %s/s.sock\nruntime_dir = %s\n' \
		$((40000 + $$ % 10000)) "$inv" "$inv" >"$inv/orchd.conf"
	"$build/bin/orchd" --config "$inv/orchd.conf" >"$inv/orchd.log" 2>&1 &
	opid=$!
	sleep 1
	res="FAIL"
	if curl -sf --unix-socket "$inv/s.sock" http://orchd/admin/status >"$inv/status.json" &&
		python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["devices"]; sys.exit(0 if any(x["id"]=="cuda:0" and x["memory_total_bytes"]>0 and x["memory_free_bytes"]>0 for x in d) else 1)' "$inv/status.json"; then
		res=pass
	else
		failed=$((failed + 1))
	fi
	kill "$opid" 2>/dev/null
	wait "$opid" 2>/dev/null
	rows+=("$(printf '%-24s %-9s (NVML inventory: %s)' orchd_nvml "$res" "$(grep -o 'event=device id=cuda:0[^<]*' "$inv/orchd.log" | head -n 1)")")
else
	rows+=("$(printf '%-24s %-9s (orchd not built here: NNG/protobuf-c/libevent/inih/libsystemd missing)' orchd_nvml skip)")
fi

echo
echo "== GPU tests ($(head -n 1 "$out/$(echo $tests | cut -d' ' -f1).log" 2>/dev/null))"
printf '%s\n' "${rows[@]}"
if [[ ${#bench_rows[@]} -gt 0 ]]; then
	echo "== benchmarks (orch-gpu-bench)"
	printf '%s\n' "${bench_rows[@]}"
fi
echo "gpu: $((${#rows[@]} - failed)) passed, $failed failed"
[[ $failed -eq 0 ]]
