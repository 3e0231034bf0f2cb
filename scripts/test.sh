#!/usr/bin/env bash
# The whole suite, as 'make test' runs it: format check, normal build and
# every test, the ASan+UBSan build of the unit and integration tests, a
# short libFuzzer run, and a Release (gcc -O3) and a clang build. Ends with
# one summary line "N passed, N failed, N skipped". Without ../shared/testdata
# beside the clone it says so first and the tests that need it skip.
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

step "format check" make --no-print-directory format-check
step "build" make --no-print-directory build
[[ -d build ]] && ctest_sum build
step "asan build" bash -c 'cmake -S . -B build-asan -DORCH_WERROR=ON -DCMAKE_BUILD_TYPE=Debug -DORCH_SANITIZE=ON -DORCH_CUDA=OFF >/dev/null && cmake --build build-asan -j'"$jobs"
[[ -d build-asan ]] && ctest_sum build-asan -L 'unit|integration' -LE slow
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
