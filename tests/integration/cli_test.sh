#!/usr/bin/env bash
# cli_test.sh - orchctl inspect and orch-synth as real processes: every file
# in the shared test data, JSON output, a synthesized model, bad inputs.
set -uo pipefail

source "$(dirname "$0")/lib.sh"
need_testdata models/stories260K.gguf vocab/ggml-vocab-qwen2.gguf

# Every GGUF in the test data: exit 0 and the expected architecture, except
# the v1 file, which gets exactly one error line naming GGUF v1.
while IFS= read -r f; do
	if [[ $f == *ggufv1* ]]; then
		out=$("$bin/orchctl" inspect "$f" 2>"$tmp/err")
		rc=$?
		if [[ $rc -eq 1 && -z $out && $(wc -l <"$tmp/err") -eq 1 ]] && grep -q 'GGUF v1' "$tmp/err"; then ok; else bad "v1 file: rc=$rc, stderr: $(cat "$tmp/err")"; fi
		continue
	fi
	if "$bin/orchctl" inspect "$f" >"$tmp/out" 2>"$tmp/err" && grep -q '^architecture ' "$tmp/out" &&
		grep -q '^memory ' "$tmp/out" && grep -q '^tokenizer ' "$tmp/out"; then ok; else bad "inspect $f: $(cat "$tmp/err")"; fi
	if "$bin/orchctl" inspect --json "$f" >"$tmp/json" &&
		python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["architecture"] and d["tokenizer"]["vocab_size"] > 0' "$tmp/json"; then ok; else bad "inspect --json $f"; fi
done < <(find "$data" -name '*.gguf' | sort)

# Known facts of stories260K.
"$bin/orchctl" inspect --json "$data/models/stories260K.gguf" >"$tmp/s.json"
if python3 - "$tmp/s.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["architecture"] == "llama" and d["layers"] == 5 and d["kv_heads"] == 4, d
assert d["tensor_count"] == 48 and d["tensor_types"]["F32"]["tensors"] == 48
assert d["tokenizer"]["special"] == {"bos": 1, "eos": 2, "unknown": 0}
assert d["chat_template"] is False
m = d["memory"]
# KV: 2 x 5 layers x 2048 ctx x 1 slot x 4 kv heads x head_dim 8 x 2 bytes
assert m["kv_bytes"] == 2 * 5 * 2048 * 4 * 8 * 2, m
assert m["total_bytes"] == m["weights_bytes"] + m["kv_bytes"] + m["overhead_bytes"]
PY
then ok; else bad "stories260K facts"; fi

# --context and --slots scale the KV term.
"$bin/orchctl" inspect --json --context 512 --slots 4 "$data/models/stories260K.gguf" >"$tmp/s2.json"
if python3 -c 'import json,sys; m=json.load(open(sys.argv[1]))["memory"]; assert m["kv_bytes"]==2*5*512*4*4*8*2, m' "$tmp/s2.json"; then ok; else bad "--context/--slots"; fi

if gpt_oss_tiny; then # the shared data's, or orch-synth's on gpt-oss's vocabulary
# gpt-oss: the sliding-window layer's KV is a ring of 128 + 512 + slots cells, and the text
# output splits the KV cache (1 full and 1 sliding layer, 2 KV heads of 64, F16).
"$bin/orchctl" inspect --json --context 4096 "$oss" >"$tmp/g.json"
if python3 - "$tmp/g.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["sliding_window"] == 128 and d["sliding_window_layers"] == 1, d
m = d["memory"]
cell = 2 * 2 * 64 * 2
assert m["sliding_cells"] == 641, m
assert m["kv_full_bytes"] == 4096 * cell and m["kv_sliding_bytes"] == 641 * cell, m
assert m["kv_bytes"] == m["kv_full_bytes"] + m["kv_sliding_bytes"], m
PY
then ok; else bad "gpt-oss sliding-window KV"; fi
"$bin/orchctl" inspect --context 4096 --slots 3 "$oss" >"$tmp/out"
grep -q '^kv cache        full attention: 1 layer x 4096 cells/slot = 6.00 MiB; sliding window 128: 1 layer x 643 cells/slot = ' "$tmp/out" && ok || bad "kv cache line: $(grep '^kv' "$tmp/out")"
else
	echo "cli_test: no gpt-oss-tiny nor gpt-oss's vocabulary in $data (make deps makes it): its KV checks are left out"
fi
"$bin/orchctl" inspect "$data/models/stories260K.gguf" | grep -q '^kv cache' && bad "kv cache line without sliding layers" || ok
if [[ -n $oss ]]; then
# paged, the window has a pool of its own: ceil((128 + 513 - 2) / 16) + 1 = 41 blocks a slot
"$bin/orchctl" inspect --context 4096 --kv-cache-mib 64 "$oss" >"$tmp/out"
grep -q 'sliding window 128: 1 layer x 656 cells/slot (41 blocks a slot, in a pool of their own) = 328.00 KiB$' "$tmp/out" && ok || bad "paged kv cache line: $(grep '^kv cache' "$tmp/out")"
fi
python3 -c 'import json,sys; m=json.load(open(sys.argv[1]))["memory"]; assert m["kv_sliding_bytes"]==0 and m["kv_full_bytes"]==m["kv_bytes"], m' "$tmp/s.json" && ok || bad "stories260K KV split"

