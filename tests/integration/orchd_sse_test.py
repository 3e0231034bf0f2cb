#!/usr/bin/env python3
"""orchd_sse_test - the native stream's contract (docs/http-api.md):

- a job the worker refuses after orchd admitted it (a prompt longer than the
  context) streams `started` then `error`, never an error alone;
- a request refused before admission (bad JSON, unknown model, a bad
  metrics_every, a full queue) gets an HTTP error with a JSON body, no stream;
- `started.started_at` is ISO 8601 UTC with milliseconds, `started_at_ms`
  the same instant; a resumed stream replays them unchanged;
- `end` carries tokens_out, prompt_tokens, cached_tokens, prefill_time_ms,
  decode_time_ms, finish_reason and seed;
- `metrics_every: N` adds a `metrics` event after every Nth token, and the
  text is the same as without it;
- an OpenAI stream refused by the worker before its first event: the head is held
  (up to a second) for it, so the answer is the 400 it is without stream."""
import datetime
import json
import os
import re
import signal
import sys
import tempfile
import time

BIN = os.environ["ORCH_BIN"]
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import orchd_lib  # noqa: E402
from orchd_lib import check, conn, post, get, sse_events, admin  # noqa: E402
DATA = orchd_lib.testdata("models/stories260K.gguf")
MODEL = os.path.join(DATA, "models", "stories260K.gguf")

tmp = tempfile.mkdtemp()
orchd_lib.PORT = orchd_lib.free_port(os.getpid() + 3)
orchd_lib.ADMIN = os.path.join(tmp, "orchd.sock")
ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def execute(body):
    st, hdr, text = post("/execute", body)
    return st, hdr, sse_events(text), text


def names(evs):
    return [e["event"] for e in evs]


def data(ev):
    return json.loads(ev["data"])


def refused_after_admission():
    long_prompt = "Once upon a time there was a little dog. " * 40  # well over 256 tokens
    st, hdr, evs, _ = execute({"job_id": "long", "model": "a", "prompt": long_prompt, "max_tokens": 4})
    check(st == 200 and hdr.get("Content-Type", "").startswith("text/event-stream"), "a stream: %s" % st)
    check(names(evs) == ["started", "error"], "started, then error: %r" % names(evs))
    check([e["id"] for e in evs] == [1, 2], "ids 1, 2")
    if names(evs) == ["started", "error"]:
        s, e = data(evs[0]), data(evs[1])
        check(s["job_id"] == "long" and s["model"] == "a" and s["prompt_tokens"] == 0
              and ISO.match(s["started_at"]), "the started event of a refused job: %r" % s)
        check(e["code"] == "CONTEXT_LENGTH_EXCEEDED" and e["retriable"] is False, "the error: %r" % e)
    st, _, t = post("/v1/chat/completions", {"model": "a", "stream": True, "max_tokens": 4,
                                             "messages": [{"role": "user", "content": long_prompt}]})
    err = json.loads(t).get("error", {}) if t.startswith("{") else {}
    check(st == 400 and err.get("code") == "CONTEXT_LENGTH_EXCEEDED",
          "OpenAI stream refused by the worker: its head held, a 400 as without stream: %d %r"
          % (st, t[:300]))


def refused_before_admission():
    cases = [("{not json", 400, "INVALID_REQUEST"),
             ({"job_id": "u", "model": "nope", "prompt": "hi"}, 404, "MODEL_NOT_FOUND"),
             ({"job_id": "m1", "model": "a", "prompt": "hi", "metrics_every": -1}, 400, "INVALID_REQUEST"),
             ({"job_id": "m2", "model": "a", "prompt": "hi", "metrics_every": 2.5}, 400, "INVALID_REQUEST"),
             ({"job_id": "m3", "model": "a", "prompt": "hi", "metrics_every": 70000}, 400, "INVALID_REQUEST")]
    for body, want, code in cases:
        st, hdr, _, text = execute(body)
        ok = st == want and hdr.get("Content-Type") == "application/json" and "event:" not in text
        check(ok and json.loads(text)["error"]["code"] == code, "refused before admission: %s %s" % (st, text[:120]))
    # queue full: the worker paused holds 4 jobs, orchd's queue 1, the next is 429, not a stream
    pid = [w["pid"] for w in json.loads(admin("GET", "/admin/workers")[1]) if w["model"] == "a"][0]
    os.kill(pid, signal.SIGSTOP)
    held = []
    for k in range(5):
        c = conn()
        c.request("POST", "/execute", json.dumps({"job_id": "q%d" % k, "model": "a", "prompt": "Once",
                                                  "max_tokens": 2}), orchd_lib.JSON_CT)
        held.append((c, c.getresponse()))
    st, hdr, _, text = execute({"job_id": "q-over", "model": "a", "prompt": "Once", "max_tokens": 2})
    check(st == 429 and hdr.get("Content-Type") == "application/json" and "event:" not in text
          and json.loads(text)["error"]["code"] == "QUEUE_FULL"
          and json.loads(text)["error"]["type"] == "rate_limit_error", "queue full: %s %s" % (st, text[:120]))
    c = conn()  # its status line's reason phrase is the standard one, not evhttp's "Client Error"
    c.request("POST", "/execute", json.dumps({"job_id": "q-over2", "model": "a", "prompt": "Once",
                                              "max_tokens": 2}), orchd_lib.JSON_CT)
    r = c.getresponse()
    r.read()
    check(r.status == 429 and r.reason == "Too Many Requests", "429's reason: %d %r" % (r.status, r.reason))
    c.close()
    os.kill(pid, signal.SIGCONT)
    for c, r in held:
        r.read()
        c.close()


