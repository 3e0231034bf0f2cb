#!/usr/bin/env python3
"""orchd_shutdown_test - how streams end when orchd cannot finish them (issue 52,
A2 and A8), on the repository's own model (models/stories260K.gguf: a clone alone
runs it):

- SIGTERM with jobs still running past shutdown_timeout_s (here the worker is
  stopped with SIGSTOP before they are sent, so they never finish): every stream ends with its API's
  terminal form before orchd exits 0: native, an error event WORKER_LOST with
  retriable true; OpenAI (completions and a chat with n = 2), an error chunk and
  `data: [DONE]`; the log has one shutdown_cut line;
- a request that can never fit (n × prompts above what the model holds at once,
  its workers' 4 × slots and max_queue) is a 400 naming "n" or "prompt", not a
  retriable 429;
- a job's capability id in a refused request's path (405, OPTIONS) is logged as a
  hash, never as sent;
- Ctrl-C at a terminal (SIGINT to the process group) drains, as SIGINT to orchd
  does: the workers are not in orchd's process group; a second Ctrl-C ends the
  running jobs at once (their API's terminal form) and orchd exits."""
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
from orchd_lib import check, post, sse_events  # noqa: E402
MODEL = os.path.join(HERE, "..", "..", "models", "stories260K.gguf")


def worker_pid(model):
    for w in json.loads(orchd_lib.admin("GET", "/admin/workers")[1]):
        if w["model"] == model and w["state"] == "ready":
            return w["pid"]
    return 0


def stream(path, body, out, key, heads=None):
    """POST @body and read the SSE body to its end (or the connection's): out[key]; its
    status into heads[key] as soon as the head is in."""
    c = orchd_lib.conn(timeout=60)
    try:
        c.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        r = c.getresponse()
        if heads is not None:
            heads[key] = r.status
        out[key] = (r.status, r.read().decode(errors="replace"))
    except (OSError, ValueError) as e:
        out[key] = (0, "error: %r" % e)
    finally:
        c.close()


def cut_at_timeout(o):
    pid = worker_pid("m")
    check(pid > 0, "the worker is ready")
    if pid <= 0:  # kill(0, ...) would stop this test's own group
        return
    out = {}
    reqs = {
        "native": ("/execute", {"job_id": "s1", "model": "m", "prompt": "Once upon a time",
                                "max_tokens": 64}),
        "completions": ("/v1/completions", {"model": "m", "prompt": "Once", "max_tokens": 64,
                                            "stream": True}),
        "chat_n2": ("/v1/chat/completions", {"model": "m", "n": 2, "max_tokens": 64, "stream": True,
                                             "messages": [{"role": "user", "content": "Hi"}]}),
    }
    os.kill(pid, signal.SIGSTOP)  # the worker frozen: no job it is given can finish
    heads = {}
    threads = [threading.Thread(target=stream, args=(p, b, out, k, heads), daemon=True)
               for k, (p, b) in reqs.items()]
    for t in threads:
        t.start()
    end = time.time() + 10
    while time.time() < end and orchd_lib.metric("orch_running_jobs", {"model": "m"}) < 4:
        time.sleep(0.02)
    check(orchd_lib.metric("orch_running_jobs", {"model": "m"}) == 4, "4 jobs on the worker")
    # every stream's head out first: an OpenAI stream's head waits up to 1 s for the job's
    # first event, and a job that ends before it is answered as without stream (a loaded
    # machine, ASan, could otherwise put the cut first)
    end = time.time() + 10
    while time.time() < end and len(heads) < len(reqs):
        time.sleep(0.02)
    check(len(heads) == len(reqs), "every stream's head is in: %s" % heads)
    t0 = time.time()
    o.proc.send_signal(signal.SIGTERM)
    for t in threads:
        t.join(30)
    rc = o.proc.wait(30)
    took = time.time() - t0
    try:
        os.kill(pid, signal.SIGCONT)
    except OSError:
        pass
    check(rc == 0, "orchd exits 0 after the cut: %s" % rc)
    check(1.0 <= took < 10, "the cut comes at shutdown_timeout_s (1 s), exit within %.1f s" % took)
    st, text = out.get("native", (0, ""))
    evs = sse_events(text)
    last = json.loads(evs[-1]["data"]) if evs else {}
    check(st == 200 and evs and evs[-1]["event"] == "error" and last.get("code") == "WORKER_LOST"
          and last.get("retriable") is True,
          "native: the stream ends with WORKER_LOST, retriable: %s" % text[-300:])
    for k in ("completions", "chat_n2"):
        st, text = out.get(k, (0, ""))
        datas = [e["data"] for e in sse_events(text)]
        err = [json.loads(d)["error"] for d in datas[:-1] if '"error"' in d]
        check(st == 200 and datas and datas[-1] == "[DONE]" and err
              and all(e.get("code") == "WORKER_LOST" and e.get("retriable") is True for e in err),
              "%s: an error chunk (WORKER_LOST, retriable) and [DONE]: %s" % (k, text[-300:]))
    check(o.log_text().count("event=shutdown_cut") == 1, "one shutdown_cut line in the log")


