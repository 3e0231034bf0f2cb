#!/usr/bin/env bash
# testdata_fetch.sh [DEST] - the test data a clone can fetch (tests/data/SOURCE.md):
# llama.cpp's vocabulary files with their tokenizer test vectors, and chat templates,
# from the llama.cpp source in the npm package node-llama-cpp (the peer harness's),
# and gpt-oss's vocabulary made from the o200k_base ranks of the npm package
# js-tiktoken (installed with the interop tests) by scripts/vocab_gpt_oss.py,
# into DEST (default tests/data), each checked against tests/data/fetched.sha256.
# Nothing to do when every file is there and right, or when ../shared/testdata is
# beside the clone (the tests read that instead). 'make deps' (test) runs it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dest=${1:-$root/tests/data}
sums=$root/tests/data/fetched.sha256
version=${PEER_VERSION:-3.22.1}
say() { printf 'deps: %s\n' "$*"; }

if [[ -d ${ORCH_TESTDATA:-$root/../shared/testdata} && -z ${1:-} ]]; then
	exit 0 # the shared test data is here: the tests read it
fi
oss=vocab/ggml-vocab-gpt-oss.gguf
ranks=$root/tests/interop/node_modules/js-tiktoken/dist/ranks/o200k_base.js
right() { (cd "$dest" && grep " $1\$" "$sums" | sha256sum --quiet --check >/dev/null 2>&1); }
llama_right() { (cd "$dest" && grep -v " $oss\$" "$sums" | sha256sum --quiet --check >/dev/null 2>&1); }

# gpt-oss's vocabulary: the same bytes llama.cpp's converter wrote for the shared data
make_oss() {
	right "$oss" && return 0
	if [[ ! -f $ranks || ! -f $dest/templates/openai-gpt-oss-120b.jinja ]]; then
		say "no o200k_base ranks (js-tiktoken in tests/interop) or gpt-oss template: the tests that need gpt-oss's vocabulary will skip"
		return 0
	fi
	mkdir -p "$dest/vocab"
	if ! python3 "$root/scripts/vocab_gpt_oss.py" "$ranks" "$dest/templates/openai-gpt-oss-120b.jinja" "$dest/$oss" ||
		! right "$oss"; then
		say "gpt-oss's vocabulary made from $ranks differs from tests/data/fetched.sha256: removed (the tests that need it will skip)"
		rm -f "$dest/$oss"
		return 0
	fi
	say "made $dest/$oss from the o200k_base ranks"
}

if llama_right; then
	make_oss
	exit 0
fi
command -v npm >/dev/null || { say "no npm: the tests that need llama.cpp's vocabularies will skip"; exit 0; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
say "fetching llama.cpp's vocabularies and chat templates (node-llama-cpp@$version, ~35 MB) for the tests"
if ! (cd "$work" && npm pack --silent "node-llama-cpp@$version" >/dev/null 2>&1); then
	say "npm pack node-llama-cpp@$version failed: the tests that need them will skip"
	exit 0
fi
tar -xzf "$work/node-llama-cpp-$version.tgz" -C "$work" package/llama/gitRelease.bundle
git clone -q --no-checkout "$work/package/llama/gitRelease.bundle" "$work/llama.cpp" 2>/dev/null
mkdir -p "$dest/vocab" "$dest/templates"
while read -r _ rel; do
	case $rel in
	"$oss") continue ;; # made from the ranks, below
	vocab/*) src=models/${rel#vocab/} ;;
	templates/ggml-vocab-*) continue ;; # from the vocabulary files, below
	templates/*) src=models/$rel ;;
	esac
	git -C "$work/llama.cpp" show "HEAD:$src" >"$dest/$rel"
done <"$sums"
# tokenizer.chat_template of two vocabulary files, as the shared data has them
for v in phi-3 qwen2; do
	python3 - "$dest/vocab/ggml-vocab-$v.gguf" >"$dest/templates/ggml-vocab-$v.chat_template.jinja" <<'PY'
import struct, sys
f = open(sys.argv[1], "rb")
def rd(fmt):
    return struct.unpack("<" + fmt, f.read(struct.calcsize("<" + fmt)))[0]
def string():
    return f.read(rd("Q")).decode("utf-8")
SIZE = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
def skip(t):
    if t == 8:
        f.seek(rd("Q"), 1)
    elif t == 9:
        et, n = rd("I"), rd("Q")
        if et in SIZE:
            f.seek(struct.calcsize("<" + SIZE[et]) * n, 1)
        else:
            for _ in range(n):
                skip(et)
    else:
        f.seek(struct.calcsize("<" + SIZE[t]), 1)
assert f.read(4) == b"GGUF" and rd("I") >= 2
rd("Q")
for _ in range(rd("Q")):
    key, t = string(), rd("I")
    if key == "tokenizer.chat_template" and t == 8:
        sys.stdout.write(string())
        sys.exit(0)
    skip(t)
sys.exit("no tokenizer.chat_template")
PY
done
if ! llama_right; then
	say "the fetched test data differs from tests/data/fetched.sha256: removed (the tests that need it will skip)"
	while read -r _ rel; do [[ $rel == "$oss" ]] || rm -f "$dest/$rel"; done <"$sums"
	exit 0
fi
say "test data fetched into $dest ($(grep -vc " $oss\$" "$sums") files)"
make_oss
