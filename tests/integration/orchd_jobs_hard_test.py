#!/usr/bin/env python3
"""orchd_jobs_hard_test - issue 16 (items 3, 4, 5, 8, 9, 11, 12) against a real orchd
with a real worker (cpu, stories260K) on loopback:

- request bodies cJSON would take in part are refused: a "\\u0000" in a
  prompt or a message, a key twice, ill-formed UTF-8 in job_id;
- a job_id with a newline cannot forge a log line;
- jobs have owners: a second key can neither follow nor cancel the first
  key's job, by its job_id or by its id; job_ids are per key, so nobody can
  take another's first; without keys a job is found only by its unguessable
  id (X-Job-Id, `started.id`); OpenAI ids are random, never sequential;
- finished jobs are kept within events_keep_jobs (oldest evicted first, seen
  in /metrics and the admin API); OpenAI jobs are not kept at all;
- a chat's message contents count against max_prompt_chars in all (orchd
  refuses a 3 MB chat itself, before a worker tokenizes it);
- what errors tell a client: no worker job numbers, paths or worker output,
  but a correlation_id the log has the details under; the admin API gives one
  answer for a missing, unreadable or not-GGUF path;
- a model file is read off the loop, regular files only (a FIFO path neither
  hangs orchd's start nor the admin API);
- during shutdown a request gets 503 OVERLOADED with one Retry-After;
- API keys fail closed (an empty or missing keys file stops orchd), reload on
  SIGHUP (a revoked key gets 401; an empty file keeps the keys in force),
  "bearer" in any case, and per-key model allow-lists."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

BIN = os.environ["ORCH_BIN"]
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import orchd_lib  # noqa: E402
from orchd_lib import check, post, get, sse_events  # noqa: E402
DATA = orchd_lib.testdata("models/stories260K.gguf")
MODEL = os.path.join(DATA, "models", "stories260K.gguf")

tmp = tempfile.mkdtemp()
JSON = {"Content-Type": "application/json"}
FIFO = os.path.join(tmp, "fifo.gguf")
K1 = "key-one-0123456789abcdef"
K2 = "key-two-0123456789abcdef"
K3 = "key-three-only-model-b-0"


def auth(key, scheme="Bearer"):
    return {"Content-Type": "application/json", "Authorization": "%s %s" % (scheme, key)}


class Orchd:
    """One orchd on its own port, admin socket and log, with model "a" (and @extra server keys)."""

    def __init__(self, name, extra="", models=None):
        self.dir = os.path.join(tmp, name)
        os.makedirs(self.dir)
        self.port = orchd_lib.free_port(os.getpid() + 7 * len(os.listdir(tmp)))
        self.admin = os.path.join(self.dir, "orchd.sock")
        self.conf = os.path.join(self.dir, "orchd.conf")
        self.log_path = os.path.join(self.dir, "orchd.log")
        with open(self.conf, "w") as f:
            f.write("[server]\nlisten = 127.0.0.1:%d\nadmin_socket = %s\nruntime_dir = %s\n"
                    "hash_cache_beside = no\n%s\n" % (self.port, self.admin, self.dir, extra))
            for m in models or ["a"]:
                name, path, more = m if isinstance(m, tuple) else (m, MODEL, "")
                f.write('[model "%s"]\npath = %s\nslots = 4\ncontext = 256\nthreads = 1\n%s\n'
                        % (name, path, more))
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen([BIN + "/orchd", "--config", self.conf], stdout=self.log,
                                     stderr=subprocess.STDOUT)
        self.use()

    def use(self):
        orchd_lib.PORT = self.port
        orchd_lib.ADMIN = self.admin

    def wait_ready(self, headers=None):
        end = time.time() + 20
        while time.time() < end and self.proc.poll() is None:
            try:
                if get("/ready", headers)[0] == 200:
                    return True
            except OSError:
                pass
            time.sleep(0.05)
        return False

    def text(self):
        self.log.flush()
        return open(self.log_path).read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode


def error_of(text):
    try:
        return json.loads(text)["error"]
    except (ValueError, KeyError, TypeError):
        return {}


def strict_bodies():
    """Item 8: what cJSON would cut, pick or echo raw is a 400 naming the parameter."""
    cases = [
        ('{"job_id":"n1","model":"a","prompt":"Once upon\\u0000 a time"}', "/execute", "prompt"),
        ('{"model":"a","messages":[{"role":"user","content":"hi\\u0000 there"}]}',
         "/v1/chat/completions", "messages"),
        ('{"model":"a","prompt":"Once\\u0000"}', "/v1/completions", "prompt"),
        ('{"job_id":"d1","model":"a","prompt":"hi","prompt":"other"}', "/execute", "prompt"),
        ('{"model":"a","messages":[{"role":"user","content":"x","content":"y"}]}',
         "/v1/chat/completions", "content"),
        ('{"job_id":"c1","job_id":"c2"}', "/cancel", "job_id"),
    ]
    for body, path, param in cases:
        st, _, t = post(path, body, JSON)
        e = error_of(t)
        check(st == 400 and e.get("code") == "INVALID_REQUEST" and e.get("param") == param,
              "%s %s -> 400 naming %s: %s %s" % (path, body[:50], param, st, t[:160]))
    st, _, t = post("/execute", b'{"job_id":"bad\xff\xfe","model":"a","prompt":"hi"}', JSON)
    e = error_of(t)
    check(st == 400 and e.get("code") == "INVALID_REQUEST" and "UTF-8" in e.get("message", ""),
          "ill-formed UTF-8 in job_id: 400: %s %s" % (st, t[:160]))
    st, _, t = post("/execute", '{"job_id":"ok-after","model":"a","prompt":"Once","max_tokens":2}', JSON)
    check(st == 200 and sse_events(t)[-1]["event"] == "end", "a good request still runs: %s" % t[-120:])


def prompt_limits():
    """Item 3: a chat's messages count against max_prompt_chars (32768 here) in all, checked
    by orchd: a 3 MB chat is refused at once, before any worker tokenizes it."""
    big = "x" * 12000
    cases = [
        ({"model": "a", "messages": [{"role": "user", "content": big}] * 3}, "three 12,000-char"),
        ({"model": "a", "messages": [{"role": "user", "content": [
            {"type": "text", "text": big}, {"type": "text", "text": big + big}]}]}, "text parts"),
        ({"model": "a", "messages": [{"role": "system", "content": "s"},
                                     {"role": "user", "content": "y" * 3000000}]}, "3 MB"),
    ]
    for body, what in cases:
        t0 = time.time()
        st, _, t = post("/v1/chat/completions", body, JSON)
        e = error_of(t)
        check(st == 400 and e.get("param") == "messages" and "max_prompt_chars" in e.get("message", "")
              and time.time() - t0 < 2,
              "chat over max_prompt_chars (%s) is a 400 from orchd: %s %s" % (what, st, t[:200]))
    # under the cap, orchd lets it through: the worker finds it longer than the context
    st, _, t = post("/v1/chat/completions",
                    {"model": "a", "messages": [{"role": "user", "content": big}] * 2}, JSON)
    check(st == 400 and error_of(t).get("code") == "CONTEXT_LENGTH_EXCEEDED",
          "24,000 characters pass orchd's check: %s %s" % (st, t[:200]))
    st, _, t = post("/v1/completions", {"model": "a", "prompt": ["z" * 40000]}, JSON)
    check(st == 400 and error_of(t).get("param") == "prompt", "an OpenAI prompt over the cap: %s" % st)


def shutting_down(o):
    """Item 12: while orchd drains (its worker stopped, so the drain waits) a new request gets
    503 OVERLOADED with exactly one Retry-After."""
    pid = worker_pid("a")
    os.kill(pid, signal.SIGSTOP)
    o.proc.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    c = orchd_lib.conn()
    c.request("POST", "/v1/completions", json.dumps({"model": "a", "prompt": "x"}), JSON)
    r = c.getresponse()
    body = r.read().decode()
    retry = [v for k, v in r.getheaders() if k.lower() == "retry-after"]
    c.close()
    os.kill(pid, signal.SIGCONT)
    check(r.status == 503 and error_of(body).get("code") == "OVERLOADED" and retry == ["5"],
          "shutting down: 503 OVERLOADED, one Retry-After: %s %r %s" % (r.status, retry, body[:160]))


def log_forging(o):
    """Item 8: a job_id with a newline and a fake line after it stays one escaped value."""
    forged = 'x\n<3>event=forged job=evil "quote"'
    st, _, t = post("/execute", {"job_id": forged, "model": "a", "prompt": "Once", "max_tokens": 2}, JSON)
    evs = sse_events(t)
    check(st == 200 and evs and json.loads(evs[0]["data"])["job_id"] == forged,
          "the job runs and its started event carries the job_id as sent: %s" % t[:200])
    end = time.time() + 5
    while time.time() < end and "forged" not in o.text():
        time.sleep(0.05)
    lines = o.text().splitlines()
    check(not any(re.match(r"^<\d>event=forged", l) for l in lines), "no forged line in the log")
    hits = [l for l in lines if "forged" in l]
    check(any(re.search(r'job_id="x\\n<3>event=forged job=evil \\"quote\\""', l) for l in hits),
          "the job_id is one quoted, escaped value: %r" % hits[:3])


def keys_fail_closed():
    """Item 5: a keys file with only comments, or none at all, is a start-up error."""
    path = os.path.join(tmp, "empty.keys")
    with open(path, "w") as f:
        f.write("# every key was removed\n\n")
    for name, keys in (("emptykeys", path), ("nokeys", os.path.join(tmp, "missing.keys"))):
        o = Orchd(name, "api_keys_file = %s" % keys)
        try:
            rc = o.proc.wait(10)
        except subprocess.TimeoutExpired:
            rc = None
        text = o.text()
        check(rc not in (None, 0), "%s: orchd exits non-zero: %r" % (name, rc))
        check("event=start_failed" in text and ("no key in it" in text or "No such file" in text),
              "%s: a clear message: %r" % (name, text[-300:]))
        o.stop()


def wait_log(o, needle, count):
    end = time.time() + 10
    while time.time() < end and o.text().count(needle) < count:
        time.sleep(0.05)
    return o.text().count(needle) >= count


def keys(o, path):
    """Item 5: 401 without a key, "bearer" in any case, SIGHUP revokes, allow-lists."""
    body = {"job_id": "k", "model": "a", "prompt": "Once", "max_tokens": 2}
    st, hdr, t = post("/execute", body, JSON)
    check(st == 401 and error_of(t).get("code") == "UNAUTHORIZED" and hdr.get("WWW-Authenticate") == "Bearer",
          "no key: 401: %s %s" % (st, t[:120]))
    check(post("/execute", body, auth("key-one-0123456789abcdeX"))[0] == 401, "a wrong key: 401")
    check(post("/execute", body, auth(K1, "Basic"))[0] == 401, "another scheme: 401")
    check(get("/health")[0] == 200 and get("/metrics")[0] == 200, "/health and /metrics stay open")
    for scheme in ("Bearer", "bearer", "BEARER"):
        st, _, t = post("/execute", dict(body, job_id="k-" + scheme), auth(K1, scheme))
        check(st == 200 and sse_events(t)[-1]["event"] == "end", "'%s KEY' works: %s %s" % (scheme, st, t[:120]))
    # allow-list: K3 may use model b only; a is "not configured" as far as it can tell
    st, _, t = get("/v1/models", auth(K3))
    check(st == 200 and [m["id"] for m in json.loads(t)["data"]] == ["b"], "K3 sees model b only: %s" % t[:200])
    st, _, t = get("/v1/models", auth(K1))
    check(st == 200 and [m["id"] for m in json.loads(t)["data"]] == ["a", "b"], "K1 sees both: %s" % t[:200])
    st, _, t = post("/execute", dict(body, job_id="k3a"), auth(K3))
    check(st == 404 and error_of(t).get("code") == "MODEL_NOT_FOUND", "K3 on model a: 404: %s %s" % (st, t[:160]))
    st, _, t = post("/v1/completions", {"model": "a", "prompt": "Once", "max_tokens": 2}, auth(K3))
    check(st == 404 and error_of(t).get("code") == "MODEL_NOT_FOUND", "K3 on model a (OpenAI): 404: %s" % st)
    st, _, t = post("/execute", dict(body, job_id="k3b", model="b"), auth(K3))
    check(st == 200 and sse_events(t)[-1]["event"] == "end", "K3 on model b: %s %s" % (st, t[:120]))
    # SIGHUP: K2 revoked
    check(post("/execute", dict(body, job_id="k2"), auth(K2))[0] == 200, "K2 works before the reload")
    with open(path, "w") as f:
        f.write("# K2 revoked\n%s\n%s models=b\n" % (K1, K3))
    o.proc.send_signal(signal.SIGHUP)
    check(wait_log(o, "event=api_keys_reloaded", 1), "the reload is logged")
    st, _, t = post("/execute", dict(body, job_id="k2-again"), auth(K2))
    check(st == 401, "a revoked key: 401 after SIGHUP: %s %s" % (st, t[:120]))
    check(post("/execute", dict(body, job_id="k1-again"), auth(K1))[0] == 200, "K1 still works")
    # SIGHUP with every key gone: the keys in force stay, an error is logged
    with open(path, "w") as f:
        f.write("# oops\n")
    o.proc.send_signal(signal.SIGHUP)
    check(wait_log(o, "event=api_keys_reload_failed", 1), "a reload to no keys is refused and logged")
    check(post("/execute", dict(body, job_id="k1-kept"), auth(K1))[0] == 200, "K1 works after it")
    check(post("/execute", dict(body, job_id="k-none"), JSON)[0] == 401, "and no key still gets 401")
    check(all(k not in o.text() for k in (K1, K2, K3)), "no key appears in the log")


def worker_pid(model):
    for w in json.loads(orchd_lib.admin("GET", "/admin/workers")[1]):
        if w["model"] == model:
            return w["pid"]
    return 0


def ownership():
    """Item 4 with keys: K2 cannot see or cancel K1's jobs; job_ids are per key."""
    body = {"job_id": "own", "model": "a", "prompt": "Once upon a time", "max_tokens": 8, "temperature": 0}
    st, hdr, t = post("/execute", body, auth(K1))
    evs = sse_events(t)
    uid = hdr.get("X-Job-Id", "")
    check(st == 200 and evs[-1]["event"] == "end" and json.loads(evs[0]["data"])["id"] == uid
          and re.match(r"^[0-9a-f]{32}$", uid), "K1's job, its id in X-Job-Id and started: %r" % uid)
    for who, key, want in (("K2", K2, 404), ("K1", K1, 200)):
        for ref in ("own", uid):
            st, _, t2 = get("/jobs/%s/events" % ref, dict(auth(key), **{"Last-Event-ID": "0"}))
            check(st == want, "%s follows K1's job by %s: %s (want %s)" % (who, ref[:8], st, want))
            if want == 200:
                check(sse_events(t2) == evs, "the owner's replay is the stream")
            else:
                check(error_of(t2).get("code") == "JOB_NOT_FOUND", "another key's job reads as none")
            st, _, t2 = post("/cancel", {"job_id": ref}, auth(key))
            check(st == (202 if want == 200 else 404), "%s cancels K1's job by %s: %s" % (who, ref[:8], st))
    # K2 has its own "own"; K1's name still means K1's job; K1 cannot reuse it
    st, hdr2, t = post("/execute", dict(body, prompt="The dog"), auth(K2))
    check(st == 200 and hdr2.get("X-Job-Id") != uid, "K2 may name a job 'own' too: %s" % st)
    st, _, t = get("/jobs/own/events", auth(K1))
    check(st == 200 and sse_events(t) == evs, "K1's 'own' is still K1's job")
    st, _, t = post("/execute", body, auth(K1))
    check(st == 400 and error_of(t).get("param") == "job_id", "a job_id in use in its key's space: 400")
    # a live job: K2's cancel is refused, K1's works
    pid = worker_pid("a")
    os.kill(pid, signal.SIGSTOP)
    c = orchd_lib.conn()
    c.request("POST", "/execute", json.dumps(dict(body, job_id="live", max_tokens=200)), auth(K1))
    r = c.getresponse()
    live = r.getheader("X-Job-Id")
    check(r.status == 200 and live, "a live job")
    for ref in ("live", live):
        check(post("/cancel", {"job_id": ref}, auth(K2))[0] == 404, "K2 cannot cancel K1's live job")
    st, _, t = post("/cancel", {"job_id": "live"}, auth(K1))
    check(st == 202 and json.loads(t).get("status") == "cancelling" and json.loads(t).get("id") == live,
          "K1 cancels it: %s %s" % (st, t))
    os.kill(pid, signal.SIGCONT)
    out = sse_events(r.read().decode())
    c.close()
    check(out and out[-1]["event"] == "error" and json.loads(out[-1]["data"])["code"] == "CANCELLED",
          "the owner's stream ends CANCELLED: %r" % out[-1:])


