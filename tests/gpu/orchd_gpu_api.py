#!/usr/bin/env python3
"""orchd_gpu_api.py PORT RUNDIR - the OpenAI surface beyond the plain device
sampler (issue 20) on a cuda:0 worker, run by tests/gpu/run.sh orchd after
orchd_gpu.py: logprobs take the logits row to the host; a grammar, logit_bias
and the penalties run in the device sampler; each is checked where only a GPU
runs it.

- logprobs against llama.cpp's golden logits of stories260K (the greedy
  tokens, each token's log-softmax within the GPU's tolerance);
- logit_bias: banning the greedy first token changes it; +100 on a token
  makes it the first;
- presence_penalty 2 at temperature 0 changes a repetitive greedy text;
- a GBNF grammar and response_format json_object on stories: the output is a
  sentence of the grammar, a JSON object;
- with gpt-oss tiny on cuda:0 too (model "oss", when run.sh configured it):
  a json_schema answer after an optional analysis, and a forced tool call,
  both valid (<|end|>'s logit raised so that the random model ends its
  analysis).
Prints what it saw; exits 1 on the first thing that is wrong."""
import json
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import orchd_lib as L  # noqa: E402

L.PORT, rundir = int(sys.argv[1]), sys.argv[2]
L.ADMIN = os.path.join(rundir, "orchd.sock")
DATA = os.environ.get("ORCH_TESTDATA", "")
TOL = 2e-3  # a log-softmax on an F32 model: the GPU's float sums against llama.cpp's


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def post(path, body):
    st, _, t = L.post(path, body)
    return st, (json.loads(t) if t.startswith("{") else t)


def native_tokens(body):
    native_tokens.n = getattr(native_tokens, "n", 0) + 1
    st, _, t = L.post("/execute", dict({"job_id": "gpu-api-%d" % native_tokens.n, "model": "stories"}, **body))
    if st != 200:
        fail(f"/execute: HTTP {st} {t[:300]!r}")
    evs = [(e["event"], json.loads(e["data"])) for e in L.sse_events(t)]
    errs = [d for k, d in evs if k == "error"]
    if errs:
        fail(f"/execute error: {errs[0]}")
    return [d for k, d in evs if k == "token" and "token_id" in d]


def log_softmax(v, i):
    m = max(v)
    return v[i] - (m + math.log(sum(math.exp(x - m) for x in v)))


def check_logprobs():
    path = os.path.join(DATA, "models", "golden-stories260K.json")
    if not os.path.isfile(path):
        print("logprobs: no golden-stories260K.json in ORCH_TESTDATA: not checked")
        return None
    golden = json.load(open(path))["cases"][0]
    toks = native_tokens({"prompt": golden["prompt"], "max_tokens": 32, "temperature": 0,
                          "logprobs": True, "top_logprobs": 3})
    ids = [x["token_id"] for x in toks]
    if ids != golden["generated_tokens"][:len(ids)] or len(ids) < 16:
        fail(f"logprobs: greedy tokens {ids[:12]} differ from llama.cpp's {golden['generated_tokens'][:12]}")
    worst = 0.0
    for step in golden["steps"]:
        k = step["step"]
        if k < len(toks) and "logits" in step:
            worst = max(worst, abs(toks[k]["logprob"] - log_softmax(step["logits"], step["token"])))
            if toks[k]["top_logprobs"][0]["token_id"] != toks[k]["token_id"]:
                fail(f"logprobs: step {k}: the chosen token does not lead its alternatives")
    if worst > TOL:
        fail(f"logprobs: worst |logprob - golden| {worst:.2e} over {TOL}")
    print(f"logprobs: {len(ids)} golden greedy tokens, worst |logprob - golden| {worst:.2e}")
    return golden


def check_bias(golden):
    prompt = golden["prompt"] if golden else "Once upon a time"
    first = native_tokens({"prompt": prompt, "max_tokens": 1, "temperature": 0, "logprobs": True})[0]
    banned = native_tokens({"prompt": prompt, "max_tokens": 1, "temperature": 0, "logprobs": True,
                            "logit_bias": {str(first["token_id"]): -100}})[0]
    if banned["token_id"] == first["token_id"]:
        fail(f"logit_bias -100 on the greedy token {first['token_id']} did not change it")
    forced = native_tokens({"prompt": prompt, "max_tokens": 1, "temperature": 0, "logprobs": True,
                            "logit_bias": {"300": 100}})[0]
    if forced["token_id"] != 300:
        fail(f"logit_bias +100 on token 300 gave {forced['token_id']}")
    print(f"logit_bias: ban {first['token_id']} -> {banned['token_id']}, +100 -> 300")


