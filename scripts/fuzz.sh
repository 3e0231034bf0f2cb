#!/usr/bin/env bash
# fuzz.sh BUILD SECONDS - run every libFuzzer target for SECONDS each, from a
# copy of its stored corpus. New crashes land in tests/fuzz/crashes/; copy
# each into tests/fuzz/corpus/<target>/ once fixed so replay keeps it fixed.
set -euo pipefail
build=$1
seconds=$2
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$root/tests/fuzz/crashes"
for target in gguf; do
	work=$(mktemp -d)
	cp "$root/tests/fuzz/corpus/$target/"* "$work/"
	echo "fuzz: $target for ${seconds}s"
	"$build/bin/${target}_fuzz" -max_total_time="$seconds" -max_len=65536 -timeout=10 \
		-rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$root/tests/fuzz/crashes/${target}-" "$work" 2>&1 | tail -n 12
	rm -rf "$work"
done
