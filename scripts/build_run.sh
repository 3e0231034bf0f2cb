#!/usr/bin/env bash
# build_run.sh BUILD - what 'make run' builds: orchd, orch-worker, orchctl, and the
# CUDA module when nvidia-smi lists a GPU and CUDA was found (the tests and the
# rest: 'make test', 'make build'). Quiet: a line before and one after; CMake's
# and the compiler's output go to BUILD/build-run.log, whose tail is printed when
# the build fails. WERROR, JOBS and CMAKE_ARGS as the Makefile's.
set -uo pipefail
build=${1:-build}
log=$build/build-run.log
mkdir -p "$build"
start=$(date +%s)
echo "make run: building orchd, orch-worker and orchctl in $build (the log: $log)"
# shellcheck disable=SC2086 # CMAKE_ARGS is a list of flags
if ! cmake -S . -B "$build" -DORCH_WERROR="${WERROR:-ON}" ${CMAKE_ARGS:-} >"$log" 2>&1; then
	tail -n 40 "$log" >&2
	echo "make run: configuring failed; the whole log is $log" >&2
	exit 1
fi
targets=(orchd orch-worker orchctl)
if nvidia-smi -L 2>/dev/null | grep -q '^GPU 0' &&
	cmake --build "$build" --target help 2>/dev/null | grep -q ' orch-cuda$'; then
	targets+=(orch-cuda)
	echo "make run: and the CUDA module (a GPU is here)"
fi
if ! cmake --build "$build" -j"${JOBS:-$(nproc)}" --target "${targets[@]}" >>"$log" 2>&1; then
	tail -n 40 "$log" >&2
	echo "make run: the build failed; the whole log is $log" >&2
	exit 1
fi
echo "make run: built in $(($(date +%s) - start)) s"
