#!/usr/bin/env python3
"""orchd_tokenize_test - POST /tokenize and /detokenize (issue 20) against
real tokenizers: a random-weight Qwen2 model with the real Qwen2 vocabulary
(tokenizer.json) and Qwen2.5's chat template, gpt-oss-tiny (o200k) and
stories260K (SentencePiece, BOS).

- every golden case of ggml-vocab-qwen2 and ggml-vocab-gpt-oss (no special
  tokens added or parsed, as the goldens were made) gives the golden ids,
  and /detokenize gives the text back; with_pieces' pieces joined are the
  text; return_token_strs are the vocabulary's strings;
- stories260K: BOS by default (add_special), as many tokens as a completion
  of that prompt reports, none with add_special false;
- parse_special: a control token's text is that token, or text;
- messages: each render of Qwen2.5's template golden file (with and without
  add_generation_prompt) tokenizes as its rendered text does; the count is
  a chat completion's prompt_tokens, tools included;
- refusals (400 naming the parameter, 404 for a model): bad JSON, an unknown
  field, content and prompt, content and messages, a chat-only field beside
  a text, add_special with messages, a token outside the vocabulary, not an
  array, negative or fractional ids, a text over max_prompt_chars, no model
  when several are served;
- a second orchd serving one model (not preloaded): no model needed, the
  first request waits for the load; a stopped worker: request_timeout_s
  answers 504, a killed one 503 WORKER_LOST, a client that leaves is
  forgotten; orchd serves on."""
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

BIN = os.environ["ORCH_BIN"]
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import orchd_lib  # noqa: E402
from orchd_lib import check, post  # noqa: E402
DATA = orchd_lib.testdata("templates/Qwen-Qwen2.5-7B-Instruct.jinja", "templates/cases.json",
                          "vocab/ggml-vocab-qwen2.gguf")
VOCAB = os.path.join(DATA, "vocab")
STORIES = os.path.join(HERE, "..", "..", "models", "stories260K.gguf")
OSS = os.path.join(DATA, "models", "gpt-oss-tiny-f32.gguf")
OSS_VOCAB = os.path.join(VOCAB, "ggml-vocab-gpt-oss.gguf")
HAVE_OSS = os.path.exists(OSS_VOCAB)  # without the tiny model, orch-synth's on its vocabulary
if not HAVE_OSS:
    print("left out: the gpt-oss cases (vocab/ggml-vocab-gpt-oss.gguf: the shared test data's, or "
          "what make deps makes in tests/data from the npm package js-tiktoken)", flush=True)
QWEN_TEMPLATE = os.path.join(DATA, "templates", "Qwen-Qwen2.5-7B-Instruct")
SEP = b"\n__ggml_vocab_test__\n"


def goldens(name):
    with open(os.path.join(VOCAB, "ggml-vocab-%s.gguf.inp" % name), "rb") as f:
        inputs = f.read().split(SEP)[:-1]
    with open(os.path.join(VOCAB, "ggml-vocab-%s.gguf.out" % name)) as f:
        outs = [[int(x) for x in line.split()] for line in f.read().split("\n")[:len(inputs)]]
    return [(i.decode(), o) for i, o in zip(inputs, outs)]


def tok(**body):
    st, _, t = post("/tokenize", body)
    return st, json.loads(t) if t else {}


def detok(**body):
    st, _, t = post("/detokenize", body)
    return st, json.loads(t) if t else {}


def test_goldens(model, vocab):
    cases, bad, back, pieces = goldens(vocab), [], [], []
    for text, ids in cases:
        st, o = tok(model=model, content=text, add_special=False, parse_special=False, with_pieces=True)
        got = [p["id"] for p in o.get("tokens", [])] if st == 200 else None
        if got != ids:
            bad.append((text[:40], ids[:8], got and got[:8], st, str(o)[:200]))
            continue
        joined = b"".join(p["piece"].encode() if isinstance(p["piece"], str) else bytes(p["piece"])
                          for p in o["tokens"])
        if joined != text.encode():
            pieces.append(text[:40])
        st, o = detok(model=model, tokens=ids)
        if st != 200 or o.get("content") != text or o.get("prompt") != text:
            back.append((text[:40], st, str(o)[:200]))
    check(not bad, "%s: %d of %d golden cases give the golden ids: %r" % (vocab, len(cases) - len(bad), len(cases), bad[:3]))
    check(not pieces, "%s: with_pieces' pieces joined are the text: %r" % (vocab, pieces[:3]))
    check(not back, "%s: /detokenize gives each text back: %r" % (vocab, back[:3]))