# The KV cost per token and block (5 layers x 4 KV heads x 8, F16); a --kv-cache-mib pool says
# what fits, in blocks, tokens and sequences, and a pool under one sequence is called refused.
grep -q '^kv per token    640 B (a 16-token block 10.00 KiB)$' <("$bin/orchctl" inspect "$data/models/stories260K.gguf") && ok || bad "kv per token line"
"$bin/orchctl" inspect --kv-cache-mib 1 --context 512 "$data/models/stories260K.gguf" >"$tmp/out"
grep -q '^kv pool         1 MiB = 102 blocks of 16 = 1632 tokens (3.2 sequences of 512)$' "$tmp/out" && ok || bad "kv pool line: $(grep '^kv' "$tmp/out")"
grep -q 'less than one sequence of 4096: the worker refuses it' <("$bin/orchctl" inspect --kv-cache-mib 1 --kv-block-tokens 32 --context 4096 "$data/models/stories260K.gguf") && ok || bad "kv pool under one sequence"
"$bin/orchctl" inspect --json --kv-cache-mib 1 --context 512 "$data/models/stories260K.gguf" >"$tmp/p.json"
python3 -c 'import json,sys; m=json.load(open(sys.argv[1]))["memory"]; assert (m["kv_token_bytes"],m["kv_block_bytes"],m["kv_blocks"],m["kv_block_tokens"],m["kv_pool_tokens"],m["kv_full_bytes"])==(640,10240,102,16,1632,1632*640) and abs(m["kv_pool_sequences"]-1632/512)<1e-9, m' "$tmp/p.json" && ok || bad "kv pool JSON"
# --kv-cache-fraction: of this machine's MemTotal less the rest, as a cpu worker here takes it
"$bin/orchctl" inspect --json --kv-cache-fraction 0.001 "$data/models/stories260K.gguf" >"$tmp/f.json"
python3 -c 'import json,sys; m=json.load(open(sys.argv[1]))["memory"]; mt=[int(l.split()[1])*1024 for l in open("/proc/meminfo") if l.startswith("MemTotal:")][0]; rest=m["total_bytes"]-m["kv_full_bytes"]; want=int(0.001*(mt-rest))//10240; assert m["kv_blocks"]==want, (m["kv_blocks"], want)' "$tmp/f.json" && ok || bad "kv pool of a fraction"
for a in "--kv-block-tokens 0" "--kv-block-tokens 257" "--kv-cache-mib abc" "--kv-cache-fraction 2" "--kv-cache-fraction nan"; do
	# shellcheck disable=SC2086
	"$bin/orchctl" inspect $a "$data/models/stories260K.gguf" >/dev/null 2>"$tmp/err"
	[[ $? -eq 2 ]] && grep -qE 'wants (an integer|a number)' "$tmp/err" && ok || bad "inspect $a accepted"
done

# A synthesized model with a real vocabulary and its chat template.
if "$bin/orch-synth" --preset tiny-qwen2 --quant Q4_K_M --vocab "$data/vocab/ggml-vocab-qwen2.gguf" --seed 3 -o "$tmp/m.gguf" &&
	"$bin/orchctl" inspect "$tmp/m.gguf" >"$tmp/out" &&
	grep -q '^chat template   present' "$tmp/out" && grep -q 'vocab 151936' "$tmp/out"; then ok; else bad "synth + inspect"; fi

# Bad inputs: each a one-line error and a non-zero exit, nothing on stdout.
printf 'GGUF\x03\x00\x00\x00' >"$tmp/short.gguf"
head -c 1000 "$data/models/stories260K.gguf" >"$tmp/cut.gguf"
echo 'not a model' >"$tmp/text.gguf"
for f in "$tmp/short.gguf" "$tmp/cut.gguf" "$tmp/text.gguf" "$tmp/missing.gguf"; do
	out=$("$bin/orchctl" inspect "$f" 2>"$tmp/err")
	rc=$?
	if [[ $rc -eq 1 && -z $out && $(wc -l <"$tmp/err") -eq 1 ]] && grep -q "$f" "$tmp/err"; then ok; else bad "bad input $f: rc=$rc $(cat "$tmp/err")"; fi
done
grep -q 'truncated' <("$bin/orchctl" inspect "$tmp/cut.gguf" 2>&1) && ok || bad "cut file message"
"$bin/orchctl" inspect --context 0 "$data/models/stories260K.gguf" >/dev/null 2>&1
[[ $? -eq 2 ]] && ok || bad "--context 0 accepted"
"$bin/orch-synth" --preset tiny-llama --layers 0 -o "$tmp/x.gguf" 2>/dev/null
[[ $? -eq 2 && ! -e $tmp/x.gguf ]] && ok || bad "--layers 0 accepted"
"$bin/orch-synth" --preset tiny-llama -o /nonexistent-dir/x.gguf 2>"$tmp/err"
[[ $? -eq 1 ]] && grep -q '/nonexistent-dir/x.gguf' "$tmp/err" && ok || bad "unwritable output"

finish cli_test
