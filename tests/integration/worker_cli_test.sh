#!/usr/bin/env bash
# worker_cli_test.sh - orch-worker tokenize / detokenize / chat-template as
# real processes: ids, round trips, every chat-template golden through the
# CLI (and the recorded raise, exit 3), the hf-json flag, bad inputs.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
need_testdata models/stories260K.gguf models/stories260K-ggufv1-f32.gguf templates/cases.json vocab/ggml-vocab-gpt-2.gguf vocab/ggml-vocab-qwen2.gguf
W=$bin/orch-worker

out=$("$W" tokenize --model "$data/models/stories260K.gguf" --add-special --parse-special --text "Once upon a time")
[[ $out == "1 403 407 261 378" ]] && ok || bad "stories ids: $out"
out=$("$W" detokenize --model "$data/models/stories260K.gguf" 1 403 407 261 378)
[[ $out == "Once upon a time" ]] && ok || bad "stories detokenize: '$out'"
printf 'Grüße, 世界 👋\n  two spaces' >"$tmp/text"
ids=$("$W" tokenize --model "$data/vocab/ggml-vocab-qwen2.gguf" --file "$tmp/text")
"$W" detokenize --model "$data/vocab/ggml-vocab-qwen2.gguf" $ids >"$tmp/back"
cmp -s "$tmp/text" "$tmp/back" && ok || bad "qwen2 file round trip"
"$W" tokenize --model "$data/vocab/ggml-vocab-gpt-2.gguf" --text "Hello world" --pieces >"$tmp/p"
[[ $(sed -n 2p "$tmp/p") == '["Hello", " world"]' ]] && ok || bad "pieces: $(cat "$tmp/p")"

# hf-json: tokenizer.json beside the model file.
mkdir -p "$tmp/m"
ln -s "$data/vocab/ggml-vocab-qwen2.gguf" "$tmp/m/model.gguf"
"$bin/orch-tokjson" "$data/vocab/ggml-vocab-qwen2.gguf" "$tmp/m/tokenizer.json"
a=$("$W" tokenize --model "$tmp/m/model.gguf" --file "$tmp/text")
b=$("$W" tokenize --model "$tmp/m/model.gguf" --tokenizer hf-json --file "$tmp/text")
[[ -n $a && $a == "$b" ]] && ok || bad "hf-json ids differ"

# Every golden, through the CLI.
python3 - "$data/templates" "$tmp" <<'PY'
import json, os, sys
d, tmp = sys.argv[1], sys.argv[2]
cases = {c["case"]: c["messages"] for c in json.load(open(f"{d}/cases.json"))["cases"]}
k = 0
for f in sorted(os.listdir(d)):
    if not f.endswith(".golden.json"):
        continue
    name = f[: -len(".golden.json")]
    if not os.path.exists(f"{d}/{name}.jinja"):  # in the shared test data only (tests/data/SOURCE.md)
        print(f"worker_cli_test: no {name}.jinja in {d}: its goldens are left out")
        continue
    for g in json.load(open(f"{d}/{f}")):
        k += 1
        json.dump({"messages": cases[g["case"]], "bos_token": g["bos_token"], "eos_token": g["eos_token"]},
                  open(f"{tmp}/msgs{k}.json", "w"))
        with open(f"{tmp}/job{k}", "w") as j:
            j.write(f"{name}\n{'gen' if g['add_generation_prompt'] else 'nogen'}\n")
        open(f"{tmp}/want{k}", "w", encoding="utf-8", newline="").write(g.get("rendered", "RAISE:" + g.get("error", "")))
