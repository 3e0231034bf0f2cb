#!/usr/bin/env python3
"""orchd_choices_test - several choices and prompts in one OpenAI request
(issue 20): "n", "prompt" as a list, as token ids or a list of those, "echo";
stories260K, whose greedy text is llama.cpp's golden one.

- completions n 2 over two prompts: four choices in OpenAI's order (prompt
  by prompt), one id; with a seed, choice k is what a request alone with
  seed + k gives; usage counts each prompt once and every choice's tokens;
- streamed: each choice's chunks joined are its text, one usage chunk after
  the last choice ends, one [DONE];
- chat n 3: three messages, indexes 0-2;
- a prompt of token ids (the golden prompt's) gives the golden text, and a
  list of two token-id prompts two answers; /execute takes token ids too;
- echo: the prompt leads the text (first chunk when streamed);
- refusals (400 naming the parameter): n 0 and 65, n times the prompts over
  64, an empty prompt list, an empty or fractional token list, a token id
  outside the vocabulary (the worker's check: the whole request fails,
  nothing is left running). Echo with logprobs and of token ids:
  orchd_echo_test."""
import json
import os
import sys
import time

BIN = os.environ["ORCH_BIN"]
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import orchd_lib  # noqa: E402
from orchd_lib import check, get, post, sse_events  # noqa: E402
DATA = orchd_lib.testdata("models/golden-stories260K.json", "models/stories260K.gguf")
GOLDEN = json.load(open(os.path.join(DATA, "models", "golden-stories260K.json")))["cases"][0]
STORIES = os.path.join(HERE, "..", "..", "models", "stories260K.gguf")


def cmpl(**kw):
    body = dict({"model": "s", "max_tokens": 12, "temperature": 0}, **kw)
    st, _, t = post("/v1/completions", body)
    if kw.get("stream"):
        return st, [json.loads(e["data"]) for e in sse_events(t) if e["data"] != "[DONE]"], t
    return st, (json.loads(t) if st in (200, 400) else t), t


