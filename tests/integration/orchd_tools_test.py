#!/usr/bin/env python3
"""orchd_tools_test - tool calling on models whose chat templates teach a call
syntax (issue 20): random-weight models written by orch-synth with Qwen2's
real vocabulary, served with tokenizer = hf-json and, in
tokenizer_config.json, the real chat template of Qwen2.5 (hermes:
<tool_call>...</tool_call>) or Llama 3.2 (llama3_json: {"name",
"parameters"}). What such a model says on its own is set by the worker's
test hook ORCH_FAULT_SCRIPT (worker/serve/serve_script.c); a forced call is
the grammar's doing.

- /v1/models says each model's tool_call_syntax (hermes, llama3_json, none);
- tool_choice auto: calls read back from scripted answers, not streamed and
  streamed: text before a call is content, several calls, a call written
  with its keys in another order, text that only looks like a call stays
  content, an answer without calls is untouched, finish_reason tool_calls;
  parallel_tool_calls false: the first call only;
  tool_choice none: the same text is all content;
- a forced named function: one call, finish_reason stop (OpenAI's);
- tests/interop/tools_client.mjs: the official openai npm client with
  tool_choice required and a named function, every call's arguments
  validated by ajv, streamed, and the tool's result sent back; the same on
  gpt-oss tiny (harmony: a message to functions.NAME after an optional
  analysis), when the shared test data has it;
- tests/interop/langchain_client.mjs: LangChain JS (ChatOpenAI with a
  baseURL) withStructuredOutput(zod) by json_schema and by a forced call,
  bindTools with tool_choice "any", invoked and streamed, a ToolMessage
  turn; every result checked by its zod schema; on Qwen2.5's template and
  on gpt-oss tiny (harmony);
- what is refused, with a 400 naming the parameter: a named function not in
  tools, required without tools, a forced call beside a grammar, a JSON
  response_format or stop, a schema keyword that cannot be enforced (naming
  the tool), a bad tool_choice, a forced call on a model whose template
  teaches no syntax (stories260K)."""
import json
import os
import subprocess
import sys
import tempfile

BIN = os.environ["ORCH_BIN"]
HERE = os.path.dirname(os.path.abspath(__file__))
INTEROP = os.path.join(HERE, "..", "interop")
sys.path.insert(0, HERE)
import orchd_lib  # noqa: E402
from orchd_lib import check, get, post, sse_events  # noqa: E402
DATA = orchd_lib.testdata("vocab/ggml-vocab-qwen2.gguf", "templates/Qwen-Qwen2.5-7B-Instruct.jinja",
                          "templates/meta-llama-Llama-3.2-3B-Instruct.jinja")
GENS = int(os.environ.get("ORCH_TOOLS_GENS", "8"))
VOCAB = os.path.join(DATA, "vocab", "ggml-vocab-qwen2.gguf")
OSS = orchd_lib.gpt_oss_tiny() or "gpt-oss-tiny-mxfp4.gguf (or gpt-oss's vocabulary)"
STORIES = os.path.join(HERE, "..", "..", "models", "stories260K.gguf")
TEMPLATES = {"q": "Qwen-Qwen2.5-7B-Instruct.jinja", "l": "meta-llama-Llama-3.2-3B-Instruct.jinja"}

CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}\n</tool_call>'
SCRIPTS = {  # the first trigger the rendered prompt contains wins
    "Q-CALLS": "Let me look.\n" + CALL + '\n<tool_call>\n{"arguments": {}, "name": "now"}\n</tool_call><|endoftext|>',
    "Q-FAKE": "Use <tool_call>tags</tool_call> like this.<|endoftext|>",
    "Q-TEXT": "Plain <b>answer</b>  <|endoftext|>",
    "L-CALL": '{"name": "get_weather", "parameters": {"city": "Oslo", "unit": "fahrenheit"}}<|endoftext|>',
    "L-TEXT": 'Here is {"name": "x"} as text.<|endoftext|>',
}
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                                                     "unit": {"enum": ["celsius", "fahrenheit"]}},
                   "required": ["city"]}}},
    {"type": "function", "function": {"name": "now", "description": "The time"}}]