def anonymous_ids():
    """Item 4 without keys (and issue 62, item 1): the one local owner's job_ids name its
    jobs, as the worker contract says (cancel, resume by job_id), and a job_id in use is
    refused; the id finds a job too; anything else finds nothing. OpenAI ids are random."""
    body = {"job_id": "same", "model": "a", "prompt": "Once", "max_tokens": 2}
    st1, h1, _ = post("/execute", body, JSON)
    st2, _, t2 = post("/execute", body, JSON)
    check(st1 == 200 and st2 == 400 and "already in use" in t2,
          "without keys a job_id names one job: a second is refused: %d %s" % (st2, t2[:200]))
    for guess in ("1", "2", "0", "sam", h1.get("X-Job-Id", "")[:31], h1.get("X-Job-Id", "").upper()):
        check(get("/jobs/%s/events" % guess, {"Last-Event-ID": "0"})[0] == 404,
              "a guessed id %r finds nothing" % guess)
        check(post("/cancel", {"job_id": guess}, JSON)[0] == 404, "nor cancels: %r" % guess)
    for ref in ("same", h1.get("X-Job-Id")):
        st, _, t = get("/jobs/%s/events" % ref, {"Last-Event-ID": "0"})
        check(st == 200 and sse_events(t)[-1]["event"] == "end", "%r resumes the job" % ref)
        st, _, t = post("/cancel", {"job_id": ref}, JSON)
        check(st == 202 and json.loads(t).get("status") == "finished", "%r cancels (it ended): %s" % (ref, t))
    ids = []
    for _ in range(3):
        st, _, t = post("/v1/completions", {"model": "a", "prompt": "Once", "max_tokens": 2}, JSON)
        ids.append(json.loads(t).get("id", "") if st == 200 else "")
    check(all(re.match(r"^cmpl-[0-9a-f]{32}$", i) for i in ids) and len(set(ids)) == 3,
          "OpenAI ids are cmpl-<128 random bits>: %r" % ids)
    for i in ids:
        check(get("/jobs/%s/events" % i)[0] == 404 and post("/cancel", {"job_id": i}, JSON)[0] == 404,
              "an OpenAI job cannot be followed or cancelled by id")
    st, _, t = post("/v1/chat/completions", {"model": "a", "max_tokens": 2, "stream": True,
                                             "messages": [{"role": "user", "content": "hi"}]}, JSON)
    first = json.loads(t.split("\n")[0][6:]) if st == 200 else {}
    check(re.match(r"^chatcmpl-[0-9a-f]{32}$", first.get("id", "")), "chat ids too: %r" % first.get("id"))


