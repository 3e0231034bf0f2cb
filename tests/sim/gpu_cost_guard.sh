#!/usr/bin/env bash
# gpu_cost_guard.sh TOOL - the GPU cost guard (docs/gpu-cost.md "The guard"):
# TOOL (orch-gpu-cost, or a mutant's copy of it) counts a 2-layer
# qwen2.5-0.5b at batch 1 and 64 and one gpt-oss-20b block (MXFP4 experts) at
# batch 1 (at batch 8 the experts read depend on routing, which a numeric change
# may move), context 1,024, on the simulated device, and compares
# launches + graph nodes a token (exact: any change fails) and DRAM bytes a token
# (more than 5 % up fails, and so does more than 5 % down: lower the baseline)
# with bench/gpu_cost_baseline.tsv.
# A commit that raises a baseline number must say why in its message, on a
# line starting "gpu-cost:" (checked when the source tree is a git clone, on the
# newest commit that touched the baseline only).
#
# Models come from orch-synth (ORCH_BIN), made once into ORCH_GPU_COST_MODELS
# (default: gpu-cost-models beside ORCH_BIN).
set -uo pipefail
export LC_ALL=C
tool=$1
src=$(cd "$(dirname "$0")/../.." && pwd)
base=$src/bench/gpu_cost_baseline.tsv
bin=${ORCH_BIN:?set ORCH_BIN to the bin directory of the build}
models=${ORCH_GPU_COST_MODELS:-$bin/../gpu-cost-models}
mkdir -p "$models" || exit 1

# synth NAME PRESET LAYERS: one model, made once (beside, then renamed: tests run at once)
synth() {
	local out=$models/$1.gguf
	[[ -s $out ]] && return 0
	"$bin/orch-synth" --preset "$2" --quant Q4_K_M --layers "$3" --seed 7 -o "$out.$$" >/dev/null &&
		mv -f "$out.$$" "$out"
}
synth qwen2.5-0.5b-2l qwen2.5-0.5b 2 || exit 1
synth gpt-oss-20b-1l gpt-oss-20b 1 || exit 1

rc=0
"$tool" --set guard --skip "decode b8 ctx1024" --check "$base" \
	"qwen2.5-0.5b-2l=2:$models/qwen2.5-0.5b-2l.gguf" || rc=1
"$tool" --set guard --skip "decode b8 ctx1024,decode b64 ctx1024" --check "$base" \
	"gpt-oss-20b-1l=1:$models/gpt-oss-20b-1l.gguf" || rc=1

# A raised baseline needs its reason in the commit that raised it.
rows() { # REV: "model/step<TAB>nodes<TAB>bytes", sorted
	git -C "$src" show "$1:./bench/gpu_cost_baseline.tsv" | awk -F'\t' 'substr($0, 1, 1) != "#" {print $1 "/" $2 "\t" $3 "\t" $4}' | sort
}
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
	c=$(git -C "$src" log -1 --format=%H -- bench/gpu_cost_baseline.tsv)
	if [[ -n $c ]] && git -C "$src" cat-file -e "$c^:./bench/gpu_cost_baseline.tsv" 2>/dev/null; then
		raised=$(join -t "$(printf '\t')" -j1 <(rows "$c^") <(rows "$c") |
			awk -F'\t' '$4 > $2 * 1.0005 || $5 > $3 * 1.0005 {print $1}')
		if [[ -n $raised ]] && ! git -C "$src" log -1 --format=%B "$c" | grep -q '^gpu-cost:'; then
			echo "GUARD FAIL: commit ${c:0:12} raised the baseline of" $raised \
				"without a line starting gpu-cost: in its message saying why"
			rc=1
		fi
	fi
fi
exit $rc