def models(tmp):
    """Two hf-json model directories (tokenizer.json, tokenizer_config.json with a real template)."""
    conf = ""
    for name, template in TEMPLATES.items():
        d = os.path.join(tmp, name)
        os.mkdir(d)
        subprocess.run([BIN + "/orch-synth", "--preset", "tiny-qwen2", "--quant", "Q8_0", "--seed", "7",
                        "--vocab", VOCAB, "-o", os.path.join(d, "m.gguf")], check=True, capture_output=True)
        subprocess.run([BIN + "/orch-tokjson", VOCAB, os.path.join(d, "tokenizer.json")], check=True)
        with open(os.path.join(DATA, "templates", template)) as f:
            cfg = {"eos_token": "<|endoftext|>", "chat_template": f.read()}
        with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
            json.dump(cfg, f)
        conf += ('[model "%s"]\npath = %s\ndevice = cpu\nslots = 4\nthreads = 1\ncontext = 2048\n'
                 'tokenizer = hf-json\n' % (name, os.path.join(d, "m.gguf")))
    conf += '[model "s"]\npath = %s\ndevice = cpu\nslots = 1\nthreads = 1\ncontext = 256\n' % STORIES
    if os.path.isfile(OSS):
        conf += '[model "oss"]\npath = %s\ndevice = cpu\nslots = 1\nthreads = 1\ncontext = 1024\n' % OSS
    return conf


def chat(model, text, **kw):
    body = dict({"model": model, "messages": [{"role": "user", "content": text}], "tools": TOOLS,
                 "max_tokens": 64, "temperature": 0}, **kw)
    st, _, t = post("/v1/chat/completions", body)
    if kw.get("stream"):
        return st, [json.loads(e["data"]) for e in sse_events(t) if e["data"] != "[DONE]"]
    try:
        return st, json.loads(t)
    except ValueError:
        return st, t


def joined(chunks):
    """A streamed answer put together: content, the calls by index, the finish reason."""
    content, calls, finish = "", {}, None
    for c in chunks:
        for ch in c.get("choices", []):
            d = ch.get("delta", {})
            content += d.get("content") or ""
            for tc in d.get("tool_calls", []):
                k = calls.setdefault(tc["index"], {"name": None, "arguments": "", "id": None})
                k["id"] = tc.get("id", k["id"])
                k["name"] = tc.get("function", {}).get("name", k["name"])
                k["arguments"] += tc.get("function", {}).get("arguments", "")
            finish = ch.get("finish_reason") or finish
    return content, [calls[i] for i in sorted(calls)], finish


def test_models():
    ms = {m["id"]: m for m in json.loads(get("/v1/models")[2])["data"]}
    want = {"q": "hermes", "l": "llama3_json", "s": "none"}
    if "oss" in ms:
        want["oss"] = "harmony"
    got = {k: ms.get(k, {}).get("tool_call_syntax") for k in want}
    check(got == want, "/v1/models: tool_call_syntax %r" % got)