def metric(name):
    for line in get("/metrics")[2].splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def retention():
    """Item 9: events_keep_jobs = 3 here; the oldest go first; OpenAI jobs are never kept."""
    ids = []
    # the jobs kept already (earlier tests) are the oldest: all of them go, then 2 of these
    evicted = metric("orch_jobs_evicted_total") + metric("orch_jobs_kept") + 2
    for k in range(5):
        st, hdr, _ = post("/execute", {"job_id": "ret%d" % k, "model": "a", "prompt": "Once upon a time",
                                       "max_tokens": 16}, JSON)
        ids.append(hdr.get("X-Job-Id"))
    check(metric("orch_jobs_kept") == 3 and metric("orch_jobs_evicted_total") == evicted,
          "5 finished, 3 kept, the rest evicted: %r %r" % (metric("orch_jobs_kept"), metric("orch_jobs_evicted_total")))
    status = json.loads(orchd_lib.admin("GET", "/admin/status")[1])
    check(status.get("jobs_kept") == 3 and 0 < status.get("jobs_kept_bytes", 0) < 3 * 8192,
          "the admin API counts them: %r %r" % (status.get("jobs_kept"), status.get("jobs_kept_bytes")))
    check(metric("orch_jobs_kept_bytes") == status.get("jobs_kept_bytes"), "the same bytes in /metrics")
    found = [get("/jobs/%s/events" % i)[0] for i in ids]
    check(found == [404, 404, 200, 200, 200], "the two oldest are gone, the newest three resume: %r" % found)
    for _ in range(3):
        post("/v1/completions", {"model": "a", "prompt": "Once", "max_tokens": 16}, JSON)
        post("/v1/chat/completions", {"model": "a", "max_tokens": 8, "stream": True,
                                      "messages": [{"role": "user", "content": "hi"}]}, JSON)
    check(metric("orch_jobs_kept") == 3 and metric("orch_jobs_evicted_total") == evicted,
          "OpenAI jobs are not kept and evict nothing")


