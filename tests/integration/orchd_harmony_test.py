#!/usr/bin/env python3
"""orchd_harmony_test - gpt-oss's harmony format through orchd (issue 17).

The tiny gpt-oss model (the shared data's; in a clone alone, orch-synth's
tiny-gpt-oss with gpt-oss's vocabulary, which make deps makes) has random
weights, so what it generates is set by
the worker's test hook ORCH_FAULT_SCRIPT (worker/serve/serve_script.c): a
job whose rendered prompt contains a trigger generates the trigger's text.
Everything else is the real path: the model's own chat template, the
tokenizer, the worker's harmony parser, the wire, orchd's APIs.

- chat, not streamed and streamed: analysis -> reasoning_content, final ->
  content, finish_reason stop; stop strings cut the content;
- a tool call (commentary to=functions.NAME, <|constrain|>json, <|call|>):
  tool_calls with the name and the JSON arguments, content null,
  finish_reason tool_calls; streamed as tool_calls deltas;
- the round trip: the assistant's tool call and the tool's result sent back
  render as harmony (checked by a trigger on the exact rendered text);
- reasoning_effort reaches the template; bad tools, tool_choice and
  reasoning_effort are refused naming the parameter;
- a raw prompt: /v1/completions gives the harmony text verbatim, /execute's
  token events say which message and channel each token belongs to;
- the official openai npm client (tests/interop/harmony_client.mjs)."""
import json
import os
import signal
import subprocess
import sys
import tempfile

BIN = os.environ["ORCH_BIN"]
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import orchd_lib  # noqa: E402
from orchd_lib import check, post, sse_events  # noqa: E402
DATA = orchd_lib.testdata("vocab/ggml-vocab-gpt-oss.gguf")

ROUND_TRIP = ('<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>'
              '{"city": "Paris"}<|call|><|start|>functions.get_weather to=assistant<|channel|>'
              'commentary<|message|>"sunny, 22C"<|end|>')
TOOL_CALL = ("<|channel|>analysis<|message|>I should call get_weather.<|end|><|start|>assistant"
             "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
             '{"city": "Paris"}<|call|>')
RAW = ("<|channel|>analysis<|message|>raw think<|end|><|start|>assistant<|channel|>final"
       "<|message|>raw answer")
SCRIPTS = {  # the first trigger the rendered prompt contains wins
    ROUND_TRIP: "<|channel|>final<|message|>It is sunny in Paris, 22 °C.<|return|>",
    "weather in Paris": TOOL_CALL,
    "Reasoning: high": "<|channel|>analysis<|message|>Thinking hard.<|end|><|start|>assistant"
                       "<|channel|>final<|message|>High effort.<|return|>",
    "Say hello": "<|channel|>analysis<|message|>The user wants a greeting. 👋<|end|>"
                 "<|start|>assistant<|channel|>final<|message|>Hello, world!<|return|>",
    "RAW:": RAW + "<|return|>",
}
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Current weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
SYSTEM = {"role": "system", "content": "You are a terse assistant."}

tmp = tempfile.mkdtemp()
orchd_lib.PORT = orchd_lib.free_port(os.getpid() + 17)
orchd_lib.ADMIN = os.path.join(tmp, "orchd.sock")
MODEL = orchd_lib.gpt_oss_tiny(tmp)


def chat(messages, **kw):
    body = {"model": "oss", "messages": messages, "temperature": 0, "max_tokens": 64}
    body.update(kw)
    st, _, t = post("/v1/chat/completions", body)
    return st, json.loads(t) if t.startswith("{") else t


def chat_stream(messages, **kw):
    st, _, t = post("/v1/chat/completions", dict({"model": "oss", "messages": messages, "max_tokens": 64,
                                                  "stream": True}, **kw))
    chunks = [json.loads(e["data"]) for e in sse_events(t) if e["data"] != "[DONE]"]
    return st, chunks


def streamed_parts(chunks):
    """(reasoning, content, tool call deltas, finish reasons, order of kinds)."""
    reasoning = content = ""
    calls, finish, order = [], [], []
    for c in chunks:
        for ch in c.get("choices", []):
            d = ch.get("delta", {})
            if d.get("reasoning_content"):
                reasoning += d["reasoning_content"]
                order.append("r")
            if d.get("content"):
                content += d["content"]
                order.append("c")
            for tc in d.get("tool_calls", []):
                calls.append(tc)
                order.append("t")
            if ch.get("finish_reason"):
                finish.append(ch["finish_reason"])
    return reasoning, content, calls, finish, order


