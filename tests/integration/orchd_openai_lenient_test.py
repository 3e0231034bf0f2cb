#!/usr/bin/env python3
"""orchd_openai_lenient_test - the OpenAI field table, the one max_tokens rule,
the configurable message limit and a non-streamed request's disconnect
(issue 18), against a real orchd serving the repository's own model
(models/stories260K.gguf, context 256, on the cpu device):

- fields SDKs send that cannot change the answer (store, metadata,
  service_tier, response_format text, user, prediction,
  modalities ["text"], stream_options.include_obfuscation) are accepted and
  named once in a debug log line; those that would change it (n 2,
  a json_schema with a keyword orch cannot enforce, web_search_options,
  audio modalities, functions) and unknown ones are a 400 naming the field;
- logit_bias, presence_penalty and frequency_penalty work (bans, lifts, a
  greedy answer pushed off a repeated token) in /v1/* and /execute, and bad
  values are a 400 naming them;
- max_tokens: a prompt plus a given max_tokens over the context is
  CONTEXT_LENGTH_EXCEEDED with both numbers, in /execute and /v1/*, streamed
  (an error event) and not (HTTP 400); one that alone fills the context is
  refused before any stream; an omitted one runs until the context is full;
- max_chat_messages: its value + 1 messages is a 400 naming it, 65 (the old
  fixed cap + 1) are not refused for their number;
- a non-streamed request whose client goes away cancels its job;
- the official openai npm client sends store/metadata/service_tier and gets
  its answer (tests/interop/lenient_client.mjs)."""
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

BIN = os.environ["ORCH_BIN"]
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
MODEL = os.path.join(ROOT, "models", "stories260K.gguf")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import orchd_lib  # noqa: E402
from orchd_lib import metric  # noqa: E402
from orchd_lib import JSON_CT, check, conn, get, post, sse_events  # noqa: E402

CTX = 256
LIMIT = 100


def err_of(st, text, code, param=None):
    """The error object of a refusal with HTTP status @st, checked to have @code and @param."""
    try:
        e = json.loads(text)["error"]
    except (ValueError, KeyError, TypeError):
        return None
    ok = e.get("code") == code and all(k in e for k in ("message", "param", "type", "retriable"))
    if param is not None:
        ok = ok and e.get("param") == param
    return e if ok and st in (400, 404) else None


def chat(extra, n=1):
    body = {"model": "a", "messages": [{"role": "user", "content": "Hi"}] * n, "max_tokens": 4,
            "temperature": 0}
    body.update(extra)
    return post("/v1/chat/completions", body)