def test_auto():
    st, r = chat("q", "Q-CALLS")
    m = r["choices"][0]["message"] if st == 200 else {}
    calls = [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in m.get("tool_calls", [])]
    check(st == 200 and m.get("content") == "Let me look." and
          calls == [("get_weather", {"city": "Paris", "unit": "celsius"}), ("now", {})] and
          r["choices"][0]["finish_reason"] == "tool_calls" and
          len({c["id"] for c in m["tool_calls"]}) == 2, "hermes: content and two calls: %r" % r)
    st, chunks = chat("q", "Q-CALLS", stream=True)
    content, scalls, finish = joined(chunks)
    check(st == 200 and content == "Let me look." and finish == "tool_calls" and
          [(c["name"], json.loads(c["arguments"])) for c in scalls] == calls and all(c["id"] for c in scalls),
          "hermes streamed: %r %r %r" % (content, scalls, finish))
    # logprobs beside the parser: one entry per generated token, the calls still read back
    st, r = chat("q", "Q-CALLS", logprobs=True, top_logprobs=2)
    lp = (r["choices"][0].get("logprobs") or {}).get("content", []) if st == 200 else []
    check(st == 200 and len(lp) == r["usage"]["completion_tokens"] and
          len(r["choices"][0]["message"].get("tool_calls", [])) == 2 and
          all(len(e["top_logprobs"]) == 2 for e in lp), "hermes with logprobs: %r" % r)
    st, chunks = chat("q", "Q-CALLS", stream=True, logprobs=True)
    slp = [e for c in chunks for ch in c.get("choices", []) for e in (ch.get("logprobs") or {}).get("content", [])]
    lcalls = [(c["name"], json.loads(c["arguments"])) for c in joined(chunks)[1]]
    check(st == 200 and [e["token"] for e in slp] == [e["token"] for e in lp] and lcalls == calls,
          "hermes streamed with logprobs: %d of %d" % (len(slp), len(lp)))
    st, r = chat("q", "Q-CALLS", parallel_tool_calls=False)
    m = r["choices"][0]["message"] if st == 200 else {}
    one = [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in m.get("tool_calls", [])]
    check(st == 200 and one == calls[:1] and r["choices"][0]["finish_reason"] == "tool_calls",
          "auto, parallel_tool_calls false: the first call only: %r" % r)
    st, chunks = chat("q", "Q-CALLS", stream=True, parallel_tool_calls=False)
    check(st == 200 and [(c["name"], json.loads(c["arguments"])) for c in joined(chunks)[1]] == calls[:1],
          "the same streamed: %r" % (joined(chunks)[1],))
    st, r = chat("q", "Q-FAKE")
    m = r["choices"][0]["message"] if st == 200 else {}
    check(st == 200 and m.get("content") == "Use <tool_call>tags</tool_call> like this." and "tool_calls" not in m and
          r["choices"][0]["finish_reason"] == "stop", "hermes: a tag around no JSON stays content: %r" % r)
    st, r = chat("q", "Q-TEXT")
    check(st == 200 and r["choices"][0]["message"]["content"] == "Plain <b>answer</b>  ",
          "an answer without calls is untouched: %r" % r)
    st, r = chat("q", "Q-CALLS", tool_choice="none")
    check(st == 200 and r["choices"][0]["message"]["content"].startswith("Let me look.\n<tool_call>") and
          "tool_calls" not in r["choices"][0]["message"], "tool_choice none: all content: %r" % r)
    st, r = chat("l", "L-CALL")
    m = r["choices"][0]["message"] if st == 200 else {}
    check(st == 200 and m.get("content") is None and
          [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in m.get("tool_calls", [])] ==
          [("get_weather", {"city": "Oslo", "unit": "fahrenheit"})] and
          r["choices"][0]["finish_reason"] == "tool_calls", "llama3_json: a call: %r" % r)
    st, r = chat("l", "L-TEXT")
    check(st == 200 and r["choices"][0]["message"]["content"] == 'Here is {"name": "x"} as text.',
          "llama3_json: text that does not begin with a call is content: %r" % r)


def test_forced():
    named = {"type": "function", "function": {"name": "get_weather"}}
    st, r = chat("q", "Forced", tool_choice=named, parallel_tool_calls=False, max_tokens=300, seed=5)
    ch = r["choices"][0] if st == 200 else {}
    calls = ch.get("message", {}).get("tool_calls", [])
    check(st == 200 and ch["finish_reason"] in ("stop", "length") and len(calls) == 1 and
          calls[0]["function"]["name"] == "get_weather", "a named function: one call, finish stop: %r" % r)
    st, r = chat("l", "Forced", tool_choice="required", max_tokens=300, seed=5)
    ch = r["choices"][0] if st == 200 else {}
    check(st == 200 and ch["finish_reason"] in ("tool_calls", "length") and
          len(ch.get("message", {}).get("tool_calls", [])) == 1, "llama3_json required: one call: %r" % r)


def refused(model, param, words, **kw):
    st, r = chat(model, "x", **kw)
    err = r.get("error", {}) if isinstance(r, dict) else {}
    check(st == 400 and err.get("param") == param and all(w in err.get("message", "") for w in words),
          "%s %r refused naming %s: %s %r" % (model, kw, param, st, r))


