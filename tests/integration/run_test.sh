#!/usr/bin/env bash
# run_test.sh - orch-worker run as a real process: llama.cpp's golden tokens
# and logits through the CLI (jsonl, --dump-logits), stop strings, seeds,
# --chat on a synthesized qwen2 with the real Qwen2 vocabulary, and every bad
# input: bad options (exit 2), missing files, unknown devices, a prompt
# longer than the context, an unsupported architecture (exit 1), NaN weights.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
need_testdata models/stories260K.gguf models/golden-stories260K.json models/golden-stories260K-Q8_0.json models/golden-stories260K-Q4_0.json models/stories260K-Q8_0.gguf models/stories260K-Q4_0.gguf vocab/ggml-vocab-gpt-2.gguf vocab/ggml-vocab-qwen2.gguf
W=$bin/orch-worker
M=$data/models/stories260K.gguf

# Golden tokens and logits, each file.
for q in "" -Q8_0 -Q4_0; do
	"$W" run --model "$data/models/stories260K$q.gguf" --prompt "Once upon a time" -n 64 \
		--temperature 0 --format jsonl --dump-logits 2 "$tmp/lg$q.json" >"$tmp/out$q.jsonl" 2>"$tmp/err$q" ||
		bad "run stories260K$q exited $?"
	python3 - "$data/models/golden-stories260K$q.json" "$tmp/out$q.jsonl" "$tmp/lg$q.json" <<'PY' && ok || bad "golden stories260K$q"
import json, sys
g = json.load(open(sys.argv[1]))["cases"][0]
assert g["prompt"] == "Once upon a time", g["prompt"]
lines = [json.loads(l) for l in open(sys.argv[2])]
ids = [l["id"] for l in lines[:-1]]
assert ids == g["generated_tokens"], (ids[:8], g["generated_tokens"][:8])
assert [l["i"] for l in lines[:-1]] == list(range(64))
end = lines[-1]
assert end["prompt_tokens"] == 5 and end["tokens_out"] == 64, end
assert end["finish_reason"] == "length", end
assert end["prefill_ms"] >= 0 and end["decode_ms"] >= 0 and isinstance(end["seed"], int)
lg = json.load(open(sys.argv[3]))
assert len(lg) == 2 and all(len(v) == 512 for v in lg), [len(v) for v in lg]
for step in range(2):
    want = g["steps"][step]["logits"]
    scale = max(abs(w) for w in want)
    worst = max(abs(a - b) for a, b in zip(lg[step], want)) / scale
    assert worst < 1e-3, (step, worst)
PY
	grep -q "loading 100%" "$tmp/err$q" && ok || bad "no load progress on stderr"
done

# Text output equals the jsonl pieces joined, then a newline.
"$W" run --model "$M" --prompt "Once upon a time" -n 64 --temperature 0 >"$tmp/text" 2>/dev/null
python3 -c "import json,sys; print(''.join(json.loads(l)['t'] for l in open(sys.argv[1]).readlines()[:-1]))" \
	"$tmp/out.jsonl" >"$tmp/joined"
cmp -s "$tmp/text" "$tmp/joined" && ok || bad "text and jsonl differ"

# A stop string (split across tokens), not emitted.
"$W" run --model "$M" --prompt "Once upon a time" -n 64 --temperature 0 --stop "girl na" --format jsonl \
	>"$tmp/stop.jsonl" 2>/dev/null
python3 - "$tmp/stop.jsonl" <<'PY' && ok || bad "stop string"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
text = "".join(l["t"] for l in lines[:-1])
assert lines[-1]["finish_reason"] == "stop", lines[-1]
assert "girl na" not in text and text.endswith("little "), repr(text)
PY