def started_and_end():
    t0 = time.time()
    st, _, evs, _ = execute({"job_id": "e1", "model": "a", "prompt": "Once upon a time", "max_tokens": 12,
                             "temperature": 0, "seed": 9})
    t1 = time.time()
    check(st == 200 and names(evs)[0] == "started" and names(evs)[-1] == "end", "order: %r" % names(evs))
    s, e = data(evs[0]), data(evs[-1])
    check(ISO.match(s.get("started_at", "")), "started_at is ISO 8601 UTC with ms: %r" % s.get("started_at"))
    when = datetime.datetime.strptime(s["started_at"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()
    check(t0 - 1 <= when <= t1 + 1, "started_at is now: %r" % s["started_at"])
    check(abs(s["started_at_ms"] / 1e3 - when) < 0.001, "started_at_ms is the same instant: %r" % s)
    check(s["prompt_tokens"] == 5, "started's prompt tokens: %r" % s)
    want = {"tokens_out": 12, "prompt_tokens": 5, "cached_tokens": 0, "finish_reason": "length", "seed": 9}
    check(all(e.get(k) == v for k, v in want.items()) and e["decode_time_ms"] >= 0 and e["prefill_time_ms"] >= 0,
          "end's fields: %r" % e)
    st, _, t = get("/jobs/%s/events" % s["id"])  # no API keys: the job's unguessable id
    again = sse_events(t)
    check(st == 200 and again[0]["data"] == evs[0]["data"], "a resumed stream replays started unchanged")


def metrics():
    body = {"job_id": "x0", "model": "a", "prompt": "Once upon a time", "max_tokens": 20, "temperature": 0}
    plain = execute(body)[2]
    body.update(job_id="x1", metrics_every=8)
    st, _, evs, _ = execute(body)
    ms = [(i, data(e)) for i, e in enumerate(evs) if e["event"] == "metrics"]
    check(st == 200 and [m["tokens_out"] for _, m in ms] == [8, 16], "metrics after tokens 8 and 16: %r" % ms)
    for i, m in ms:
        tokens_before = sum(1 for e in evs[:i] if e["event"] == "token")
        check(tokens_before == m["tokens_out"] and evs[i - 1]["event"] == "token", "metrics follows its token")
        check(all(k in m for k in ("elapsed_ms", "time_to_first_token_ms", "decode_time_ms", "tokens_per_second"))
              and m["elapsed_ms"] >= m["decode_time_ms"] >= 0 and m["tokens_per_second"] >= 0, "metrics: %r" % m)
    check([e["id"] for e in evs] == list(range(1, len(evs) + 1)), "ids stay consecutive with metrics events")
    text = "".join(data(e)["t"] for e in evs if e["event"] == "token")
    check(text == "".join(data(e)["t"] for e in plain if e["event"] == "token"), "the same text as without")
    check("metrics" not in names(plain), "no metrics events unless asked")


orchd, log = orchd_lib.start_orchd(
    BIN, tmp, "[server]\nlisten = 127.0.0.1:%d\nadmin_socket = %s\nruntime_dir = %s\nmax_queue = 1\n"
    "hash_cache_beside = no\n"
    '[model "a"]\npath = %s\nslots = 1\ncontext = 256\nthreads = 1\n'
    % (orchd_lib.PORT, orchd_lib.ADMIN, tmp, MODEL))
try:
    refused_after_admission()
    refused_before_admission()
    started_and_end()
    metrics()
    orchd.send_signal(signal.SIGTERM)
    check(orchd.wait(15) == 0, "exit 0")
finally:
    orchd_lib.stop_orchd(orchd, log, tmp)

print("orchd_sse_test: %d passed, %d failed" % (orchd_lib.passed, orchd_lib.failed))
sys.exit(1 if orchd_lib.failed else 0)
