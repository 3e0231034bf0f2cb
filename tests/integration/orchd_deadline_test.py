#!/usr/bin/env python3
"""orchd_deadline_test - a request's own deadline (issue 62, item 2), on the
repository's own model (models/stories260K.gguf: a clone alone runs it).

`X-Deadline` (RFC 3339 or Unix seconds) or `deadline_ms` (from when orchd took
the request; the earlier of the two when both are given):
- already past at admission: 504 DEADLINE_EXCEEDED naming the field, not
  retriable, nothing queued; a malformed value: 400 naming it;
- passing while the job runs (its worker frozen with SIGSTOP, so it cannot end
  first): native, the stream's terminal error event DEADLINE_EXCEEDED; OpenAI
  stream, an error chunk and `data: [DONE]`; OpenAI without stream, a 504 body;
- passing while the job waits in orchd's queue: it ends at its deadline, before
  it ever takes a slot;
- a generous deadline changes nothing; orch_requests_total counts the outcome."""
import datetime
import json
import os
import signal
import sys
import threading
import time

BIN = os.environ["ORCH_BIN"]
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import orchd_lib  # noqa: E402
from orchd_lib import check, post, sse_events  # noqa: E402
MODEL = os.path.join(HERE, "..", "..", "models", "stories260K.gguf")
CHAT = {"model": "m", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 32}


def err(text):
    try:
        return json.loads(text).get("error", {})
    except ValueError:
        return {}


def worker_pid():
    for w in json.loads(orchd_lib.admin("GET", "/admin/workers")[1]):
        if w["model"] == "m" and w["state"] == "ready":
            return w["pid"]
    return 0


def stream(path, body, out, key, headers=None):
    c = orchd_lib.conn(timeout=60)
    t0 = time.time()
    try:
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        c.request("POST", path, json.dumps(body), h)
        r = c.getresponse()
        out[key] = (r.status, r.read().decode(errors="replace"), time.time() - t0)
    except (OSError, ValueError) as e:
        out[key] = (0, "error: %r" % e, time.time() - t0)
    finally:
        c.close()


def refused():
    past = "2020-01-01T00:00:00Z"
    st, _, text = post("/execute", {"job_id": "d1", "model": "m", "prompt": "Once", "max_tokens": 4},
                       {"X-Deadline": past})
    e = err(text)
    check(st == 504 and e.get("code") == "DEADLINE_EXCEEDED" and e.get("param") == "X-Deadline"
          and e.get("retriable") is False,
          "native, X-Deadline past: 504 DEADLINE_EXCEEDED, not retriable: %d %s" % (st, text[:300]))
    st, _, text = post("/v1/chat/completions", CHAT, {"X-Deadline": "%.3f" % (time.time() - 5)})
    e = err(text)
    check(st == 504 and e.get("code") == "DEADLINE_EXCEEDED",
          "OpenAI, X-Deadline in Unix seconds, past: 504: %d %s" % (st, text[:300]))
    for bad in ("tomorrow", "2026-13-01T00:00:00Z", "2026-12-03T10:00:00", "-5", "1e9"):
        st, _, text = post("/v1/chat/completions", CHAT, {"X-Deadline": bad})
        check(st == 400 and err(text).get("param") == "X-Deadline",
              "X-Deadline %r: 400 naming it: %d %s" % (bad, st, text[:200]))
    for bad in (0, -1, "soon", 86400001, 1.5):
        st, _, text = post("/v1/chat/completions", dict(CHAT, deadline_ms=bad))
        check(st == 400 and err(text).get("param") == "deadline_ms",
              "deadline_ms %r: 400 naming it: %d %s" % (bad, st, text[:200]))
    st, _, text = post("/execute", {"job_id": "d2", "model": "m", "prompt": "x", "max_tokens": 1,
                                    "deadline_ms": "x"})
    check(st == 400 and err(text).get("param") == "deadline_ms", "native deadline_ms checked: %d" % st)
    check(orchd_lib.metric("orch_queue_depth", {"model": "m"}) == 0, "nothing queued")