# Seeds: given, the same draws; not given, one is generated and reported.
a=$("$W" run --model "$M" --prompt "Once" -n 24 --seed 42 --temperature 1 --format jsonl 2>/dev/null)
b=$("$W" run --model "$M" --prompt "Once" -n 24 --seed 42 --temperature 1 --format jsonl 2>/dev/null)
[[ -n $a && $(head -n -1 <<<"$a") == "$(head -n -1 <<<"$b")" ]] && ok || bad "same seed, different output"
[[ $(tail -n1 <<<"$a") == *'"seed":42}' ]] && ok || bad "seed not reported: $(tail -n1 <<<"$a")"
c=$("$W" run --model "$M" --prompt "Once" -n 4 --format jsonl 2>/dev/null | tail -n1)
[[ $c =~ \"seed\":[0-9]+\} ]] && ok || bad "no generated seed: $c"

# Sampling options are accepted together.
"$W" run --model "$M" --prompt "Once" -n 4 --top-k 5 --top-p 0.9 --min-p 0.1 --repeat-penalty 1.1 \
	--threads 2 --context 64 --kv-f32 >/dev/null 2>&1 && ok || bad "sampling options"

# --ignore-eos: a seed whose generation ends at the end token (a random 512-token model at
# temperature 2 finds one within a few seeds) makes all -n tokens with the end tokens banned.
"$bin/orch-synth" --preset tiny-llama --seed 1 -o "$tmp/tl.gguf" >/dev/null 2>&1 || bad "synth tiny-llama"
eos_seed=""
for s in $(seq 1 40); do
	e=$("$W" run --model "$tmp/tl.gguf" --prompt "Once" -n 512 --temperature 2 --seed "$s" \
		--format jsonl 2>/dev/null | tail -n1)
	[[ $e == *'"finish_reason":"eos"'* ]] && { eos_seed=$s; break; }
done
[[ -n $eos_seed ]] && ok || bad "no seed in 1..40 ends at the end token"
e=$("$W" run --model "$tmp/tl.gguf" --prompt "Once" -n 512 --temperature 2 --seed "${eos_seed:-1}" \
	--ignore-eos --format jsonl 2>/dev/null | tail -n1)
[[ $e == *'"tokens_out":512,"finish_reason":"length"'* ]] && ok || bad "--ignore-eos: $e"

# --chat with a template (synthesized qwen2 with the real Qwen2 vocabulary).
"$bin/orch-synth" --preset tiny-qwen2 --vocab "$data/vocab/ggml-vocab-qwen2.gguf" --seed 5 \
	-o "$tmp/q.gguf" >/dev/null 2>&1 || bad "synth tiny-qwen2"
"$W" run --model "$tmp/q.gguf" --chat --prompt "Hi" -n 3 --temperature 0 --format jsonl \
	>"$tmp/chat.jsonl" 2>/dev/null && ok || bad "--chat run"
python3 -c "import json,sys; l=[json.loads(x) for x in open(sys.argv[1])]; assert l[-1]['prompt_tokens'] > 5, l[-1]" \
	"$tmp/chat.jsonl" && ok || bad "--chat prompt not templated"

if gpt_oss_tiny; then # the shared data's, or orch-synth's on gpt-oss's vocabulary
# A hand-written harmony turn: its special-token text becomes gpt-oss's special tokens (6 ids:
# <|start|> user <|message|> Hi <|end|> ...), unless --no-parse-special keeps it text.
G="$oss"
h='<|start|>user<|message|>Hi<|end|><|start|>assistant'
p1=$("$W" run --model "$G" --prompt "$h" -n 1 --temperature 0 --format jsonl 2>/dev/null | tail -n1)
p2=$("$W" run --model "$G" --prompt "$h" -n 1 --temperature 0 --format jsonl --no-parse-special 2>/dev/null | tail -n1)
[[ $p1 == *'"prompt_tokens":7,'* ]] && ok || bad "harmony text as special tokens: $p1"
[[ $p2 =~ \"prompt_tokens\":([0-9]+), && ${BASH_REMATCH[1]} -gt 15 ]] && ok || bad "--no-parse-special: $p2"
# A prompt that ends inside a harmony message: jsonl says each token's message and channel.
p3=$("$W" run --model "$G" --prompt "$h<|channel|>final<|message|>" -n 2 --temperature 0 --format jsonl 2>/dev/null | head -n1)
[[ $p3 == *'"message":0,"channel":"final"}' ]] && ok || bad "harmony channel in jsonl: $p3"

else
	echo "run_test: no gpt-oss-tiny nor gpt-oss's vocabulary in $data (make deps makes it): the harmony checks are left out"
fi

# A prompt file: the same tokens as --prompt.
printf 'Once upon a time' >"$tmp/prompt"
d=$("$W" run --model "$M" --prompt-file "$tmp/prompt" -n 8 --temperature 0 --format jsonl 2>/dev/null | head -n8 | cut -d, -f2)
e=$(head -n8 "$tmp/out.jsonl" | cut -d, -f2)
[[ -n $d && $d == "$e" ]] && ok || bad "--prompt-file"

# Bad inputs: a clear message and the right exit status.
expect() { # expect STATUS NEEDLE ARGS...
	local want=$1 needle=$2
	shift 2
	"$W" run "$@" >"$tmp/o" 2>"$tmp/e"
	local got=$?
	[[ $got == "$want" ]] && grep -q -- "$needle" "$tmp/e" && ok ||
		bad "run $*: exit $got (want $want), stderr: $(head -c 300 "$tmp/e")"
}
expect 2 "usage" --model "$M"
expect 2 "usage"
expect 2 "temperature" --model "$M" --prompt x --temperature abc
expect 2 "temperature" --model "$M" --prompt x --temperature 3
expect 2 "top-p" --model "$M" --prompt x --top-p 2
expect 2 "format" --model "$M" --prompt x --format xml
expect 2 "unrecognized" --model "$M" --prompt x --bogus
expect 1 "No such file" --model "$tmp/none.gguf" --prompt x
expect 1 "CONTEXT_LENGTH_EXCEEDED" --model "$M" --prompt "$(printf 'a %.0s' {1..100})" --context 32
# Without a GPU (or without the CUDA module) cuda:0 is a clear error, never a CPU fallback;
# the simulated build (ORCH_CUDA=SIM) has one simulated device, cuda:0, and no cuda:1.
if [[ ${ORCH_CUDA_SIM_BUILD:-0} == 1 ]]; then
	expect 1 "device cuda:1: " --model "$M" --device cuda:1 --prompt x
elif ! nvidia-smi -L >/dev/null 2>&1; then
	expect 1 "device cuda:0: " --model "$M" --device cuda:0 --prompt x
fi
expect 1 "cuda:x" --model "$M" --device cuda:x --prompt x
expect 1 "device" --model "$M" --device tpu --prompt x
expect 1 "architecture 'gpt2' is not supported" --model "$data/vocab/ggml-vocab-gpt-2.gguf" --prompt x
head -c 1000 "$M" >"$tmp/cut.gguf"
expect 1 "cut.gguf" --model "$tmp/cut.gguf" --prompt x

# A model whose weights are NaN: no token can be sampled; an error that says so, exit 1,
# not token 0 over and over (greedy and at random)
python3 - "$M" "$tmp/nan.gguf" <<'PY'
import struct, sys
d = bytearray(open(sys.argv[1], "rb").read())
for off in range(len(d) - 200000, len(d) - 4, 4):  # the last tensors (F32): NaN
    d[off:off + 4] = struct.pack("<f", float("nan"))
open(sys.argv[2], "wb").write(d)
PY
for t in 0 0.7; do
	"$W" run --model "$tmp/nan.gguf" --prompt 'Once upon a time' -n 4 --temperature $t --format jsonl >"$tmp/nan.out" 2>"$tmp/nan.err"
	rc=$?
	[[ $rc -eq 1 && ! -s $tmp/nan.out ]] && grep -q 'every logit was NaN or -inf' "$tmp/nan.err" && ok ||
		bad "NaN weights at temperature $t: rc $rc, $(head -c 300 "$tmp/nan.out") $(grep -v loading "$tmp/nan.err")"
done

finish run_test
