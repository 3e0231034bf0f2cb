#!/usr/bin/env python3
"""orchd_echo_test - completions' echo with logprobs: the prompt's own
log-probabilities (issue 20), as lm-evaluation-harness asks for them
(prompt as token ids, echo, max_tokens 0, logprobs 1), on stories260K
against llama.cpp's golden logits.

- lm-eval's request: the text is the prompt's, every prompt token listed,
  the first with a null logprob and null alternatives, finish_reason
  "length", no completion tokens; the tokens joined are the text and the
  offsets add up;
- against the goldens: a prompt of the golden prompt plus its first two
  greedy tokens gives those two tokens the log-probabilities of the
  golden logits (steps 0 and 1), and their five alternatives;
- each prompt position's distribution is the one a request whose prompt
  ends there samples its first token from (top_logprobs 5, three cut
  points), and the same again when the prefix cache holds the prompt;
- a text prompt with generated tokens: the prompt's entries, then the
  generated ones, whose offsets count the echoed prompt; streamed, the
  first chunk is the prompt with its entries and the chunks join into the
  same answer;
- a completion keeps the space its first token starts with (an SPM model:
  "Once upon" goes on " a time"; echoed, "Once upon a time"); a chat
  answer drops it;
- two prompts of token ids: two choices, each its own prompt;
- echo of token ids without logprobs: the detokenized prompt;
- refused: max_tokens 0 without echo, on chat."""
import json
import math
import os
import sys

BIN = os.environ["ORCH_BIN"]
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import orchd_lib  # noqa: E402
from orchd_lib import check, post, sse_events  # noqa: E402
DATA = orchd_lib.testdata("models/golden-stories260K.json", "models/stories260K.gguf")
GOLDEN = json.load(open(os.path.join(DATA, "models", "golden-stories260K.json")))["cases"][0]
STORIES = os.path.join(HERE, "..", "..", "models", "stories260K.gguf")
TOL = 2e-3  # the golden steps 0 and 1 (orchd_logprobs_test)


def cmpl(**kw):
    body = dict({"model": "s", "temperature": 0}, **kw)
    st, _, t = post("/v1/completions", body)
    if kw.get("stream"):
        return st, [json.loads(e["data"]) for e in sse_events(t) if e["data"] != "[DONE]"], t
    return st, (json.loads(t) if st in (200, 400) else t), t


def log_softmax(v, i):
    m = max(v)
    return v[i] - (m + math.log(sum(math.exp(x - m) for x in v)))


def offsets_add_up(lp, text):
    """The tokens joined are @text and each offset is the length before it."""
    at, ok = 0, "".join(lp["tokens"]) == text
    for tok, off in zip(lp["tokens"], lp["text_offset"]):
        ok = ok and off == at
        at += len(tok)
    return ok


def test_lm_eval():
    ids = GOLDEN["prompt_tokens"]
    st, o, t = cmpl(prompt=ids, echo=True, max_tokens=0, logprobs=1)
    c = o["choices"][0] if st == 200 else {}
    lp = c.get("logprobs") or {}
    check(st == 200 and c["finish_reason"] == "length" and o["usage"]["completion_tokens"] == 0 and
          o["usage"]["prompt_tokens"] == len(ids), "lm-eval's request answered: %s" % t[:400])
    check(len(lp.get("tokens", [])) == len(ids) and lp["token_logprobs"][0] is None and
          lp["top_logprobs"][0] is None and all(x is not None and x <= 0 for x in lp["token_logprobs"][1:]),
          "every prompt token, the first without a logprob: %s" % t[:400])
    check(all(len(a) in (1, 2) for a in lp.get("top_logprobs", [None])[1:]),
          "one alternative a position (and the token itself): %s" % t[:300])
    check(c.get("text") == "".join(lp.get("tokens", [])) and offsets_add_up(lp, c["text"]) and
          c["text"].startswith("<s>") and GOLDEN["prompt"] in c["text"],
          "the text is the prompt's (control tokens shown), offsets add up: %r" % c.get("text"))


def test_golden():
    p, g = GOLDEN["prompt_tokens"], GOLDEN["generated_tokens"]
    st, o, t = cmpl(prompt=p + g[:2], echo=True, max_tokens=0, logprobs=5)
    lp = o["choices"][0]["logprobs"] if st == 200 else {}
    worst = 0
    for k in range(2):
        step = GOLDEN["steps"][k]
        want = log_softmax(step["logits"], step["token"])
        got = lp["token_logprobs"][len(p) + k] if lp else None
        worst = max(worst, abs(got - want)) if got is not None else 1
        alts = lp["top_logprobs"][len(p) + k] if lp else {}
        order = sorted(range(len(step["logits"])), key=lambda i: -step["logits"][i])[:5]
        check(len(alts) == 5 and all(abs(a - log_softmax(step["logits"], order[i])) < TOL
                                     for i, a in enumerate(sorted(alts.values(), reverse=True))),
              "golden step %d: the five alternatives' logprobs: %r" % (k, alts))
    check(worst < TOL, "golden steps 0 and 1 as prompt tokens: worst difference %.3g" % worst)
    print("golden: prompt positions %d and %d within %.3g of llama.cpp" % (len(p), len(p) + 1, worst))


def test_control_alternatives():
    # a control token among a prompt position's alternatives is spelled as the prompt's own
    # tokens are ("<s>"), once, not also as ""
    ids = GOLDEN["prompt_tokens"] + GOLDEN["generated_tokens"][:18] + [1]
    st, o, t = cmpl(prompt=ids, echo=True, max_tokens=0, logprobs=20)
    tops = o["choices"][0]["logprobs"]["top_logprobs"][1:] if st == 200 else [{"": 0}]
    check(all("" not in a and len(a) <= 21 for a in tops) and "<s>" in tops[-1],
          "control tokens among the alternatives: one spelling: %r" % tops[-1])