def test_refused():
    named = {"type": "function", "function": {"name": "nope"}}
    refused("q", "tool_choice", ["'nope'", "not in 'tools'"], tool_choice=named)
    refused("q", "tool_choice", ["needs 'tools'"], tool_choice="required", tools=None)
    refused("q", "tool_choice", ["at least one tool"], tool_choice="required", tools=[])
    refused("q", "tool_choice", ["cannot be combined"], tool_choice="required",
            response_format={"type": "json_object"})
    refused("q", "tool_choice", ["cannot be combined"], tool_choice="required", grammar='root ::= "a"')
    refused("q", "tool_choice", ["cannot be combined"], tool_choice="required", stop=["}"])
    refused("q", "tool_choice", ["\"required\""], tool_choice="always")
    refused("q", "parallel_tool_calls", [], parallel_tool_calls="no")
    bad = [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"a": {"type": "array", "contains": {}, "maxContains": 1}}}}}]
    refused("q", "tools", ["tools[0].function.parameters", "maxContains", "/properties/a"],
            tool_choice="required", tools=bad)
    refused("q", "tools", ["tools[1].function.parameters", "object schema"], tool_choice="required",
            tools=[TOOLS[1], {"type": "function", "function": {"name": "f", "parameters": {"type": "string"}}}])
    refused("q", "tools", ["tools[0]", "1-64"], tool_choice="required",
            tools=[{"type": "function", "function": {"name": "a.b"}}])
    refused("q", "tools", ["JSON Schema object"], tools=[{"type": "function", "function": {
        "name": "f", "parameters": "string"}}])
    refused("s", "tool_choice", ["cannot be made to call a tool", "has none"], tool_choice="required")
    # a bad schema is fine while no call is forced: the template is told of it as given
    st, r = chat("q", "Q-TEXT", tools=bad)
    check(st == 200, "an unenforceable schema with tool_choice auto is accepted: %s %r" % (st, r))


def test_openai_npm():
    if not os.path.isdir(os.path.join(INTEROP, "node_modules", "ajv")):
        check(False, "ajv is not installed in tests/interop: run 'make deps'")
        return
    r = subprocess.run(["node", os.path.join(INTEROP, "tools_client.mjs"),
                        "http://127.0.0.1:%d/v1" % orchd_lib.PORT, "q", "l", str(GENS)]
                       + (["oss"] if os.path.isfile(OSS) else []),
                       capture_output=True, text=True, timeout=600)
    print(r.stdout)
    check(r.returncode == 0 and "all passed" in r.stdout,
          "tool calls with the openai npm client and ajv: %s" % (r.stdout + r.stderr)[-3000:])


def test_langchain():
    if not os.path.isdir(os.path.join(INTEROP, "node_modules", "@langchain", "openai")):
        check(False, "@langchain/openai is not installed in tests/interop: run 'make deps'")
        return
    runs = [("q", [])]
    if os.path.isfile(OSS):  # harmony: <|end|> raised so that a random model's analysis ends
        st, _, t = post("/tokenize", {"model": "oss", "content": "<|end|>"})
        runs.append(("oss", [json.dumps({"logit_bias": {str(json.loads(t)["tokens"][0]): 12}})]))
    for model, extra in runs:
        r = subprocess.run(["node", os.path.join(INTEROP, "langchain_client.mjs"),
                            "http://127.0.0.1:%d/v1" % orchd_lib.PORT, model, str(min(GENS, 3))] + extra,
                           capture_output=True, text=True, timeout=600)
        print(r.stdout)
        check(r.returncode == 0 and "all passed" in r.stdout,
              "LangChain JS structured output and tools on %s: %s" % (model, (r.stdout + r.stderr)[-3000:]))


tmp = tempfile.mkdtemp()
orchd_lib.PORT = orchd_lib.free_port(os.getpid() + 23)
orchd_lib.ADMIN = os.path.join(tmp, "orchd.sock")
conf = ("[server]\nlisten = 127.0.0.1:%d\nadmin_socket = %s\nruntime_dir = %s\nhash_cache_beside = no\n"
        % (orchd_lib.PORT, orchd_lib.ADMIN, tmp)) + models(tmp)
orchd, log = orchd_lib.start_orchd(BIN, tmp, conf, dict(os.environ, ORCH_FAULT_SCRIPT=json.dumps(SCRIPTS)), 60)
try:
    test_models()
    test_auto()
    test_forced()
    test_refused()
    test_openai_npm()
    test_langchain()
finally:
    orchd_lib.stop_orchd(orchd, log, tmp)
print("orchd_tools_test: %d passed, %d failed" % (orchd_lib.passed, orchd_lib.failed))
sys.exit(1 if orchd_lib.failed else 0)