def test_chat():
    msgs = [SYSTEM, {"role": "user", "content": "Say hello"}]
    st, r = chat(msgs)
    m = r["choices"][0]["message"] if st == 200 else {}
    check(st == 200 and m.get("content") == "Hello, world!", "final -> content: %s %r" % (st, r))
    check(m.get("reasoning_content") == "The user wants a greeting. 👋", "analysis -> reasoning_content: %r" % m)
    check("tool_calls" not in m and r["choices"][0]["finish_reason"] == "stop", "no tool calls, stop: %r" % r)
    check(r["usage"]["completion_tokens"] > 10, "every generated token counted: %r" % r.get("usage"))

    st, chunks = chat_stream(msgs, stream_options={"include_usage": True})
    reasoning, content, calls, finish, order = streamed_parts(chunks)
    check(st == 200 and reasoning == m.get("reasoning_content") and content == m.get("content"),
          "streamed: reasoning %r, content %r" % (reasoning, content))
    check(order and order == sorted(order, key=lambda k: k != "r") and not calls and finish == ["stop"],
          "reasoning deltas first, then content, stop: %r %r" % (order, finish))
    check(chunks[-1].get("usage", {}).get("completion_tokens") == r["usage"]["completion_tokens"],
          "streamed usage: %r" % chunks[-1])

    st, r = chat(msgs, stop=["world"])
    m = r["choices"][0]["message"] if st == 200 else {}
    check(m.get("content") == "Hello, " and m.get("reasoning_content", "").startswith("The user")
          and r["choices"][0]["finish_reason"] == "stop", "a stop string cuts the content: %r" % r)

    st, r = chat(msgs, reasoning_effort="high")
    check(st == 200 and r["choices"][0]["message"]["content"] == "High effort.",
          "reasoning_effort reaches the template: %r" % r)


def test_tool_call():
    msgs = [SYSTEM, {"role": "user", "content": "What is the weather in Paris?"}]
    st, r = chat(msgs, tools=TOOLS, tool_choice="auto")
    c = r["choices"][0] if st == 200 else {}
    m = c.get("message", {})
    calls = m.get("tool_calls") or [{}]
    check(st == 200 and c.get("finish_reason") == "tool_calls", "finish_reason tool_calls: %s %r" % (st, r))
    check(m.get("content") is None and m.get("reasoning_content") == "I should call get_weather.",
          "content null, the analysis as reasoning: %r" % m)
    check(len(m.get("tool_calls", [])) == 1 and calls[0].get("type") == "function"
          and calls[0].get("id", "").startswith("call_")
          and calls[0].get("function") == {"name": "get_weather", "arguments": '{"city": "Paris"}'},
          "one tool call, its name and JSON arguments: %r" % m.get("tool_calls"))

    st, chunks = chat_stream(msgs, tools=TOOLS)
    reasoning, content, deltas, finish, _ = streamed_parts(chunks)
    args = "".join(d.get("function", {}).get("arguments", "") for d in deltas)
    check(st == 200 and reasoning == "I should call get_weather." and content == "" and finish == ["tool_calls"],
          "streamed: reasoning, no content, tool_calls: %r %r %r" % (reasoning, content, finish))
    check(deltas and deltas[0].get("id", "").startswith("call_") and deltas[0].get("function", {}).get("name")
          == "get_weather" and all(d.get("index") == 0 for d in deltas) and args == '{"city": "Paris"}'
          and all("id" not in d for d in deltas[1:]), "tool_calls deltas: %r" % deltas)

    # the round trip: the call and its result go back; the template renders them as harmony
    back = msgs + [{"role": "assistant", "content": None, "tool_calls": m.get("tool_calls")},
                   {"role": "tool", "tool_call_id": calls[0].get("id"), "content": "sunny, 22C"}]
    st, r = chat(back, tools=TOOLS)
    check(st == 200 and r["choices"][0]["message"]["content"] == "It is sunny in Paris, 22 °C."
          and r["choices"][0]["finish_reason"] == "stop", "the tool's result answered: %s %r" % (st, r))

    # a tool without a description (OpenAI's is optional; LangChain sends none): the template
    # writes "// " + description, so the worker gives it "" rather than fail on an undefined
    bare = [{"type": "function", "function": {"name": "now", "parameters": {"type": "object"}}},
            {"type": "function", "function": {"name": "later", "description": None}}]
    st, _, t = post("/tokenize", {"model": "oss", "messages": msgs, "tools": bare,
                                  "with_pieces": False, "add_special": False})
    rendered = json.loads(t) if st == 200 else {}
    st2, _, t2 = post("/detokenize", {"model": "oss", "tokens": rendered.get("tokens", [])})
    check(st == 200 and "// \ntype now = " in json.loads(t2).get("content", ""),
          "a tool without a description renders: %s %s" % (st, (t2 or t)[:400]))


