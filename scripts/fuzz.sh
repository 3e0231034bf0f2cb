#!/usr/bin/env bash
# fuzz.sh BUILD SECONDS - run every libFuzzer target (gguf, tok, jinja, envelope, http, router) for SECONDS each, from a
# copy of its stored corpus. New crashes land in tests/fuzz/crashes/; copy
# each into tests/fuzz/corpus/<target>/ once fixed so replay keeps it fixed.
set -euo pipefail
build=$1
seconds=$2
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$root/tests/fuzz/crashes"
export ORCH_TESTDATA=${ORCH_TESTDATA:-$root/../shared/testdata}
targets=(gguf jinja)
# the tokenizer fuzzer loads real vocabularies from the shared test data
if [[ -d $ORCH_TESTDATA ]]; then
	targets+=(tok)
else
	echo "fuzz: tok skipped: needs the shared test data, and $ORCH_TESTDATA is missing"
fi
[[ -x $build/bin/envelope_fuzz ]] && targets+=(envelope)
[[ -x $build/bin/http_fuzz ]] && targets+=(http)
[[ -x $build/bin/router_fuzz ]] && targets+=(router)
for target in "${targets[@]}"; do
	work=$(mktemp -d)
	cp "$root/tests/fuzz/corpus/$target/"* "$work/"
	# The real chat templates seed the template fuzzer (used by path, not copied in).
	[[ $target == jinja && -d $ORCH_TESTDATA/templates ]] && cp "$ORCH_TESTDATA"/templates/*.jinja "$work/"
	echo "fuzz: $target for ${seconds}s"
	"$build/bin/${target}_fuzz" -max_total_time="$seconds" -max_len=65536 -timeout=10 \
		-rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$root/tests/fuzz/crashes/${target}-" "$work" 2>&1 | tail -n 12
	rm -rf "$work"
done
