#!/usr/bin/env bash
# interop_test.sh - files orch writes (orch-synth, every preset and several
# types and mixes) and the shared test models, read by an independent GGUF
# parser and compared with orch's reader. The parser is installed by
# 'make deps' (npm ci here); this test never downloads anything.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${ORCH_BIN:?ORCH_BIN not set}
data=${ORCH_TESTDATA:?ORCH_TESTDATA not set}
if [[ ! -d $data ]]; then # a clone alone: the repository's tests/data (tests/data/SOURCE.md)
	data=$(cd "$here/../data" && pwd)
	for f in vocab/ggml-vocab-qwen2.gguf models/stories260K.gguf models/stories260K-Q4_0.gguf; do
		if [[ ! -e $data/$f ]]; then
			echo "skipped: needs $f of the shared test data: $ORCH_TESTDATA is missing, and tests/data does not have it (make deps fetches the vocabularies)"
			exit 77
		fi
	done
fi
if [[ ! -d $here/node_modules/@huggingface/gguf ]]; then
	echo "interop: @huggingface/gguf is not installed in tests/interop: run 'make deps'" >&2
	exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
files=()
for p in tiny-llama tiny-qwen2 tiny-phi3; do
	for q in F32 BF16 Q8_0 Q4_K_M Q2_K Q5_1; do
		"$bin/orch-synth" --preset "$p" --quant "$q" --seed 5 -o "$tmp/$p-$q.gguf"
		files+=("$tmp/$p-$q.gguf")
	done
done
"$bin/orch-synth" --preset qwen2.5-0.5b --quant Q4_K_M --layers 2 \
	--vocab "$data/vocab/ggml-vocab-qwen2.gguf" -o "$tmp/qwen.gguf"
"$bin/orch-synth" --preset phi3-mini-4k --quant Q4_0 --layers 1 -o "$tmp/phi3.gguf"
"$bin/orch-synth" --preset llama-3.2-1b --quant Q6_K --layers 1 -o "$tmp/llama.gguf"
files+=("$tmp/qwen.gguf" "$tmp/phi3.gguf" "$tmp/llama.gguf")
files+=("$data/models/stories260K.gguf" "$data/models/stories260K-Q4_0.gguf")
node "$here/gguf_interop.mjs" "$bin/orchctl" "${files[@]}"
