#!/usr/bin/env python3
"""orchd_think_test - a model that thinks between <think> and </think> (Qwen3, QwQ, the
DeepSeek-R1 distills) through orchd's chat API (issue 54): what lies between the tags is
reasoning_content, what follows is content, as for gpt-oss's analysis channel.

The model is orch-synth's tiny-qwen3 on the vocabulary of the repository's qwen3 tiny file
(tests/data/models, llama.cpp-written, Qwen3's real chat template) with "<think>" and
"</think>" added as tokens, as Qwen3's tokenizer has them; what it generates is set by the
worker's test hook ORCH_FAULT_SCRIPT (a trigger in the rendered prompt: the text to
generate). Checked: not streamed and streamed (reasoning deltas first), the whitespace the
template puts after each tag dropped; chat_template_kwargs enable_thinking false (the
template closes an empty block in the prompt: all content); completions are raw text, the
tags in it; a model without think tokens is unchanged."""
import json
import os
import struct
import subprocess
import sys
import tempfile

BIN = os.environ["ORCH_BIN"]
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import orchd_lib  # noqa: E402
from orchd_lib import check, post, sse_events  # noqa: E402
QWEN3 = os.path.join(HERE, "..", "data", "models", "qwen3-tiny-f32.gguf")

SCRIPTS = {
    "Think about it": "<think>\nLet me see: two and two.</think>\n\nFour.<|im_end|>",
    "Answer at once": "Four, at once.<|im_end|>",
}


def read_kv(path):
    """The key/value pairs of a GGUF file, in order, as (key, type, raw value bytes)."""
    d = open(path, "rb").read()
    o = [24]
    n_kv = struct.unpack_from("<Q", d, 16)[0]
    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}

    def u(fmt):
        v = struct.unpack_from("<" + fmt, d, o[0])[0]
        o[0] += struct.calcsize("<" + fmt)
        return v

    def skip(t):
        if t == 8:
            n = u("Q")  # read first: o[0] += u(...) would add to the old offset
            o[0] += n
        elif t == 9:
            et, n = u("I"), u("Q")
            if et in sizes:
                o[0] = o[0] + sizes[et] * n
            else:
                for _ in range(n):
                    skip(et)
        else:
            o[0] += sizes[t]

    out = []
    for _ in range(n_kv):
        k = d[o[0] + 8:o[0] + 8 + struct.unpack_from("<Q", d, o[0])[0]].decode()
        o[0] += 8 + len(k.encode())
        t = u("I")
        start = o[0]
        skip(t)
        out.append((k, t, d[start:o[0]]))
    return out


def think_vocab(dst):
    """The qwen3 tiny file's tokenizer keys with <think> and </think> appended (USER_DEFINED,
    as Qwen3's tokenizer.json marks them), as a vocabulary-only GGUF for orch-synth --vocab."""
    kv = [x for x in read_kv(QWEN3) if x[0].startswith("tokenizer.") or x[0] == "general.architecture"]
    body = []
    for k, t, raw in kv:
        if k in ("tokenizer.ggml.tokens", "tokenizer.ggml.token_type"):
            et, n = struct.unpack_from("<IQ", raw, 0)
            extra = (b"".join(struct.pack("<Q", len(s)) + s for s in (b"<think>", b"</think>"))
                     if k == "tokenizer.ggml.tokens" else struct.pack("<ii", 4, 4))
            raw = struct.pack("<IQ", et, n + 2) + raw[12:] + extra
        body.append(struct.pack("<Q", len(k)) + k.encode() + struct.pack("<I", t) + raw)
    with open(dst, "wb") as f:
        f.write(b"GGUF" + struct.pack("<IQQ", 3, 0, len(body)) + b"".join(body))


def chat(model, content, **more):
    body = {"model": model, "messages": [{"role": "user", "content": content}], "max_tokens": 40,
            "temperature": 0}
    body.update(more)
    st, _, t = post("/v1/chat/completions", body)
    return st, json.loads(t) if t.startswith("{") else t


def stream(model, content):
    st, _, t = post("/v1/chat/completions", {"model": model, "max_tokens": 40, "stream": True,
                                             "messages": [{"role": "user", "content": content}]})
    order, reasoning, content_s = [], "", ""
    for e in sse_events(t):
        if e["data"] == "[DONE]":
            continue
        for ch in json.loads(e["data"]).get("choices", []):
            d = ch.get("delta", {})
            if d.get("reasoning_content"):
                reasoning += d["reasoning_content"]
                order.append("r")
            if d.get("content"):
                content_s += d["content"]
                order.append("c")
    return st, reasoning, content_s, order


tmp = tempfile.mkdtemp()
vocab, model = os.path.join(tmp, "vocab.gguf"), os.path.join(tmp, "think.gguf")
think_vocab(vocab)
subprocess.run([BIN + "/orch-synth", "--preset", "tiny-qwen3", "--vocab", vocab, "--seed", "3", "-o", model],
               check=True, capture_output=True)
orchd_lib.PORT = orchd_lib.free_port(os.getpid() + 31)
orchd_lib.ADMIN = os.path.join(tmp, "orchd.sock")
conf = ("[server]\nlisten = 127.0.0.1:%d\nadmin_socket = %s\nruntime_dir = %s\nhash_cache_beside = no\n"
        '[model "t"]\npath = %s\nslots = 2\ncontext = 512\nthreads = 1\n'
        '[model "plain"]\npath = %s\nslots = 1\ncontext = 512\nthreads = 1\n'
        % (orchd_lib.PORT, orchd_lib.ADMIN, tmp, model, QWEN3))
orchd, log = orchd_lib.start_orchd(BIN, tmp, conf, dict(os.environ, ORCH_FAULT_SCRIPT=json.dumps(SCRIPTS)), 60)
try:
    st, r = chat("t", "Think about it")
    m = r["choices"][0]["message"] if st == 200 else {}
    check(st == 200 and m.get("reasoning_content") == "Let me see: two and two."
          and m.get("content") == "Four.", "reasoning_content apart from content: %s %r" % (st, r))
    st, reasoning, content, order = stream("t", "Think about it")
    check(st == 200 and reasoning == "Let me see: two and two." and content == "Four."
          and order == sorted(order, key=lambda k: k != "r"),
          "streamed: reasoning deltas, then content: %r %r %r" % (reasoning, content, order))
    st, r = chat("t", "Answer at once", chat_template_kwargs={"enable_thinking": False})
    m = r["choices"][0]["message"] if st == 200 else {}
    check(st == 200 and m.get("content") == "Four, at once." and not m.get("reasoning_content"),
          "thinking off (an empty block in the prompt): content only: %r" % r)
    st, _, t = post("/v1/completions", {"model": "t", "prompt": "Think about it", "max_tokens": 40})
    text = json.loads(t)["choices"][0]["text"] if st == 200 else t
    check(st == 200 and "<think>" in text and "</think>" in text, "completions are raw text: %r" % text)
    st, r = chat("plain", "Think about it")
    m = r["choices"][0]["message"] if st == 200 else {}
    check(st == 200 and "<think>" in m.get("content", "") and not m.get("reasoning_content"),
          "a vocabulary without think tokens: the text as it is: %r" % r)
finally:
    orchd.terminate()
    orchd.wait(30)
print("orchd_think_test: %d passed, %d failed" % (orchd_lib.passed, orchd_lib.failed))
sys.exit(1 if orchd_lib.failed else 0)