def test_lists():
    prompts = ["Once upon a time", "The dog"]
    st, o, _ = cmpl(prompt=prompts, n=2, temperature=0.9, seed=11)
    cs = o.get("choices", []) if st == 200 else []
    check(st == 200 and [c["index"] for c in cs] == [0, 1, 2, 3], "four choices in order: %s" % str(o)[:300])
    alone = []
    for k in range(4):
        s2, o2, _ = cmpl(prompt=prompts[k // 2], temperature=0.9, seed=11 + k)
        alone.append(o2["choices"][0]["text"] if s2 == 200 else None)
        check(s2 == 200 and cs and cs[k]["text"] == alone[k],
              "choice %d is the request alone with seed + %d: %r vs %r" % (k, k, cs[k]["text"] if cs else None, alone[k]))
    p = [cmpl(prompt=x, max_tokens=1)[1]["usage"]["prompt_tokens"] for x in prompts]
    u = o.get("usage", {})
    check(u.get("prompt_tokens") == sum(p) and u.get("completion_tokens") == 48 and
          u.get("total_tokens") == sum(p) + 48, "usage: each prompt once, every choice's tokens: %r" % u)
    st, chunks, raw = cmpl(prompt=prompts, n=2, temperature=0.9, seed=11, stream=True,
                           stream_options={"include_usage": True})
    texts, ends, usage = ["", "", "", ""], 0, [c["usage"] for c in chunks if c.get("usage")]
    for c in chunks:
        for ch in c["choices"]:
            texts[ch["index"]] += ch["text"]
            ends += ch["finish_reason"] is not None
    check(st == 200 and texts == alone and ends == 4 and len(usage) == 1 and usage[0] == u and
          not chunks[-1]["choices"] and raw.count("[DONE]") == 1 and len({c["id"] for c in chunks}) == 1,
          "streamed: choices joined, one usage chunk last, one [DONE], one id: %r %r" % (texts, usage))


def test_chat_n():
    st, _, t = post("/v1/chat/completions", {"model": "s", "messages": [{"role": "user", "content": "Hi"}],
                                             "n": 3, "max_tokens": 6, "seed": 2})
    o = json.loads(t) if st == 200 else {}
    cs = o.get("choices", [])
    check(st == 200 and [c["index"] for c in cs] == [0, 1, 2] and
          all(c["message"]["role"] == "assistant" for c in cs) and o["usage"]["completion_tokens"] == 18,
          "chat n 3: %s" % t[:400])


def test_token_ids():
    ids = GOLDEN["prompt_tokens"]
    st, o, t = cmpl(prompt=ids, max_tokens=20)
    check(st == 200 and GOLDEN["text"].startswith(o["choices"][0]["text"]) and
          o["usage"]["prompt_tokens"] == len(ids), "token-id prompt: the golden text: %s" % t[:300])
    st, o, t = cmpl(prompt=[ids, ids[:3]], max_tokens=4)
    check(st == 200 and len(o["choices"]) == 2 and o["usage"]["prompt_tokens"] == len(ids) + 3,
          "two token-id prompts: %s" % t[:300])
    # the native API takes them too, and OpenAI's "user"
    st, _, t = post("/execute", {"job_id": "ids", "model": "s", "prompt": ids, "max_tokens": 20,
                                 "temperature": 0, "user": "u-7"})
    ev = [(e["event"], json.loads(e["data"])) for e in sse_events(t)]
    text = "".join(d.get("t", "") for k, d in ev if k == "token")
    end = [d for k, d in ev if k == "end"]
    check(st == 200 and GOLDEN["text"].startswith(text) and text and end and
          end[0]["prompt_tokens"] == len(ids), "/execute token-id prompt: the golden text: %s" % t[-300:])
    st, _, t = post("/execute", {"job_id": "ids2", "model": "s", "prompt": [1, "x"]})
    check(st == 400 and json.loads(t)["error"]["param"] == "prompt", "/execute bad token ids: %s" % t[:300])


def test_echo():
    st, o, t = cmpl(prompt="Once upon a time", echo=True, max_tokens=8)
    check(st == 200 and o["choices"][0]["text"].startswith("Once upon a time, there"), "echo: %s" % t[:300])
    st, chunks, _ = cmpl(prompt="Once upon a time", echo=True, max_tokens=8, stream=True)
    check(st == 200 and chunks[0]["choices"][0]["text"] == "Once upon a time" and
          "".join(c["choices"][0]["text"] for c in chunks) == o["choices"][0]["text"], "echo streamed")


def test_refused():
    cases = [({"n": 0}, "n", "[1, 64]"), ({"n": 65}, "n", "[1, 64]"),
             ({"n": 33, "prompt": ["a", "b"]}, "n", "over 64"),
             ({"prompt": []}, "prompt", "1-"), ({"prompt": [[]]}, "prompt", "1-"),
             ({"prompt": [1.5]}, "prompt", "integers"), ({"prompt": [[1], "a", 3]}, "prompt", "array"),
             ({"echo": "yes"}, "echo", "true or false")]
    for extra, param, words in cases:
        body = dict({"prompt": "x"}, **extra)
        st, o, t = cmpl(**body)
        e = o.get("error", {}) if st == 400 else {}
        check(st == 400 and e.get("param") == param and words in e.get("message", ""),
              "%r refused naming %s: %d %s" % (extra, param, st, t[:300]))
    st, o, t = cmpl(prompt=[[1, 2], [1, 9999]], n=2, max_tokens=4)
    check(st == 400 and "vocabulary" in t, "a token outside the vocabulary fails the request: %d %s" % (st, t[:300]))
    for _ in range(50):  # the cancelled choices end as their worker's next step comes
        st, _, t = get("/metrics")
        busy = [l for l in t.splitlines() if l.startswith("orch_running_jobs") or l.startswith("orch_queue_depth")]
        if all(l.endswith(" 0") for l in busy):
            break
        time.sleep(0.1)
    check(len(busy) == 2 and all(l.endswith(" 0") for l in busy), "nothing left running: %r" % busy)


def more(tmp):
    return '[model "s"]\npath = %s\ndevice = cpu\nslots = 4\nthreads = 1\ncontext = 256\n' % STORIES


o = orchd_lib.OrchdProc(BIN, seed=37, ready_s=60, more=more)
try:
    test_lists()
    test_chat_n()
    test_token_ids()
    test_echo()
    test_refused()
finally:
    o.stop()
print("orchd_choices_test: %d passed, %d failed" % (orchd_lib.passed, orchd_lib.failed))
sys.exit(1 if orchd_lib.failed else 0)