def test_fields(log_text):
    harmless = {"store": True, "metadata": {"k": "v"}, "service_tier": "auto",
                "parallel_tool_calls": False, "response_format": {"type": "text"},
                "user": "u1", "prediction": {"type": "content", "content": "x"},
                "modalities": ["text"], "prompt_cache_key": "k", "safety_identifier": "s",
                "n": 1, "logprobs": False, "presence_penalty": 0, "logit_bias": {}}
    st, _, t = chat(harmless)
    check(st == 200 and json.loads(t)["choices"][0]["message"]["role"] == "assistant",
          "harmless OpenAI fields accepted: %d %s" % (st, t[:300]))
    st, _, t = chat({"stream": True, "stream_options": {"include_usage": True,
                                                        "include_obfuscation": False}, "store": False})
    check(st == 200 and "[DONE]" in t and '"usage"' in t, "stream_options.include_obfuscation ignored: %s" % t[-200:])
    st, _, t = post("/v1/completions", {"model": "a", "prompt": "Once", "max_tokens": 4, "store": True,
                                        "metadata": {"a": "b"}, "service_tier": "default", "user": "x",
                                        "suffix": "", "echo": False, "best_of": 1})
    check(st == 200, "completions take store, metadata, service_tier: %d %s" % (st, t[:200]))
    lines = [l for l in log_text().splitlines() if "event=request_fields_ignored" in l]
    want = "fields=user,store,metadata,service_tier,prediction,prompt_cache_key,safety_identifier"  # the table's order
    check(any(want in l and "job=" in l for l in lines), "one debug line names the ignored fields: %r" % lines[:3])
    refused = [({"n": 0}, "n", "[1, 64]"),
               ({"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"contains": {}, "maxContains": 1}}}},
                "response_format", "unsupported keyword 'maxContains'"),
               ({"response_format": {"type": "xml"}}, "response_format", "unknown"),
               ({"logit_bias": {"x": 5}}, "logit_bias", "token ids"),
               ({"logit_bias": {"1": 500}}, "logit_bias", "[-100, 100]"),
               ({"logit_bias": [1]}, "logit_bias", "object"),
               ({"web_search_options": {}}, "web_search_options", "web search"),
               ({"modalities": ["text", "audio"]}, "modalities", "audio"),
               ({"audio": {"voice": "alloy", "format": "wav"}}, "audio", "default"),
               ({"functions": [{"name": "f"}]}, "functions", "tools"),
               ({"presence_penalty": 2.5}, "presence_penalty", "[-2, 2]"),
               ({"frequency_penalty": "x"}, "frequency_penalty", "number"),
               ({"temprature": 0.5}, "temprature", "unsupported parameter")]
    for extra, param, words in refused:
        st, _, t = chat(extra)
        e = err_of(st, t, "INVALID_REQUEST", param)
        check(st == 400 and e is not None and words in e["message"],
              "%s refused naming it (%s): %d %s" % (param, words, st, t[:300]))


def completion(extra):
    body = {"model": "a", "prompt": "Once upon a time", "max_tokens": 1, "temperature": 0}
    body.update(extra)
    st, _, t = post("/v1/completions", body)
    check(st == 200, "completion %s: %d %s" % (list(extra), st, t[:300]))
    return json.loads(t)["choices"][0]["text"]


def test_bias_penalties():
    """logit_bias bans (-100) and lifts; presence/frequency penalties push a
    greedy answer off a token it repeats; a token id outside the vocabulary
    is a 400 from the worker. stories260K has 512 tokens."""
    def all_but(*keep):
        return {str(i): -100 for i in range(512) if i not in keep}

    def bare(text):  # an SPM answer's first token loses its leading space
        return text.replace(" ", "")
    p1, p2 = completion({"logit_bias": all_but(300)}), completion({"logit_bias": all_but(301)})
    check(p1 and p2 and p1 not in p2 and p2 not in p1, "two distinct pieces: %r %r" % (p1, p2))
    banned = completion({"logit_bias": all_but(300), "max_tokens": 4})
    check(bare(banned) == bare(p1) * 4, "every other token banned: the one left, 4 times: %r" % banned)
    lifted = completion({"logit_bias": {"300": 100}, "max_tokens": 4})
    check(bare(lifted) == bare(p1) * 4, "+100 lifts a token over the rest: %r" % lifted)
    both = all_but(300, 301)
    plain = completion({"logit_bias": both, "max_tokens": 16})
    pen = completion({"logit_bias": both, "max_tokens": 16, "presence_penalty": 2, "frequency_penalty": 2})
    check(bare(p1) in bare(pen) and bare(p2) in bare(pen), "penalties alternate the two allowed tokens: %r (without: %r)" % (pen, plain))
    st, _, t = post("/v1/completions", {"model": "a", "prompt": "x", "max_tokens": 2,
                                        "logit_bias": {"99999": 3}})
    check(st == 400 and "not in the model's vocabulary" in t and "511" in t,
          "a token outside the vocabulary is a 400: %d %s" % (st, t[:300]))
    st, _, t = post("/execute", {"job_id": "bias1", "model": "a", "prompt": "Once upon a time",
                                 "max_tokens": 4, "temperature": 0, "logit_bias": all_but(300),
                                 "presence_penalty": 0, "frequency_penalty": 0})
    toks = "".join(json.loads(e["data"]).get("t", "") for e in sse_events(t) if e["event"] == "token")
    check(st == 200 and bare(toks) == bare(p1) * 4, "native /execute takes logit_bias: %r" % toks)


def test_ignore_eos():
    """ignore_eos (llama-server's and vLLM's field, for benchmarks): the end of
    generation is banned, so a job runs to max_tokens, even where logit_bias
    makes it the likeliest token; stories260K's is token 2."""
    body = {"model": "a", "prompt": "Once upon a time", "max_tokens": 4, "temperature": 0,
            "logit_bias": {"2": 100}}
    st, _, t = post("/v1/completions", body)
    ch = json.loads(t)["choices"][0] if st == 200 else {}
    check(ch.get("finish_reason") == "stop" and ch.get("text") == "",
          "eos lifted: the job ends at once: %d %s" % (st, t[:300]))
    body["ignore_eos"] = True
    st, _, t = post("/v1/completions", body)
    r = json.loads(t) if st == 200 else {}
    check(st == 200 and r["choices"][0]["finish_reason"] == "length" and r["usage"]["completion_tokens"] == 4,
          "ignore_eos: four tokens, finish length: %d %s" % (st, t[:300]))
    st, _, t = chat({"ignore_eos": True, "logit_bias": {"2": 100}, "max_tokens": 3})
    r = json.loads(t) if st == 200 else {}
    check(st == 200 and r["choices"][0]["finish_reason"] == "length" and r["usage"]["completion_tokens"] == 3,
          "chat takes ignore_eos: %d %s" % (st, t[:300]))
    st, _, t = post("/execute", {"job_id": "noeos", "model": "a", "prompt": "Once", "max_tokens": 5,
                                 "temperature": 0, "logit_bias": {"2": 100}, "ignore_eos": True})
    n = sum(1 for e in sse_events(t) if e["event"] == "token")
    check(st == 200 and n == 5, "native /execute takes ignore_eos: %d tokens: %s" % (n, t[-300:]))
    st, _, t = chat({"ignore_eos": "yes"})
    e = err_of(st, t, "INVALID_REQUEST", "ignore_eos")
    check(st == 400 and e is not None and "true or false" in e["message"],
          "ignore_eos must be a boolean: %d %s" % (st, t[:300]))


def test_max_tokens():
    prompt = "Once upon a time there was a little girl"
    # a prompt plus a given max_tokens over the context, non-streamed: HTTP 400 with both numbers
    for path, body in (("/v1/completions", {"prompt": prompt}),
                       ("/v1/chat/completions", {"messages": [{"role": "user", "content": prompt}]})):
        body.update({"model": "a", "max_tokens": CTX - 2})
        st, _, t = post(path, body)
        e = err_of(st, t, "CONTEXT_LENGTH_EXCEEDED")
        check(st == 400 and e is not None and ("max_tokens %d" % (CTX - 2)) in e["message"]
              and ("context of %d" % CTX) in e["message"] and "prompt of " in e["message"]
              and "correlation_id" in e, "%s: prompt + max_tokens over the context: %d %s" % (path, st, t[:300]))
        # streamed: the same 400, the stream's head held until the worker's refusal
        # came (as vLLM answers before it streams; before, a 200 and an error chunk)
        body["stream"] = True
        st, _, t = post(path, body)
        e = err_of(st, t, "CONTEXT_LENGTH_EXCEEDED")
        check(st == 400 and e is not None and ("max_tokens %d" % (CTX - 2)) in e["message"],
              "%s streamed: the same 400: %d %s" % (path, st, t[-400:]))
        # max_tokens alone fills the context: refused before any stream
        body["max_tokens"] = CTX
        st, _, t = post(path, body)
        e = err_of(st, t, "CONTEXT_LENGTH_EXCEEDED", "max_tokens")
        check(st == 400 and e is not None and ("context of %d" % CTX) in e["message"],
              "%s streamed, max_tokens = context: HTTP 400 before the stream: %d %s" % (path, st, t[:300]))
    # the native API: the same rule
    st, _, t = post("/execute", {"job_id": "big", "model": "a", "prompt": prompt, "max_tokens": CTX - 2})
    evs = sse_events(t)
    check(st == 200 and [e["event"] for e in evs] == ["started", "error"]
          and json.loads(evs[1]["data"])["code"] == "CONTEXT_LENGTH_EXCEEDED"
          and ("max_tokens %d" % (CTX - 2)) in json.loads(evs[1]["data"])["message"],
          "/execute: started then CONTEXT_LENGTH_EXCEEDED: %s" % t[-400:])
    st, _, t = post("/execute", {"job_id": "big2", "model": "a", "prompt": prompt, "max_tokens": CTX + 10})
    check(st == 400 and err_of(st, t, "CONTEXT_LENGTH_EXCEEDED", "max_tokens") is not None,
          "/execute: max_tokens over the context: HTTP 400: %d %s" % (st, t[:300]))
    # fits exactly: served
    st, _, t = post("/v1/completions", {"model": "a", "prompt": prompt, "max_tokens": 8, "temperature": 0})
    u = json.loads(t).get("usage", {}) if st == 200 else {}
    check(st == 200 and u.get("completion_tokens", 0) > 0, "a max_tokens that fits: %d %s" % (st, t[:200]))
    # omitted: until the context is full (or the model ends)
    st, _, t = post("/v1/chat/completions", {"model": "a", "temperature": 1, "seed": 3,
                                             "messages": [{"role": "user", "content": prompt}]})
    o = json.loads(t) if st == 200 else {}
    u = o.get("usage", {})
    fin = o.get("choices", [{}])[0].get("finish_reason")
    check(st == 200 and u.get("total_tokens", 0) <= CTX
          and (fin != "length" or u["total_tokens"] >= CTX - 1),
          "chat without max_tokens runs to the context: %s %r" % (fin, u))


def test_messages():
    st, _, t = chat({}, LIMIT + 1)
    e = err_of(st, t, "INVALID_REQUEST", "messages")
    check(st == 400 and e is not None and str(LIMIT) in e["message"] and "max_chat_messages" in e["message"],
          "limit + 1 messages refused naming the limit and the key: %d %s" % (st, t[:300]))
    st, _, t = chat({}, 65)
    e = json.loads(t).get("error", {}) if st != 200 else {}
    check(st == 200 or (e.get("code") == "CONTEXT_LENGTH_EXCEEDED" and "max_chat_messages" not in e["message"]),
          "65 messages are not refused for their number: %d %s" % (st, t[:300]))


def test_disconnect():
    """A non-streamed request whose client goes away: its job is cancelled in the worker."""
    pid = json.loads(get("/health")[2])["models"]["a"]["workers"][0]["pid"]
    before = metric("orch_client_cancellations_total", {"model": "a"})
    os.kill(pid, signal.SIGSTOP)
    try:
        c = conn()
        c.request("POST", "/v1/completions", json.dumps({"model": "a", "prompt": "Once upon a time",
                                                         "max_tokens": 200}), JSON_CT)
        time.sleep(0.3)
        c.sock.shutdown(socket.SHUT_RDWR)
        c.close()
        time.sleep(0.3)
    finally:
        os.kill(pid, signal.SIGCONT)
    end = time.time() + 5
    while time.time() < end and metric("orch_client_cancellations_total", {"model": "a"}) < before + 1:
        time.sleep(0.05)
    check(metric("orch_client_cancellations_total", {"model": "a"}) == before + 1,
          "a non-streamed request's disconnect cancels its job")
    end = time.time() + 5  # the worker ends the job once it runs again
    while time.time() < end and metric("orch_requests_total", {"model": "a", "outcome": "CANCELLED"}) < 1:
        time.sleep(0.05)
    check(metric("orch_requests_total", {"model": "a", "outcome": "CANCELLED"}) >= 1,
          "the job ended CANCELLED")


def test_npm():
    interop = os.path.join(ROOT, "tests", "interop")
    if not os.path.isdir(os.path.join(interop, "node_modules", "openai")):
        check(False, "the openai npm package is not installed in tests/interop: run 'make deps'")
        return
    r = subprocess.run(["node", os.path.join(interop, "lenient_client.mjs"),
                        "http://127.0.0.1:%d/v1" % orchd_lib.PORT, "a"],
                       capture_output=True, text=True, timeout=120)
    check(r.returncode == 0 and "all passed" in r.stdout, "openai npm client: %s" % (r.stdout + r.stderr)[-2000:])


def main():
    tmp = tempfile.mkdtemp()
    orchd_lib.PORT = orchd_lib.free_port(os.getpid() * 5 + 77)
    conf = ("[server]\nlisten = 127.0.0.1:%d\nadmin_socket = %s\nruntime_dir = %s\nmax_chat_messages = %d\n"
            "[model \"a\"]\npath = %s\ndevice = cpu\nslots = 2\nthreads = 1\ncontext = %d\n"
            % (orchd_lib.PORT, os.path.join(tmp, "orchd.sock"), tmp, LIMIT, MODEL, CTX))
    p, log = orchd_lib.start_orchd(BIN, tmp, conf, ready_s=30, args=["--log-level", "debug"])

    def log_text():
        log.flush()
        return open(os.path.join(tmp, "orchd.log"), errors="replace").read()
    try:
        test_fields(log_text)
        test_bias_penalties()
        test_ignore_eos()
        test_max_tokens()
        test_messages()
        test_npm()
        test_disconnect()
    finally:
        orchd_lib.stop_orchd(p, log, tmp)
    print("orchd_openai_lenient_test: %d passed, %d failed" % (orchd_lib.passed, orchd_lib.failed))
    return 1 if orchd_lib.failed else 0


if __name__ == "__main__":
    sys.exit(main())