def test_refused():
    msgs = [{"role": "user", "content": "Say hello"}]
    for kw, param in (({"reasoning_effort": "extreme"}, "reasoning_effort"),
                      ({"tools": [{"type": "function"}]}, "tools"),
                      ({"tools": "get_weather"}, "tools"),
                      ({"tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "nope"}}},
                       "tool_choice"),
                      ({"chat_template_kwargs": {"messages": []}}, "chat_template_kwargs")):
        st, r = chat(msgs, **kw)
        check(st == 400 and isinstance(r, dict) and r["error"]["param"] == param, "%r refused: %s %r" % (kw, st, r))
    st, r = chat([{"role": "user", "content": "x", "tool_calls": [{"function": {"name": "f"}}]}])
    check(st == 400 and r["error"]["param"] == "messages", "tool_calls on a user message: %r" % r)
    st, r = chat([{"role": "assistant", "content": None}])
    check(st == 400 and r["error"]["param"] == "messages", "null content without tool calls: %r" % r)


def test_raw():
    prompt = "RAW:<|start|>user<|message|>hi<|end|><|start|>assistant"
    st, _, t = post("/v1/completions", {"model": "oss", "prompt": prompt, "max_tokens": 64, "temperature": 0})
    r = json.loads(t)
    check(st == 200 and r["choices"][0]["text"] == RAW, "completions: the harmony text verbatim: %r" % t[:400])

    st, _, t = post("/execute", {"job_id": "raw", "model": "oss", "prompt": prompt, "max_tokens": 64})
    toks = [json.loads(e["data"]) for e in sse_events(t) if e["event"] == "token"]
    by = {}
    for k in toks:
        if "channel" in k:
            by.setdefault((k["message"], k["channel"]), []).append(k["t"])
    check(st == 200 and "".join(k["t"] for k in toks) == RAW, "execute: the same text: %r" % toks[:4])
    check({key: "".join(v) for key, v in by.items()} == {(0, "analysis"): "raw think", (1, "final"): "raw answer"},
          "execute: each content token's message and channel: %r" % by)
    check(all("channel" not in k for k in toks if k["t"].startswith("<|")), "headers have no channel")


def test_openai_npm():
    interop = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "interop")
    if not os.path.isdir(os.path.join(interop, "node_modules", "openai")):
        check(False, "the openai npm package is not installed in tests/interop: run 'make deps'")
        return
    r = subprocess.run(["node", os.path.join(interop, "harmony_client.mjs"),
                        "http://127.0.0.1:%d/v1" % orchd_lib.PORT, "oss"],
                       capture_output=True, text=True, timeout=120)
    check(r.returncode == 0 and "all passed" in r.stdout, "openai npm client: %s" % (r.stdout + r.stderr)[-2000:])


conf = ("[server]\nlisten = 127.0.0.1:%d\nadmin_socket = %s\nruntime_dir = %s\nhash_cache_beside = no\n"
        '[model "oss"]\npath = %s\nslots = 2\ncontext = 1024\nthreads = 1\n'
        % (orchd_lib.PORT, orchd_lib.ADMIN, tmp, MODEL))
orchd, log = orchd_lib.start_orchd(BIN, tmp, conf, dict(os.environ, ORCH_FAULT_SCRIPT=json.dumps(SCRIPTS)), 60)
try:
    test_chat()
    test_tool_call()
    test_refused()
    test_raw()
    test_openai_npm()
    orchd.send_signal(signal.SIGTERM)
    check(orchd.wait(30) == 0, "exit 0")
finally:
    orchd_lib.stop_orchd(orchd, log, tmp)
print("orchd_harmony_test: %d passed, %d failed" % (orchd_lib.passed, orchd_lib.failed))
sys.exit(1 if orchd_lib.failed else 0)