def test_positions():
    ids = GOLDEN["prompt_tokens"] + GOLDEN["generated_tokens"][:12]
    runs = []
    for _ in range(2):  # the second finds the prompt in the prefix cache: not used
        st, o, t = cmpl(prompt=ids, echo=True, max_tokens=0, logprobs=5)
        runs.append(o["choices"][0]["logprobs"] if st == 200 else None)
    check(runs[0] is not None and runs[0] == runs[1], "the same with the prompt cached")
    for cut in (3, len(GOLDEN["prompt_tokens"]), len(ids) - 1):
        st, o, t = cmpl(prompt=ids[:cut], max_tokens=1, logprobs=5)
        gen = o["choices"][0]["logprobs"] if st == 200 else {}
        want, got = gen.get("top_logprobs", [{}])[0], runs[0]["top_logprobs"][cut] if runs[0] else {}
        same = set(want) == set(got) and all(abs(want[k] - got[k]) < 1e-4 for k in want)
        check(same and ids[cut] is not None,
              "position %d's distribution is that of a prompt ending there: %r vs %r" % (cut, got, want))


def test_text_prompt():
    prompt = "Once upon a time"
    st, o, t = cmpl(prompt=prompt, echo=True, max_tokens=6, logprobs=2)
    c = o["choices"][0] if st == 200 else {}
    lp = c.get("logprobs") or {}
    n_prompt = o["usage"]["prompt_tokens"] if st == 200 else 0
    check(st == 200 and c["text"].startswith(prompt) and len(lp["tokens"]) == n_prompt + 6 and
          lp["token_logprobs"][0] is None and "".join(lp["tokens"][n_prompt:]) == c["text"][len(prompt):],
          "a text prompt: its entries, then the generated ones: %s" % t[:500])
    check(offsets_add_up(lp, "".join(lp.get("tokens", []))),
          "offsets count the tokens' strings, prompt first, as vLLM's: %r" % lp.get("text_offset"))
    st, chunks, raw = cmpl(prompt=prompt, echo=True, max_tokens=6, logprobs=2, stream=True)
    first = chunks[0]["choices"][0] if chunks else {}
    joined = {"tokens": [], "token_logprobs": [], "top_logprobs": [], "text_offset": []}
    for ch in chunks:
        for x in ch["choices"]:
            for k in joined:
                joined[k] += (x.get("logprobs") or {}).get(k, [])
    check(st == 200 and first.get("text") == prompt and len(first["logprobs"]["tokens"]) == n_prompt and
          "".join(x["text"] for ch in chunks for x in ch["choices"]) == c.get("text") and joined == lp,
          "streamed: the prompt first with its entries, the same answer joined: %s" % raw[:500])


def test_space_kept():
    st, o, t = cmpl(prompt="Once upon", max_tokens=2)
    check(st == 200 and o["choices"][0]["text"] == " a time",
          "a completion keeps its first token's space (SPM): %s" % t[:300])
    st, o, t = cmpl(prompt="Once upon", max_tokens=2, echo=True)
    check(st == 200 and o["choices"][0]["text"] == "Once upon a time", "and its echo reads on: %s" % t[:300])
    st, _, t = post("/v1/chat/completions", {"model": "s", "messages": [{"role": "user", "content": "Hi"}],
                                             "max_tokens": 3, "temperature": 0})
    c = json.loads(t)["choices"][0]["message"]["content"] if st == 200 else " "
    check(st == 200 and not c.startswith(" "), "a chat answer still drops it: %r" % c)


def test_lists():
    p = GOLDEN["prompt_tokens"]
    st, o, t = cmpl(prompt=[p, p[:4]], echo=True, max_tokens=0, logprobs=1)
    cs = o.get("choices", []) if st == 200 else []
    check(len(cs) == 2 and [len(c["logprobs"]["tokens"]) for c in cs] == [len(p), 4] and
          cs[0]["text"].startswith(cs[1]["text"]), "two token-id prompts, two echoes: %s" % t[:400])
    st, o, t = cmpl(prompt=p, echo=True, max_tokens=3)
    c = o["choices"][0] if st == 200 else {}
    check(st == 200 and c["logprobs"] is None and GOLDEN["prompt"] in c["text"] and
          c["text"].startswith("<s>"), "echo of token ids without logprobs: %s" % t[:300])


def test_refused():
    st, o, t = cmpl(prompt="x", max_tokens=0)
    check(st == 400 and o["error"]["param"] == "max_tokens", "max_tokens 0 without echo: %s" % t[:300])
    st, _, t = post("/v1/chat/completions", {"model": "s", "messages": [{"role": "user", "content": "x"}],
                                             "max_tokens": 0})
    check(st == 400 and "max_tokens" in t, "max_tokens 0 on chat: %s" % t[:300])


def more(tmp):
    return '[model "s"]\npath = %s\ndevice = cpu\nslots = 2\nthreads = 1\ncontext = 256\n' % STORIES


o = orchd_lib.OrchdProc(BIN, seed=41, ready_s=60, more=more)
try:
    test_lm_eval()
    test_golden()
    test_control_alternatives()
    test_positions()
    test_text_prompt()
    test_space_kept()
    test_lists()
    test_refused()
finally:
    o.stop()
print("orchd_echo_test: %d passed, %d failed" % (orchd_lib.passed, orchd_lib.failed))
sys.exit(1 if orchd_lib.failed else 0)
