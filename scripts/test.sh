#!/usr/bin/env bash
# The whole suite, as 'make test' runs it: format check, normal build and
# every test, the simulated CUDA device's build and every GPU test on it
# (cuda/sim/README.md, the mutants included), the ASan+UBSan build of the
# unit and integration tests and of the simulator's own test, a short
# libFuzzer run, and a Release (gcc -O3) and a clang build. Ends
# with one summary line "N passed, N failed, N skipped". Without
# ../shared/testdata beside the clone it says so first and the tests that
# need it skip.
set -uo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
passed=0
failed=0
skipped=0
data=${ORCH_TESTDATA:-$PWD/../shared/testdata}
if [[ ! -d $data ]]; then
	if [[ ${ORCH_REQUIRE_TESTDATA:-0} == 1 ]]; then
		echo "test: $data is missing and ORCH_REQUIRE_TESTDATA=1 (CI): 0 passed, 1 failed"
		exit 1
	fi
	echo "test: $data is missing: the tests that need the shared test data will be skipped (the count is in the last line)"
fi
steps_failed=()

# ctest_sum DIR ARGS...: run ctest, add its counts to the totals.
ctest_sum() {
	local dir=$1 log
	shift
	log=$(mktemp)
	(cd "$dir" && ctest --output-on-failure -j"$jobs" "$@") | tee "$log"
	local line
	line=$(grep -E 'tests passed, [0-9]+ tests failed out of [0-9]+' "$log" | tail -1)
	if [[ -z $line ]]; then
		rm -f "$log"
		steps_failed+=("ctest in $dir")
		return
	fi
	local total fails skips
	total=$(sed -E 's/.*out of ([0-9]+).*/\1/' <<<"$line")
	fails=$(sed -E 's/.*tests passed, ([0-9]+) tests failed.*/\1/' <<<"$line")
	skips=$(grep -cE 'Test +#[0-9]+: .*Skipped' "$log")
	passed=$((passed + total - fails - skips))
	failed=$((failed + fails))
	skipped=$((skipped + skips))
	rm -f "$log"
}

step() {
	local name=$1
	shift
	echo "== $name"
	if ! "$@"; then
		steps_failed+=("$name")
	fi
}

# The normal and the simulated CUDA build compile the same C sources with the same
# flags: with ccache (a cache in build-ccache/, paths relative to the clone) the
# second takes the first's objects.
launch=()
if command -v ccache >/dev/null; then
	export CCACHE_DIR=$PWD/build-ccache CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1 CCACHE_MAXSIZE=2G
	launch=(CMAKE_ARGS="-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache")
fi

step "format check" make --no-print-directory format-check
step "build" make --no-print-directory build "${launch[@]}"
[[ -d build ]] && ctest_sum build
# Every GPU test on the simulated device: the real cuda/ sources on the CPU, with
# its bounds, race and collective checks (the GPU tests above skip without a GPU).
step "sim build" make --no-print-directory build-sim "${launch[@]}"
[[ -d build-sim ]] && ctest_sum build-sim -L gpu
step "asan build" make --no-print-directory build-asan
[[ -d build-asan ]] && ctest_sum build-asan -L 'unit|integration' -LE slow
# the simulator under ASan+UBSan: a kernel's out-of-bounds access or index overflow
step "sim asan build" make --no-print-directory build-sim-asan
[[ -d build-sim-asan ]] && ctest_sum build-sim-asan -R '^(sim_test|cost_test)$'
step "fuzz smoke" make --no-print-directory fuzz-smoke
# A packager's builds must not regress: gcc -O3 Release and clang, warnings as errors.
step "release build" make --no-print-directory build-release
step "clang build" make --no-print-directory build-clang

if [[ ${#steps_failed[@]} -gt 0 ]]; then
	echo "failed steps: ${steps_failed[*]}"
	failed=$((failed + ${#steps_failed[@]}))
fi
echo "test: $passed passed, $failed failed, $skipped skipped"
[[ $failed -eq 0 ]]