CORR = re.compile(r"^[0-9a-f]{16}$")


def special_text():
    """parse_special: special-token text in a raw prompt is parsed by default ("<s>" is BOS
    for stories260K), kept as text with false; chat does not take it."""
    counts = {}
    for ps in (None, True, False):
        body = {"model": "a", "prompt": "<s>Once", "max_tokens": 1}
        if ps is not None:
            body["parse_special"] = ps
        st, _, t = post("/v1/completions", body, JSON)
        counts[ps] = json.loads(t).get("usage", {}).get("prompt_tokens") if st == 200 else st
    check(counts[None] == counts[True] and isinstance(counts[False], int)
          and counts[False] > counts[True], "parse_special: %r" % counts)
    st, _, t = post("/execute", {"job_id": "ps", "model": "a", "prompt": "<s>Once", "max_tokens": 1,
                                 "parse_special": False}, JSON)
    evs = sse_events(t)
    check(st == 200 and json.loads(evs[0]["data"]).get("prompt_tokens") == counts[False],
          "parse_special on /execute: %s" % t[:200])
    st, _, t = post("/v1/chat/completions", {"model": "a", "messages": [{"role": "user", "content": "x"}],
                                             "parse_special": False}, JSON)
    check(st == 400 and error_of(t).get("param") == "parse_special", "chat refuses parse_special: %s" % st)
    st, _, t = post("/v1/completions", {"model": "a", "prompt": "x", "parse_special": "no"}, JSON)
    check(st == 400 and error_of(t).get("param") == "parse_special", "parse_special must be a bool: %s" % st)


