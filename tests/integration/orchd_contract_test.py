#!/usr/bin/env python3
"""orchd_contract_test - a client written to the worker contract's HTTP surface
(/execute, /cancel by job_id, /jobs/ID/events, /health, deadlines) runs unchanged
against orchd with and without API keys (issue 62, "done when"), on the
repository's own model (models/stories260K.gguf: a clone alone runs it).

The client (contract_client) knows only the contract: it names its jobs, streams
them, cancels one by its job_id while it runs, resumes one by its job_id, sets a
deadline, and reads /health. The same function runs against an orchd without
keys and one with keys (its key in Authorization); with keys, another key sees
none of its jobs."""
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time

BIN = os.environ["ORCH_BIN"]
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import orchd_lib  # noqa: E402
from orchd_lib import check, sse_events  # noqa: E402
MODEL = os.path.join(HERE, "..", "..", "models", "stories260K.gguf")
KEY, OTHER = "contract-key-0123456789ab", "contract-other-0123456789"


def call(method, path, body=None, key=None, headers=None):
    c = orchd_lib.conn(timeout=60)
    h = {"Content-Type": "application/json"}
    if key:
        h["Authorization"] = "Bearer " + key
    h.update(headers or {})
    c.request(method, path, json.dumps(body) if body is not None else None, h)
    r = c.getresponse()
    text = r.read().decode()
    c.close()
    return r.status, text


def worker_pid():
    for w in json.loads(orchd_lib.admin("GET", "/admin/workers")[1]):
        if w["model"] == "m" and w["state"] == "ready":
            return w["pid"]
    return 0


def contract_client(tag, key):
    """The contract, as a client written to it does it; @tag names this run's jobs."""
    # run a job to its end
    st, text = call("POST", "/execute", {"job_id": tag + "-a", "model": "m", "prompt": "Once upon a time",
                                         "max_tokens": 8, "temperature": 0}, key)
    evs = sse_events(text)
    names = [e["event"] for e in evs]
    check(st == 200 and names[0] == "started" and names[-1] == "end" and names.count("token") == 8,
          "%s: /execute streams started, 8 tokens, end: %d %s" % (tag, st, names))
    # the same job's events again, by its job_id
    st, text = call("GET", "/jobs/%s-a/events" % tag, None, key, {"Last-Event-ID": "1"})
    again = sse_events(text)
    check(st == 200 and again and again[-1]["event"] == "end" and len(again) == len(evs) - 1,
          "%s: its events resumed by job_id: %d %d" % (tag, st, len(again)))
    # cancel a running job by its job_id (its worker frozen, so that it is still running)
    pid = worker_pid()
    os.kill(pid, signal.SIGSTOP)
    out = {}
    t = threading.Thread(target=lambda: out.update(r=call("POST", "/execute", {
        "job_id": tag + "-b", "model": "m", "prompt": "Once", "max_tokens": 64}, key)), daemon=True)
    t.start()
    end = time.time() + 10
    while time.time() < end and orchd_lib.metric("orch_running_jobs", {"model": "m"}) < 1:
        time.sleep(0.02)
    st, text = call("POST", "/cancel", {"job_id": tag + "-b"}, key)
    check(st == 202 and json.loads(text).get("job_id") == tag + "-b",
          "%s: /cancel by job_id: %d %s" % (tag, st, text[:200]))
    os.kill(pid, signal.SIGCONT)
    t.join(20)
    st, text = out.get("r", (0, ""))
    last = sse_events(text)[-1] if text else {}
    check(st == 200 and last.get("event") == "error" and json.loads(last["data"]).get("code") == "CANCELLED",
          "%s: the cancelled stream ends CANCELLED: %s" % (tag, text[-200:]))
    st, text = call("POST", "/cancel", {"job_id": tag + "-nope"}, key)
    check(st == 404 and "JOB_NOT_FOUND" in text, "%s: cancel of an unknown job_id: 404: %d" % (tag, st))
    # a deadline already past
    st, text = call("POST", "/execute", {"job_id": tag + "-c", "model": "m", "prompt": "x", "max_tokens": 4},
                    key, {"X-Deadline": "2020-01-01T00:00:00Z"})
    check(st == 504 and "DEADLINE_EXCEEDED" in text, "%s: a past deadline: 504: %d" % (tag, st))
    # health
    st, text = call("GET", "/health", None, None)
    h = json.loads(text) if st == 200 else {}
    check(st == 200 and h.get("status") == "ok" and "m" in h.get("models", {}),
          "%s: /health: %d %s" % (tag, st, text[:200]))


def run(keys, seed):
    kdir = tempfile.mkdtemp()
    conf = ""
    if keys:
        kpath = os.path.join(kdir, "api.keys")
        with open(kpath, "w") as f:
            f.write("%s\n%s\n" % (KEY, OTHER))
        os.chmod(kpath, 0o600)
        conf = "api_keys_file = %s\n" % kpath
    o = orchd_lib.OrchdProc(BIN, conf, seed=seed, more=lambda tmp: '[model "m"]\npath = %s\nslots = 2\n'
                            'context = 128\nthreads = 1\n' % MODEL)
    orchd_lib.ADMIN = os.path.join(o.tmp, "orchd.sock")
    try:
        contract_client("keys" if keys else "nokeys", KEY if keys else None)
        if keys:  # another key sees none of them
            st, _ = call("GET", "/jobs/keys-a/events", None, OTHER)
            check(st == 404, "another key cannot follow the job by its job_id: %d" % st)
            st, _ = call("POST", "/cancel", {"job_id": "keys-a"}, OTHER)
            check(st == 404, "another key cannot cancel it: %d" % st)
            st, _ = call("POST", "/execute", {"job_id": "x", "model": "m", "prompt": "x", "max_tokens": 1})
            check(st == 401, "no key: 401: %d" % st)
    finally:
        o.stop()
        shutil.rmtree(kdir, ignore_errors=True)


run(False, 81)
run(True, 82)
print("orchd_contract_test: %d passed, %d failed" % (orchd_lib.passed, orchd_lib.failed))
sys.exit(1 if orchd_lib.failed else 0)