def check_penalty():
    body = {"model": "stories", "prompt": "Once upon a time", "max_tokens": 48, "temperature": 0}
    st, plain = post("/v1/completions", body)
    st2, pen = post("/v1/completions", dict(body, presence_penalty=2.0))
    if st != 200 or st2 != 200:
        fail(f"penalty: HTTP {st} {st2}")
    a, b = plain["choices"][0]["text"], pen["choices"][0]["text"]
    if a == b:
        fail(f"presence_penalty 2 left the greedy text as it was: {a[:80]!r}")
    print(f"presence_penalty: {a[:40]!r} -> {b[:40]!r}")


def check_grammar():
    gr = 'root ::= "there was a " ("cat" | "dog" | "bird") "."'  # SPM: no space first
    for seed in range(3):
        st, r = post("/v1/completions", {"model": "stories", "prompt": "Once upon a time,", "max_tokens": 32,
                                         "temperature": 1, "seed": seed, "grammar": gr})
        c = r["choices"][0] if st == 200 else {}
        if c.get("text") not in ("there was a cat.", "there was a dog.", "there was a bird.") \
                or c.get("finish_reason") != "stop":
            fail(f"grammar on cuda: {st} {r!r}"[:400])
    objects = 0
    for seed in range(4):
        st, r = post("/v1/completions", {"model": "stories", "prompt": "{", "max_tokens": 300, "temperature": 1,
                                         "seed": seed, "response_format": {"type": "json_object"}})
        c = r["choices"][0] if st == 200 else {}
        if c.get("finish_reason") == "stop":
            if not isinstance(json.loads(c["text"]), dict):
                fail(f"json_object on cuda: not an object: {c['text'][:200]!r}")
            objects += 1
        elif c.get("finish_reason") != "length":
            fail(f"json_object on cuda: {st} {r!r}"[:400])
    print(f"grammar on cuda: 3 sentences of the grammar; json_object {objects}/4 complete objects")


def check_harmony():
    st, _, t = L.get("/v1/models/oss")
    if st != 200:
        print("harmony: no model 'oss' configured (no gpt-oss tiny carried): not checked")
        return
    st, tk = post("/tokenize", {"model": "oss", "content": "<|end|>"})
    bias = {str(tk["tokens"][0]): 12}
    schema = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string", "maxLength": 8}},
              "required": ["a", "b"], "additionalProperties": False}
    done = 0
    for seed in range(6):
        st, r = post("/v1/chat/completions", {
            "model": "oss", "messages": [{"role": "user", "content": "json"}], "max_tokens": 400,
            "temperature": 1, "seed": seed, "logit_bias": bias,
            "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}})
        c = r["choices"][0] if st == 200 else {}
        if c.get("finish_reason") == "stop":
            v = json.loads(c["message"]["content"])
            if set(v) != {"a", "b"} or not isinstance(v["a"], int) or len(v["b"]) > 8:
                fail(f"harmony json_schema on cuda: {v!r}")
            done += 1
        elif c.get("finish_reason") != "length":
            fail(f"harmony json_schema on cuda: {st} {r!r}"[:400])
    tools = [{"type": "function", "function": {"name": "f", "description": "d", "parameters": {
        "type": "object", "properties": {"q": {"type": "string", "maxLength": 6}}, "required": ["q"]}}}]
    st, r = post("/v1/chat/completions", {"model": "oss", "messages": [{"role": "user", "content": "go"}],
                                          "max_tokens": 400, "seed": 1, "logit_bias": bias, "tools": tools,
                                          "tool_choice": "required"})
    c = r["choices"][0] if st == 200 else {}
    if c.get("finish_reason") == "tool_calls":
        args = json.loads(c["message"]["tool_calls"][0]["function"]["arguments"])
        if set(args) != {"q"}:
            fail(f"harmony forced call on cuda: {args!r}")
    elif c.get("finish_reason") != "length":
        fail(f"harmony forced call on cuda: {st} {r!r}"[:400])
    print(f"harmony on cuda: json_schema {done}/6 complete and valid; forced call {c.get('finish_reason')}")


golden = check_logprobs()
check_bias(golden)
check_penalty()
check_grammar()
check_harmony()
print("the OpenAI surface on cuda:0: ok")