def fifo_model():
    """Item 2: model files are read off the loop, regular files only: orchd started with a
    model whose path is a FIFO (before: its start hung in open()), and that model fails at
    once with the reason in the log while /health answers."""
    t0 = time.time()
    st, _, t = post("/v1/completions", {"model": "fifo", "prompt": "Once", "max_tokens": 2}, JSON)
    check(st == 503 and error_of(t).get("code") == "MODEL_LOAD_FAILED" and time.time() - t0 < 3,
          "a FIFO model fails at once: %s %s" % (st, t[:160]))
    check(get("/health")[0] == 200, "health answers")


def leaks(o, bad_path):
    """Item 11: client errors carry no internal job numbers, paths or worker output."""
    long_prompt = "Once upon a time there was a little dog. " * 40  # over the 256-token context
    st, _, t = post("/execute", {"job_id": "long", "model": "a", "prompt": long_prompt, "max_tokens": 4}, JSON)
    evs = sse_events(t)
    e = json.loads(evs[-1]["data"]) if evs else {}
    check(e.get("code") == "CONTEXT_LENGTH_EXCEEDED" and "tokens exceeds the context of 256" in e.get("message", "")
          and not re.search(r"\bjob \d", e.get("message", "")) and CORR.match(e.get("correlation_id", "")),
          "a long prompt: the numbers the client needs, no job number, a correlation id: %r" % e)
    st, _, t = post("/v1/completions", {"model": "a", "prompt": long_prompt, "max_tokens": 4}, JSON)
    e = error_of(t)
    check(st == 400 and e.get("code") == "CONTEXT_LENGTH_EXCEEDED" and not re.search(r"\bjob \d", t)
          and CORR.match(e.get("correlation_id", "")), "the same through OpenAI: %s %s" % (st, t[:200]))
    # a model whose file is not a GGUF: the client hears "failed to load", the log says why
    st, _, t = post("/execute", {"job_id": "bad", "model": "bad", "prompt": "Once", "max_tokens": 2}, JSON)
    evs = sse_events(t)
    e = json.loads(evs[-1]["data"]) if evs else {}
    check(e.get("code") == "MODEL_LOAD_FAILED" and e.get("message") == "the model failed to load"
          and CORR.match(e.get("correlation_id", "")), "a model that fails to load (stream): %r" % e)
    check(e.get("correlation_id", "-") in o.text() and bad_path in o.text(),
          "the log has the details under the correlation id")
    st, _, t = post("/v1/completions", {"model": "bad", "prompt": "Once", "max_tokens": 2}, JSON)
    e = error_of(t)
    check(st == 503 and e.get("message") == "the model failed to load" and CORR.match(e.get("correlation_id", "")),
          "a failed model (OpenAI): %s %s" % (st, t[:200]))
    st, _, t = get("/v1/models", JSON)
    bad = [m for m in json.loads(t)["data"] if m["id"] == "bad"]
    check(bad and bad[0].get("state") == "failed" and bad[0].get("error") == "the model failed to load",
          "/v1/models: the failure without its details: %r" % bad)
    check(bad_path not in t and "output:" not in t and o.dir not in t, "no path in /v1/models")
    # the admin API: one answer for missing, a directory, and not a GGUF
    answers = []
    for p in ("/nonexistent/secret.gguf", o.dir, bad_path, "/etc/shadow", FIFO):
        st, t = orchd_lib.admin("POST", "/admin/models", {"name": "probe", "path": p})
        answers.append((st, error_of(t).get("message", "").replace(p, "PATH")))
    check(len(set(answers)) == 1 and answers[0][0] == 400, "one answer for every path: %r" % answers)