def test_strings_and_special():
    st, o = tok(model="q", prompt="Hello world", return_token_strs=True, add_special_tokens=False)
    check(st == 200 and o.get("token_strs") == ["Hello", "\u0120world"] and o.get("count") == 2 and
          o.get("max_model_len") == 2048 and o.get("model") == "q", "vLLM's shape, token_strs: %r" % o)
    st, o = tok(model="q", content="<|im_start|>user")
    check(st == 200 and o["tokens"][0] == 151644 and len(o["tokens"]) == 2, "control text is the token: %r" % o)
    st, o = tok(model="q", content="<|im_start|>user", parse_special=False)
    check(st == 200 and 151644 not in o["tokens"] and len(o["tokens"]) > 2, "parse_special false: text: %r" % o)
    st, o = detok(model="q", tokens=[151644, 872])
    check(st == 200 and o.get("content") == "<|im_start|>user", "control tokens detokenize to their text: %r" % o)
    st, o = tok(model="q", content="\u00e9", with_pieces=True, add_special=False)
    check(st == 200 and all("id" in p and "piece" in p for p in o["tokens"]), "pieces: %r" % o)


def test_bos_and_counts():
    st, o = tok(model="s", content="Once upon a time")
    _, _, t = post("/v1/completions", {"model": "s", "prompt": "Once upon a time", "max_tokens": 1})
    n = json.loads(t)["usage"]["prompt_tokens"]
    check(st == 200 and o["tokens"][0] == 1 and o["count"] == n, "BOS first, as a completion counts (%d): %r" % (n, o))
    st, o2 = tok(model="s", content="Once upon a time", add_special=False)
    check(st == 200 and o2["tokens"] == o["tokens"][1:], "add_special false: no BOS: %r" % o2)
    st, o3 = detok(model="s", tokens=o2["tokens"])
    check(st == 200 and o3["content"].strip() == "Once upon a time", "SPM round trip: %r" % o3)
    # llama.cpp's mixed content: strings and ids in order; BOS only before a first string
    st, a = tok(model="s", content=["Once", 7, " upon a time"])
    _, once = tok(model="s", content="Once")
    _, rest = tok(model="s", content=" upon a time", add_special=False)
    check(st == 200 and a["tokens"] == once["tokens"] + [7] + rest["tokens"],
          "mixed content: the parts in order, BOS before the first string: %r" % a)
    st, b = tok(model="s", prompt=[7, "Once"])
    _, once2 = tok(model="s", content="Once", add_special=False)
    check(st == 200 and b["tokens"] == [7] + once2["tokens"], "mixed content starting with an id: no BOS: %r" % b)
    st, c = tok(model="s", content=[5, 6], with_pieces=True)
    check(st == 200 and [x["id"] for x in c["tokens"]] == [5, 6], "ids alone are kept as they are: %r" % c)