def never_fits():
    # m: 1 worker of 2 slots (8 jobs) + max_queue 4 = 12 at once
    st, _, text = post("/v1/completions", {"model": "m", "prompt": "x", "n": 13, "max_tokens": 1})
    err = json.loads(text).get("error", {}) if text.startswith("{") else {}
    check(st == 400 and err.get("param") == "n" and err.get("retriable") is False and "12" in err.get("message", ""),
          "n above what the model holds: 400 naming n and the limit: %d %s" % (st, text[:300]))
    st, _, text = post("/v1/completions", {"model": "m", "prompt": ["a"] * 7, "n": 2, "max_tokens": 1})
    err = json.loads(text).get("error", {}) if text.startswith("{") else {}
    check(st == 400 and err.get("param") == "n", "n × prompts above it: 400: %d %s" % (st, text[:300]))
    st, _, text = post("/v1/completions", {"model": "m", "prompt": ["a"] * 13, "max_tokens": 1})
    err = json.loads(text).get("error", {}) if text.startswith("{") else {}
    check(st == 400 and err.get("param") == "prompt", "13 prompts: 400 naming prompt: %d %s" % (st, text[:300]))
    st, _, text = post("/v1/completions", {"model": "m", "prompt": "x", "n": 12, "max_tokens": 1})
    check(st == 200, "n at the limit runs: %d %s" % (st, text[:200]))