PY
for job in "$tmp"/job*; do
	k=${job##*/job}
	name=$(sed -n 1p "$job")
	flag=$([[ $(sed -n 2p "$job") == nogen ]] && echo --no-generation-prompt)
	"$W" chat-template --template "$data/templates/$name.jinja" --messages "$tmp/msgs$k.json" $flag --now 2024-07-26T00:00:00 >"$tmp/got$k" 2>"$tmp/err$k"
	rc=$?
	if [[ $(head -c 6 "$tmp/want$k") == RAISE: ]]; then
		[[ $rc -eq 3 && "$(cat "$tmp/err$k")" == "$(tail -c +7 "$tmp/want$k")" ]] && ok || bad "$name/$k: raise rc=$rc $(cat "$tmp/err$k")"
	else
		[[ $rc -eq 0 ]] && cmp -s "$tmp/got$k" "$tmp/want$k" && ok || bad "$name/$k: rc=$rc differs"
	fi
done

# The template embedded in a GGUF, tokens from its metadata.
echo '{"messages": [{"role": "user", "content": "Hi"}]}' >"$tmp/hi.json"
out=$("$W" chat-template --model "$data/vocab/ggml-vocab-qwen2.gguf" --messages "$tmp/hi.json")
[[ $out == $'<|im_start|>system\nYou are a helpful assistant<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant' ]] && ok || bad "embedded qwen2 template: $out"

# Bad inputs: clear error, right exit code.
echo '{"msgs": []}' >"$tmp/bad.json"
"$W" chat-template --model "$data/models/stories260K.gguf" --messages "$tmp/bad.json" 2>/dev/null; [[ $? -eq 1 ]] && ok || bad "no messages accepted"
"$W" chat-template --template x --messages "$tmp/hi.json" --now yesterday 2>/dev/null; [[ $? -eq 2 ]] && ok || bad "bad --now accepted"
"$W" detokenize --model "$data/models/stories260K.gguf" 1 99999 2>/dev/null; [[ $? -eq 2 ]] && ok || bad "bad id accepted"
"$W" tokenize --model "$data/models/stories260K-ggufv1-f32.gguf" --text x 2>"$tmp/e"; [[ $? -eq 1 ]] && grep -q 'GGUF v1' "$tmp/e" && ok || bad "v1 model"
"$W" tokenize --model "$data/models/stories260K.gguf" --tokenizer hf-json --text x 2>"$tmp/e"; [[ $? -eq 1 ]] && grep -q 'tokenizer.json' "$tmp/e" && ok || bad "missing tokenizer.json"
printf '{%% if x %%}' >"$tmp/broken.jinja"
"$W" chat-template --template "$tmp/broken.jinja" --messages "$tmp/hi.json" 2>"$tmp/e"; [[ $? -eq 1 ]] && grep -q 'broken.jinja:1:' "$tmp/e" && ok || bad "syntax error location: $(cat "$tmp/e")"

# hf-json in a serving model: run (ids, text, chat) and chat-template with a
# tiny-qwen2 whose directory holds tokenizer.json and tokenizer_config.json.
"$bin/orch-synth" --preset tiny-qwen2 --vocab "$data/vocab/ggml-vocab-qwen2.gguf" --seed 5 -o "$tmp/m/tq.gguf" >/dev/null 2>&1 || bad "synth tiny-qwen2"
runq() { "$W" run --model "$tmp/m/tq.gguf" --prompt 'Grüße, 世界 👋' -n 12 --temperature 0 --format jsonl "$@" 2>/dev/null; }
a=$(runq | sed 's/"prefill_ms.*//'); b=$(runq --tokenizer hf-json | sed 's/"prefill_ms.*//')
[[ -n $a && $a == "$b" ]] && ok || bad "run: hf-json tokens differ from gguf"
printf '{"eos_token": "<|endoftext|>", "chat_template": "{%% for m in messages %%}<{{ m.role }}>{{ m.content }}{%% endfor %%}<assistant>"}' >"$tmp/m/tokenizer_config.json"
out=$("$W" chat-template --model "$tmp/m/tq.gguf" --tokenizer hf-json --messages "$tmp/hi.json")
[[ $out == '<user>Hi<assistant>' ]] && ok || bad "tokenizer_config.json template: $out"
out=$("$W" chat-template --model "$tmp/m/tq.gguf" --messages "$tmp/hi.json")
[[ $out == *'<|im_start|>assistant' ]] && ok || bad "gguf template without --tokenizer: $out"
out=$("$W" run --model "$tmp/m/tq.gguf" --tokenizer hf-json --chat --prompt Hi -n 1 --format jsonl 2>/dev/null | tail -1)
[[ $out == '{"prompt_tokens":7,'* ]] && ok || bad "run --chat through tokenizer_config.json: $out"
printf '{"chat_template": "{%% if %%}"}' >"$tmp/m/tokenizer_config.json"
"$W" run --model "$tmp/m/tq.gguf" --tokenizer hf-json --chat --prompt Hi -n 1 2>"$tmp/e" >/dev/null
[[ $? -eq 1 ]] && grep -q 'tokenizer_config.json:1:' "$tmp/e" && ok || bad "broken config template: $(cat "$tmp/e")"
runq --tokenizer hf-json >/dev/null && ok || bad "a broken template does not stop raw prompts"
printf '{"chat_template": ' >"$tmp/m/tokenizer_config.json"
runq --tokenizer hf-json; [[ $? -eq 1 ]] && ok || bad "malformed tokenizer_config.json accepted"
"$W" run --model "$data/models/stories260K.gguf" --tokenizer hf-json --prompt x 2>"$tmp/e"; [[ $? -eq 1 ]] && grep -q 'tokenizer.json' "$tmp/e" && ok || bad "run: missing tokenizer.json"
runq --tokenizer spm; [[ $? -eq 2 ]] && ok || bad "run --tokenizer spm accepted"
out=$("$W" run --help) && [[ $out == 'usage: orch-worker run --model FILE'* ]] && ok || bad "run --help: $out"

finish worker_cli_test
