#!/usr/bin/env bash
# mutant_run.sh EXPECT BINARY [ARGS...] - run a mutant's test binary (see
# cmake/OrchMutant.cmake): pass when it fails and its output matches the
# extended regex EXPECT; a mutant that passes, or fails for another reason,
# fails this test. Exit 77 (the test skipped: no ../shared/testdata) is passed on.
set -uo pipefail
expect=$1
shift
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$@" >"$log" 2>&1
rc=$?
if [[ $rc -eq 77 ]]; then
	tail -1 "$log"
	exit 77
fi
if [[ $rc -eq 0 ]]; then
	tail -20 "$log"
	echo "mutant_run: the mutant SURVIVED: $1 passed"
	exit 1
fi
if ! grep -qE -- "$expect" "$log"; then
	tail -40 "$log"
	echo "mutant_run: $1 failed (exit $rc), but not with /$expect/"
	exit 1
fi
grep -E -m3 -- "$expect" "$log" | cut -c1-300
echo "mutant_run: killed (exit $rc, /$expect/ found)"