def id_hashed(o):
    secret = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"
    for method in ("DELETE", "OPTIONS", "PUT"):
        s = socket.create_connection(("127.0.0.1", o.port), timeout=5)
        s.sendall(("%s /jobs/%s/events HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                   % (method, secret)).encode())
        while s.recv(4096):
            pass
        s.close()
    end = time.time() + 5
    while time.time() < end and o.log_text().count("/jobs/{id:") < 3:
        time.sleep(0.05)
    text = o.log_text()
    check(secret not in text, "the job id is in no log line")
    check(text.count("/jobs/{id:") >= 3, "refused requests log a hash of the id: %s"
          % [l for l in text.splitlines() if "http_access" in l][-3:])


def stop_idle(how, seed):
    """Issue 62, item 3: POST /admin/shutdown (or orchctl shutdown, or SIGTERM) after one
    short job: orchd drains and exits 0 within 5 s, as SIGTERM does."""
    p = orchd_lib.OrchdProc(BIN, "", seed=seed,
                            more=lambda tmp: '[model "m"]\npath = %s\nslots = 2\ncontext = 128\nthreads = 1\n' % MODEL)
    orchd_lib.ADMIN = os.path.join(p.tmp, "orchd.sock")
    st, _, _ = post("/v1/completions", {"model": "m", "prompt": "Once", "max_tokens": 4})
    check(st == 200, "%s: a short job first" % how)
    t0 = time.time()
    if how == "POST /admin/shutdown":
        st, text = orchd_lib.admin("POST", "/admin/shutdown", {})
        check(st == 202 and json.loads(text).get("stopping") is True, "202 stopping: %d %s" % (st, text))
    elif how == "orchctl shutdown":
        r = subprocess.run([BIN + "/orchctl", "--socket", orchd_lib.ADMIN, "shutdown"], capture_output=True,
                           text=True, timeout=30)
        check(r.returncode == 0 and "stopping" in r.stdout, "orchctl shutdown: %r %r" % (r.stdout, r.stderr))
    else:
        p.proc.send_signal(signal.SIGTERM)
    rc = p.proc.wait(30)
    took = time.time() - t0
    print("%s: exit %d after %.2f s" % (how, rc, took))
    check(rc == 0 and took < 5, "%s: orchd exits 0 within 5 s when idle (%.2f s)" % (how, took))
    left = [n for n in os.listdir(p.tmp) if n.startswith("worker-")]
    check(not left, "%s: no worker's pidfile or socket left behind: %r" % (how, left))
    p.stop()


def ctrl_c():
    """Ctrl-C at a terminal (SIGINT to orchd's whole process group, as `make run` has it):
    the workers are in groups of their own, so only orchd gets it and drains: the job
    running ends as it would (before, each worker got the SIGINT too and cancelled its
    jobs: CANCELLED)."""
    p = orchd_lib.OrchdProc(BIN, "", seed=57, preexec=os.setsid,
                            more=lambda tmp: '[model "m"]\npath = %s\nslots = 2\ncontext = 128\nthreads = 1\n' % MODEL)
    orchd_lib.ADMIN = os.path.join(p.tmp, "orchd.sock")
    pid = worker_pid("m")
    check(pid > 0 and os.getpgid(pid) != os.getpgid(p.proc.pid), "the worker has a process group of its own")
    if pid <= 0:  # kill(0, ...) would stop this test's own group
        p.stop()
        return
    os.kill(pid, signal.SIGSTOP)  # frozen: the job is still running when Ctrl-C comes
    out = {}
    t = threading.Thread(target=stream, args=("/execute", {"job_id": "c1", "model": "m", "prompt": "Once",
                                                           "max_tokens": 32}, out, "c"), daemon=True)
    t.start()
    end = time.time() + 10
    while time.time() < end and orchd_lib.metric("orch_running_jobs", {"model": "m"}) < 1:
        time.sleep(0.02)
    os.killpg(p.proc.pid, signal.SIGINT)
    time.sleep(0.3)
    os.kill(pid, signal.SIGCONT)
    t.join(30)
    rc = p.proc.wait(30)
    st, text = out.get("c", (0, ""))
    evs = sse_events(text)
    check(st == 200 and evs and evs[-1]["event"] == "end",
          "Ctrl-C: the running job drains and ends: %s" % text[-300:])
    check(rc == 0, "Ctrl-C: orchd exits 0 after draining: %s" % rc)
    p.stop()


def ctrl_c_twice():
    """A second Ctrl-C does not wait for the running jobs (shutdown_timeout_s is 30 s here):
    the first one's log line says what it waits for and how not to; after the second the
    running job ends at once in its API's form (WORKER_LOST) and orchd exits 0."""
    p = orchd_lib.OrchdProc(BIN, "", seed=61, preexec=os.setsid,
                            more=lambda tmp: '[model "m"]\npath = %s\nslots = 2\ncontext = 128\nthreads = 1\n' % MODEL)
    orchd_lib.ADMIN = os.path.join(p.tmp, "orchd.sock")
    pid = worker_pid("m")
    if pid <= 0:  # kill(0, ...) would stop this test's own group
        check(False, "a second Ctrl-C: the worker is ready")
        p.stop()
        return
    os.kill(pid, signal.SIGSTOP)  # frozen: the job would never finish
    out = {}
    t = threading.Thread(target=stream, args=("/execute", {"job_id": "c2", "model": "m", "prompt": "Once",
                                                           "max_tokens": 32}, out, "c"), daemon=True)
    t.start()
    end = time.time() + 10
    while time.time() < end and orchd_lib.metric("orch_running_jobs", {"model": "m"}) < 1:
        time.sleep(0.02)
    t0 = time.time()
    os.killpg(p.proc.pid, signal.SIGINT)
    time.sleep(0.5)
    check(p.proc.poll() is None, "the first Ctrl-C waits for the running job")
    os.killpg(p.proc.pid, signal.SIGINT)
    t.join(30)
    rc = p.proc.wait(30)
    took = time.time() - t0
    try:
        os.kill(pid, signal.SIGCONT)
    except OSError:
        pass
    st, text = out.get("c", (0, ""))
    evs = sse_events(text)
    last = json.loads(evs[-1]["data"]) if evs else {}
    check(st == 200 and evs and evs[-1]["event"] == "error" and last.get("code") == "WORKER_LOST",
          "a second Ctrl-C: the running job ends now, WORKER_LOST: %s" % text[-300:])
    check(rc == 0 and took < 6, "a second Ctrl-C: orchd exits 0 at once (%.1f s, rc %s)" % (took, rc))
    log = p.log_text()
    check("running_jobs=1" in log and "a second SIGINT (Ctrl-C)" in log and "event=stopping_now" in log,
          "the log says what the first Ctrl-C waits for, and the second: %s" % log[-600:])
    p.stop()


for k, how in enumerate(("POST /admin/shutdown", "orchctl shutdown", "SIGTERM")):
    stop_idle(how, 50 + k)
ctrl_c()
ctrl_c_twice()

o = orchd_lib.OrchdProc(BIN, "max_queue = 4\nshutdown_timeout_s = 1\naccess_log = yes\n", seed=23,
                        more=lambda tmp: '[model "m"]\npath = %s\nslots = 2\ncontext = 128\nthreads = 1\n' % MODEL)
orchd_lib.ADMIN = os.path.join(o.tmp, "orchd.sock")
never_fits()
id_hashed(o)
cut_at_timeout(o)
o.stop()
print("orchd_shutdown_test: %d passed, %d failed" % (orchd_lib.passed, orchd_lib.failed))
sys.exit(1 if orchd_lib.failed else 0)
