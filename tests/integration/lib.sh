# lib.sh - sourced by the integration scripts: the binaries and test data
# from ctest's environment, a scratch directory removed on exit, and the
# ok/bad counters that `finish` reports as "NAME: N passed, N failed".
bin=${ORCH_BIN:?ORCH_BIN not set}
data=${ORCH_TESTDATA:?ORCH_TESTDATA not set}
# need_testdata FILE... - the shared test data ($data), or, where a clone has nothing
# beside it, the repository's tests/data when it has every FILE (what it carries and
# make deps fetches, tests/data/SOURCE.md; $data then points there); else skip the
# test (ctest's 77) naming what it lacks.
need_testdata() {
	[[ -d $data ]] && return 0
	local local_data missing=()
	local_data=$(cd "$(dirname "${BASH_SOURCE[0]}")/../data" && pwd)
	for f in "$@"; do
		[[ -e $local_data/$f ]] || missing+=("$f")
	done
	if (($# == 0 || ${#missing[@]})); then
		echo "skipped: needs ${missing[*]:-files} of the shared test data: $data is missing, and tests/data (tests/data/SOURCE.md) does not have it"
		exit 77
	fi
	data=$local_data
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# gpt_oss_tiny - $oss, a tiny gpt-oss model for checks that do not depend on its
# weights (tokens, harmony, KV sizes): the shared data's gpt-oss-tiny-mxfp4.gguf; in
# a clone alone, orch-synth's tiny-gpt-oss-narrow (the same shape) on gpt-oss's real
# vocabulary, which make deps makes in tests/data. Status 1, $oss empty, when neither.
gpt_oss_tiny() {
	oss=$data/models/gpt-oss-tiny-mxfp4.gguf
	[[ -e $oss ]] && return 0
	oss=$tmp/gpt-oss-tiny.gguf
	[[ -e $data/vocab/ggml-vocab-gpt-oss.gguf ]] &&
		"$bin/orch-synth" --preset tiny-gpt-oss-narrow --vocab "$data/vocab/ggml-vocab-gpt-oss.gguf" \
			--seed 5 -o "$oss" >/dev/null 2>&1 && return 0
	oss=
	return 1
}
pass=0
fail=0

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }

# finish NAME - print the counts; the status is 0 only when nothing failed.
finish() {
	echo "$1: $pass passed, $fail failed"
	[[ $fail -eq 0 ]]
}
