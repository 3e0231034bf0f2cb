# lib.sh - sourced by the integration scripts: the binaries and test data
# from ctest's environment, a scratch directory removed on exit, and the
# ok/bad counters that `finish` reports as "NAME: N passed, N failed".
bin=${ORCH_BIN:?ORCH_BIN not set}
data=${ORCH_TESTDATA:?ORCH_TESTDATA not set}
# need_testdata - skip the test (ctest's 77) where ../shared/testdata is missing
need_testdata() {
	if [[ ! -d $data ]]; then
		echo "skipped: needs the shared test data, and $data is missing"
		exit 77
	fi
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }

# finish NAME - print the counts; the status is 0 only when nothing failed.
finish() {
	echo "$1: $pass passed, $fail failed"
	[[ $fail -eq 0 ]]
}