def passes(o):
    pid = worker_pid()
    check(pid > 0, "the worker is ready")
    os.kill(pid, signal.SIGSTOP)  # the worker frozen: its jobs can only end at their deadline
    soon = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=1.5)
    out = {}
    reqs = {  # slots = 1: the worker holds 4 (4 × slots), the rest waits in orchd's queue
        "native": ("/execute", {"job_id": "r1", "model": "m", "prompt": "Once upon a time", "max_tokens": 64,
                                "deadline_ms": 1500}, None),
        "stream": ("/v1/chat/completions", dict(CHAT, stream=True),
                   {"X-Deadline": soon.isoformat().replace("+00:00", "Z")}),
        "plain": ("/v1/completions", {"model": "m", "prompt": "Once", "max_tokens": 32, "deadline_ms": 1500},
                  None),
        "free": ("/v1/completions", {"model": "m", "prompt": "Twice", "max_tokens": 8}, None),
    }
    threads = [threading.Thread(target=stream, args=(p, b, out, k, h), daemon=True) for k, (p, b, h) in reqs.items()]
    for t in threads:
        t.start()
    end = time.time() + 10
    while time.time() < end and orchd_lib.metric("orch_running_jobs", {"model": "m"}) < 4:
        time.sleep(0.02)
    check(orchd_lib.metric("orch_running_jobs", {"model": "m"}) == 4, "4 jobs on the frozen worker")
    queued = threading.Thread(target=stream, args=("/v1/completions", {
        "model": "m", "prompt": "Later", "max_tokens": 8, "deadline_ms": 1000}, out, "queued"), daemon=True)
    queued.start()
    end = time.time() + 5
    while time.time() < end and orchd_lib.metric("orch_queue_depth", {"model": "m"}) < 1:
        time.sleep(0.02)
    check(orchd_lib.metric("orch_queue_depth", {"model": "m"}) == 1, "the fifth job waits in orchd's queue")
    queued.join(10)
    for k in ("native", "stream", "plain"):
        for t in threads:
            if t.is_alive():
                t.join(0.1)
    end = time.time() + 10
    while time.time() < end and not all(k in out for k in ("native", "stream", "plain", "queued")):
        time.sleep(0.05)

    st, text, took = out.get("queued", (0, "", 0))
    e = err(text)
    check(st == 504 and e.get("code") == "DEADLINE_EXCEEDED" and 0.8 <= took < 5,
          "queued past its deadline: 504 DEADLINE_EXCEEDED after %.2f s: %d %s" % (took, st, text[:300]))
    st, text, took = out.get("native", (0, "", 0))
    evs = sse_events(text)
    last = json.loads(evs[-1]["data"]) if evs else {}
    check(st == 200 and evs and evs[-1]["event"] == "error" and last.get("code") == "DEADLINE_EXCEEDED"
          and last.get("retriable") is False and 1.3 <= took < 6,
          "native: the stream ends with DEADLINE_EXCEEDED after %.2f s: %s" % (took, text[-300:]))
    st, text, took = out.get("stream", (0, "", 0))
    datas = [e["data"] for e in sse_events(text)]
    errs = [json.loads(d)["error"] for d in datas[:-1] if '"error"' in d]
    check(st == 200 and datas and datas[-1] == "[DONE]" and errs and errs[0].get("code") == "DEADLINE_EXCEEDED",
          "OpenAI stream: an error chunk DEADLINE_EXCEEDED and [DONE] after %.2f s: %s" % (took, text[-300:]))
    st, text, took = out.get("plain", (0, "", 0))
    check(st == 504 and err(text).get("code") == "DEADLINE_EXCEEDED",
          "OpenAI without stream: 504 DEADLINE_EXCEEDED: %d %s" % (st, text[:300]))
    check("free" not in out, "the job without a deadline still waits on the frozen worker")
    os.kill(pid, signal.SIGCONT)
    end = time.time() + 20
    while time.time() < end and "free" not in out:
        time.sleep(0.05)
    st, text, _ = out.get("free", (0, "", 0))
    check(st == 200 and json.loads(text)["choices"][0]["text"] is not None,
          "the worker thawed: the job without a deadline completes: %d %s" % (st, text[:200]))
    st, _, text = post("/v1/chat/completions", dict(CHAT, deadline_ms=60000),
                       {"X-Deadline": "%.3f" % (time.time() + 120)})
    check(st == 200 and json.loads(text)["choices"][0]["finish_reason"] in ("length", "stop"),
          "a generous deadline changes nothing: %d %s" % (st, text[:200]))
    n = orchd_lib.metric("orch_requests_total", {"model": "m", "outcome": "DEADLINE_EXCEEDED"})
    check(n == 4, "orch_requests_total counts 4 DEADLINE_EXCEEDED: %s" % n)
    check(o.log_text().count("event=job_deadline") == 4, "one job_deadline line a job")
    check(o.proc.poll() is None, "orchd runs on")


o = orchd_lib.OrchdProc(BIN, "max_queue = 8\n", seed=61,
                        more=lambda tmp: '[model "m"]\npath = %s\nslots = 1\ncontext = 128\nthreads = 1\n' % MODEL)
orchd_lib.ADMIN = os.path.join(o.tmp, "orchd.sock")
refused()
passes(o)
o.stop()
print("orchd_deadline_test: %d passed, %d failed" % (orchd_lib.passed, orchd_lib.failed))
sys.exit(1 if orchd_lib.failed else 0)