def test_chat():
    with open(os.path.join(DATA, "templates", "cases.json")) as f:
        convs = {c["case"]: c["messages"] for c in json.load(f)["cases"]}
    with open(QWEN_TEMPLATE + ".golden.json") as f:
        renders = json.load(f)
    bad = []
    for r in renders:
        if "rendered" not in r:
            continue
        st, a = tok(model="q", messages=convs[r["case"]], add_generation_prompt=r["add_generation_prompt"])
        st2, b = tok(model="q", content=r["rendered"], add_special=False)
        if st != 200 or st2 != 200 or a["tokens"] != b["tokens"]:
            bad.append((r["case"], r["add_generation_prompt"], st, str(a)[:200]))
    check(not bad and len(renders) >= 5, "each golden render tokenizes as its text: %r" % bad[:3])
    conv = convs["multi_turn"]
    _, a = tok(model="q", messages=conv)
    _, b = tok(model="q", messages=conv, chat_template_kwargs={"Add_Generation_Prompt": False})
    check(a.get("tokens") and a["tokens"] == b.get("tokens"),
          "a template variable that differs only in case leaves the generation prompt on: %r" % b)
    msgs = [{"role": "user", "content": "What is the weather in Paris?"}]
    tools = [{"type": "function", "function": {"name": "weather", "description": "Weather",
                                               "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
    for kw in ({}, {"tools": tools}):
        st, o = tok(model="q", messages=msgs, **kw)
        _, _, t = post("/v1/chat/completions", dict({"model": "q", "messages": msgs, "max_tokens": 1}, **kw))
        n = json.loads(t)["usage"]["prompt_tokens"]
        check(st == 200 and o["count"] == n, "chat count %s = completion's prompt_tokens %d: %r" % (list(kw), n, o.get("count")))


def test_refused():
    def refused(path, body, status, param, raw=None):
        st, _, t = post(path, body if raw is None else raw)
        o = json.loads(t) if t else {}
        err = o.get("error", {})
        check(st == status and (param is None or err.get("param") == param),
              "%s %s: %d param %s: %d %r" % (path, str(body)[:60], status, param, st, err))
    refused("/tokenize", None, 400, None, raw=b"{nope")
    refused("/tokenize", {"model": "q", "content": "x", "bogus": 1}, 400, "bogus")
    refused("/tokenize", {"model": "q", "content": "x", "prompt": "y"}, 400, "prompt")
    refused("/tokenize", {"model": "q", "content": "x", "messages": [{"role": "user", "content": "x"}]}, 400, "messages")
    refused("/tokenize", {"model": "q"}, 400, "content")
    refused("/tokenize", {"model": "q", "content": "x", "add_generation_prompt": True}, 400, "add_generation_prompt")
    refused("/tokenize", {"model": "q", "messages": [{"role": "user", "content": "x"}], "add_special": True}, 400, "add_special")
    refused("/tokenize", {"model": "q", "messages": [{"role": "user", "content": "x"}], "add_special_tokens": True}, 400, "add_special_tokens")
    refused("/tokenize", {"model": "q", "messages": [{"role": "user", "content": "x"}], "parse_special": False}, 400, "parse_special")
    st, o = tok(model="q", messages=[{"role": "user", "content": "x"}], add_special_tokens=False)
    check(st == 200 and o.get("count", 0) > 3, "vLLM's add_special_tokens false beside messages is taken: %d %r" % (st, o))
    refused("/tokenize", {"model": "q", "content": "x", "add_special": True, "add_special_tokens": False}, 400, "add_special_tokens")
    refused("/tokenize", {"model": "q", "content": 5}, 400, "content")
    refused("/tokenize", {"model": "q", "content": []}, 400, "content")
    refused("/tokenize", {"model": "q", "content": ["x", -1]}, 400, "content")
    refused("/tokenize", {"model": "q", "prompt": ["x", 1.5]}, 400, "prompt")
    refused("/tokenize", {"model": "q", "content": ["x", ["y"]]}, 400, "content")
    refused("/tokenize", {"model": "q", "content": ["x" * 3000, "y" * 3000]}, 400, "content")
    refused("/tokenize", {"model": "q", "content": ["x", 151936]}, 400, "content")
    st, o = tok(model="q", content=["x", 151936])
    check("at [1] (151936)" in o.get("error", {}).get("message", ""), "the bad part is named: %r" % o)
    refused("/tokenize", {"model": "q", "content": "x" * 5000}, 400, "content")
    refused("/tokenize", {"model": "q", "messages": []}, 400, "messages")
    refused("/tokenize", {"model": "nope", "content": "x"}, 404, "model")
    refused("/tokenize", {"content": "x"}, 400, "model")
    refused("/detokenize", {"model": "q", "tokens": [1, 151936]}, 400, "tokens")
    refused("/detokenize", {"model": "q", "tokens": "1 2"}, 400, "tokens")
    refused("/detokenize", {"model": "q", "tokens": [-1]}, 400, "tokens")
    refused("/detokenize", {"model": "q", "tokens": [1.5]}, 400, "tokens")
    refused("/detokenize", {"model": "q", "tokens": [1], "content": "x"}, 400, "content")
    st, o = detok(model="q", tokens=[1, 151936])
    check("151936" in o.get("error", {}).get("message", ""), "the bad id is named: %r" % o)
    st, o = detok(model="q", tokens=[])
    check(st == 200 and o.get("content") == "", "no tokens: no text: %r" % o)


def more(tmp):
    d = os.path.join(tmp, "q")
    os.mkdir(d)
    subprocess.run([BIN + "/orch-synth", "--preset", "tiny-qwen2", "--quant", "Q8_0", "--seed", "7",
                    "--vocab", os.path.join(VOCAB, "ggml-vocab-qwen2.gguf"), "-o", os.path.join(d, "m.gguf")],
                   check=True, capture_output=True)
    subprocess.run([BIN + "/orch-tokjson", os.path.join(VOCAB, "ggml-vocab-qwen2.gguf"),
                    os.path.join(d, "tokenizer.json")], check=True)
    with open(QWEN_TEMPLATE + ".jinja") as f:
        cfg = {"eos_token": "<|im_end|>", "chat_template": f.read()}
    with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
        json.dump(cfg, f)
    conf = ('[model "q"]\npath = %s\ndevice = cpu\nslots = 2\nthreads = 1\ncontext = 2048\n'
            'tokenizer = hf-json\n' % os.path.join(d, "m.gguf"))
    conf += '[model "s"]\npath = %s\ndevice = cpu\nslots = 1\nthreads = 1\ncontext = 256\n' % STORIES
    if HAVE_OSS:
        oss = OSS if os.path.exists(OSS) else orchd_lib.gpt_oss_tiny(tmp)  # a clone alone: orch-synth's
        conf += '[model "oss"]\npath = %s\ndevice = cpu\nslots = 1\nthreads = 1\ncontext = 256\n' % oss
    return conf


def worker_pid(tmp):
    orchd_lib.ADMIN = os.path.join(tmp, "orchd.sock")
    ws = json.loads(orchd_lib.admin("GET", "/admin/workers")[1])
    return ws[0].get("pid") if ws else None


def test_one_model():
    """One model, not preloaded, request_timeout_s 2: the waits and the failures."""
    def one(tmp):
        return '[model "s"]\npath = %s\ndevice = cpu\nslots = 1\nthreads = 1\ncontext = 256\npreload = no\n' % STORIES
    p = orchd_lib.OrchdProc(BIN, conf="request_timeout_s = 2\n", seed=61, ready_s=30, more=one)
    try:
        st, o = tok(content="Once upon a time")
        check(st == 200 and o.get("model") == "s" and o["tokens"][0] == 1,
              "no model needed with one; the first waits for the load: %d %r" % (st, o))
        pid = worker_pid(p.tmp)
        check(pid, "the worker's pid: %r" % pid)
        if not pid:
            return
        os.kill(pid, signal.SIGSTOP)
        t0 = time.time()
        st, o = tok(content="x")
        check(st == 504 and 1.5 < time.time() - t0 < 10 and "request_timeout_s" in o["error"]["message"],
              "a worker that does not answer: 504 after request_timeout_s: %d %r" % (st, o))
        s = socket.create_connection(("127.0.0.1", orchd_lib.PORT))  # a client that leaves
        body = b'{"content": "x"}'
        s.sendall(b"POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        time.sleep(0.3)
        s.close()
        res = {}
        th = threading.Thread(target=lambda: res.update(r=tok(content="x")))
        th.start()
        time.sleep(0.5)
        os.kill(pid, signal.SIGKILL)
        th.join(10)
        st, o = res.get("r", (0, {}))
        check(st == 503 and o.get("error", {}).get("code") == "WORKER_LOST",
              "a worker killed under a request: 503 WORKER_LOST: %d %r" % (st, o))
        end = time.time() + 20
        while time.time() < end and tok(content="x")[0] != 200:
            time.sleep(0.2)
        check(tok(content="x")[0] == 200, "the restarted worker answers")
    finally:
        p.stop()


o = orchd_lib.OrchdProc(BIN, conf="max_prompt_chars = 4096\n", seed=53, ready_s=90, more=more)
try:
    test_goldens("q", "qwen2")
    if HAVE_OSS:
        test_goldens("oss", "gpt-oss")
    test_strings_and_special()
    test_bos_and_counts()
    test_chat()
    test_refused()
finally:
    o.stop()
test_one_model()
print("orchd_tokenize_test: %d passed, %d failed" % (orchd_lib.passed, orchd_lib.failed))
sys.exit(1 if orchd_lib.failed else 0)