try:
    keys_fail_closed()
    kpath = os.path.join(tmp, "api.keys")
    with open(kpath, "w") as f:
        f.write("# test keys\n%s\n%s\n%s models=b\n" % (K1, K2, K3))
    os.chmod(kpath, 0o600)
    k = Orchd("keys", "api_keys_file = %s" % kpath, models=["a", "b"])
    check(k.wait_ready(), "orchd with keys is ready")
    ownership()
    keys(k, kpath)
    check(k.stop() == 0, "exit 0 after SIGTERM (keys)")
    notgguf = os.path.join(tmp, "not-a-model.gguf")
    with open(notgguf, "w") as f:
        f.write("this is not a GGUF file\n")
    os.mkfifo(FIFO)  # a model path naming a FIFO: reading it must not stall orchd (item 2)
    a = Orchd("anon", "events_keep_jobs = 3",
              models=["a", ("bad", notgguf, "preload = no"), ("fifo", FIFO, "preload = no")])
    check(a.wait_ready(), "orchd without keys is ready")
    strict_bodies()
    prompt_limits()
    special_text()
    fifo_model()
    anonymous_ids()
    log_forging(a)
    retention()
    leaks(a, notgguf)
    shutting_down(a)
    check(a.stop() == 0, "exit 0 after SIGTERM")
finally:
    for o in [v for v in globals().values() if isinstance(v, Orchd)]:
        if o.proc.poll() is None:
            o.proc.kill()
            o.proc.wait()
    if orchd_lib.failed:
        for name in sorted(os.listdir(tmp)):
            p = os.path.join(tmp, name, "orchd.log")
            if os.path.exists(p):
                sys.stderr.write("--- %s\n" % name)
                sys.stderr.write("".join(l for l in open(p) if "load_progress" not in l)[-6000:])
    shutil.rmtree(tmp, ignore_errors=True)

print("orchd_jobs_hard_test: %d passed, %d failed" % (orchd_lib.passed, orchd_lib.failed))
sys.exit(1 if orchd_lib.failed else 0)
