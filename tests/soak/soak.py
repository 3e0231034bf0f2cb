#!/usr/bin/env python3
"""soak - orchd under steady load for a long time, its worker killed now and
then (issue 16's last check; `make soak`, docs/building.md "Soak").

Starts orchd (BIN, argv[1] or ORCH_BIN) with one cpu model (stories260K from
ORCH_TESTDATA, default ../shared/testdata beside the repository): 16 slots,
context 256, one worker. For SOAK_SECONDS (1800) SOAK_STREAMS (64) client
threads each loop over streamed requests, picked at random: native
POST /execute, OpenAI /v1/completions or /v1/chat/completions, max_tokens
16-96. About 5 % of them are cut by closing the socket after a few tokens and
about 5 % (native ones) cancelled by POST /cancel with the X-Job-Id, their
stream read on to its end. Every stream the client did not close must end with
a terminal event: native `end` or `error`, OpenAI `data: [DONE]` (an `error`
object before it names the code). A stream of a killed worker ends with
WORKER_LOST, which is such an event.

The worker (found through the admin API, state ready) is killed with SIGKILL
every 90-150 s (uniform); a run shorter than 600 s uses [max(65, S/4),
max(65, S/3)] s instead, so that 240 s still sees two or three kills. Never
under 65 s: orchd's crash policy starts its failure count again only for a
worker that was ready 60 s.

Every 10 s it samples orchd's and the worker's VmRSS and open descriptors
(/proc). After the warm-up, 120 s or 10 % of the run, whichever is longer, but
at most half of it (180 s of 1800, 120 s of 240), it fits a
least-squares line to each series (KiB/min, fds/min); the worker's per pid
(its first 20 s left out as well), reporting the longest-lived pid's slope and
the median over pids with 3 or more samples.

It fails (exit 1) when, after orchd was stopped cleanly:
- a stream lost its terminal event (a stream closed without one that the client
  did not close, API-cancelled ones included), or stalled SOAK_READ_TIMEOUT
  (120 s) without a byte;
- orchd's descriptors, 5 s after the last stream, exceed the count at the end
  of the warm-up by more than 8, or the count when idle before the load by more
  than 8 (the warm-up sample holds up to 64 client connections, so only the
  second catches a leak smaller than that);
- orchd's RSS slope after the warm-up is over SOAK_RSS_SLOPE_KIB_MIN (64 KiB
  per minute: 1.7 MiB over the 27 minutes fitted of a 30-minute run, against
  about 4 KiB a kept job; the kept jobs, at most events_keep_jobs = 1000, are
  full within seconds), or over 512 KiB across the fitted window when that is
  more (a window under 8 minutes: in 4-minute runs orchd's heap still grew
  by steps of 30-290 KiB after kills, which two minutes cannot tell from a
  leak);
- orchd died, or did not exit 0 on SIGTERM.
Exit 2: orchd did not start. The report is printed and written as JSON to
SOAK_OUT (build/soak.json); orchd's log goes beside it (soak-orchd.log).

  tests/soak/soak.py BUILD/bin    (SOAK_SECONDS=1800 SOAK_STREAMS=64 SOAK_SEED=N
                                   SOAK_OUT=build/soak.json)
"""
import http.client
import json
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BIN = sys.argv[1] if len(sys.argv) > 1 else os.environ["ORCH_BIN"]
DATA = os.environ.get("ORCH_TESTDATA") or os.path.join(ROOT, "..", "shared", "testdata")
MODEL = os.path.join(DATA, "models", "stories260K.gguf")
SECONDS = float(os.environ.get("SOAK_SECONDS", "1800"))
STREAMS = int(os.environ.get("SOAK_STREAMS", "64"))
OUT = os.environ.get("SOAK_OUT") or os.path.join(ROOT, "build", "soak.json")
SEED = int(os.environ.get("SOAK_SEED") or time.time_ns() % 1000000007)
READ_TIMEOUT = float(os.environ.get("SOAK_READ_TIMEOUT", "120"))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from orchd_lib import free_port  # noqa: E402
RSS_SLOPE_MAX = float(os.environ.get("SOAK_RSS_SLOPE_KIB_MIN", "64"))
RSS_FLOOR_KIB = 512.0  # growth a short window cannot tell from the heap settling
FD_GROWTH_MAX = 8
SAMPLE_S = 10.0
QUIET_S = 5.0
WARMUP = min(max(120.0, SECONDS / 10), SECONDS / 2)
WORKER_SKIP_S = 20.0  # a worker's own warm-up
if SECONDS >= 600:
    KILL_LO, KILL_HI = 90.0, 150.0
else:
    KILL_LO, KILL_HI = max(65.0, SECONDS / 4), max(65.0, SECONDS / 3)

PROMPTS = ["Once upon a time", "One day, a little girl named Lily", "The cat sat on the mat and",
           "Tom had a big red ball.", "There was a small bird", "Sue wanted to play outside, but",
           "In the park, a dog", "The sun was hot, so Ben", "Mom said, \"Come here!\"", "A boy found a box"]
JSON_CT = {"Content-Type": "application/json"}

PORT = 0
ADMIN = ""
T0 = 0.0
stop = threading.Event()


def now():
    return time.monotonic() - T0


def admin(method, path):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    s.connect(ADMIN)
    c = http.client.HTTPConnection("localhost", timeout=10)
    c.sock = s
    c.request(method, path)
    r = c.getresponse()
    t = r.read().decode()
    c.close()
    return r.status, t


def get(path, timeout=10):
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=timeout)
    c.request("GET", path)
    r = c.getresponse()
    t = r.read().decode()
    c.close()
    return r.status, t


def ready_worker():
    """(pid, restarts) of model a's worker when it is ready, else (0, 0)."""
    try:
        st, t = admin("GET", "/admin/workers")
        for w in json.loads(t) if st == 200 else []:
            if w.get("model") == "a" and w.get("state") == "ready" and w.get("pid"):
                return w["pid"], w.get("restarts", 0)
    except (OSError, ValueError, http.client.HTTPException):
        pass
    return 0, 0


def worker_pids(ppid):
    """orch-worker children of @ppid, from the process tree."""
    try:
        kids = open("/proc/%d/task/%d/children" % (ppid, ppid)).read().split()
    except OSError:
        return []
    out = []
    for k in kids:
        try:
            if open("/proc/%s/comm" % k).read().strip() == "orch-worker":
                out.append(int(k))
        except OSError:
            pass
    return out


def proc_usage(pid):
    """(VmRSS KiB, open fds) of @pid, or (None, None) when it is gone."""
    try:
        rss = None
        for line in open("/proc/%d/status" % pid):
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
        return rss, len(os.listdir("/proc/%d/fd" % pid))
    except (OSError, ValueError):
        return None, None


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.c = {"requests": 0, "streams": 0, "completed": 0, "tokens": 0, "connect_errors": 0,
                  "cancel_close": 0, "cancel_api": 0, "lost_terminal": 0, "lost_terminal_after_api_cancel": 0,
                  "stalled": 0, "body_not_ended_after_terminal": 0, "keepalive_retries": 0, "openai_error_without_done": 0}
        self.kinds = {}
        self.errors = {}          # terminal error events and refusals of streams the client did not cancel
        self.http_status = {}     # status of every answer
        self.api_cancel_end = {}  # how API-cancelled streams ended (CANCELLED, end, ...)
        self.api_cancel_status = {}
        self.lost = []            # the first lost streams, for the log

    def add(self, key, n=1):
        with self.lock:
            self.c[key] += n

    def bump(self, table, key):
        with self.lock:
            table[key] = table.get(key, 0) + 1

    def note_lost(self, what):
        with self.lock:
            if len(self.lost) < 20:
                self.lost.append(what)


S = Stats()


def request_body(rng, kind, n, tid, max_tokens):
    prompt = rng.choice(PROMPTS)
    body = {"model": "a", "max_tokens": max_tokens, "temperature": rng.choice([0, 0.8]),
            "seed": rng.randrange(1 << 30)}
    if kind == "native":
        body.update(job_id="soak-%d-%d" % (tid, n), prompt=prompt)
        return "/execute", body
    body["stream"] = True
    if kind == "completions":
        body["prompt"] = prompt
        return "/v1/completions", body
    msgs = [{"role": "user", "content": prompt}]
    if rng.random() < 0.3:
        msgs.insert(0, {"role": "system", "content": "Tell a short story."})
    body["messages"] = msgs
    return "/v1/chat/completions", body


def error_code(text):
    try:
        return json.loads(text)["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return "unparsed"


def api_cancel(xid):
    try:
        c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=30)
        c.request("POST", "/cancel", json.dumps({"job_id": xid}), JSON_CT)
        r = c.getresponse()
        r.read()
        c.close()
        S.bump(S.api_cancel_status, str(r.status))
    except (OSError, http.client.HTTPException) as e:
        S.bump(S.api_cancel_status, type(e).__name__)


class Stream:
    """One streamed answer read line by line; @terminal says how it ended."""

    def __init__(self, kind, r):
        self.kind, self.r = kind, r
        self.event = None
        self.tokens = 0
        self.terminal = None  # "end", "[DONE]" or an error code
        self.error = None     # an OpenAI error object's code
        self.events = []

    def step(self):
        """Read one line; False at the end of the body."""
        line = self.r.readline()
        if not line:
            return False
        line = line.decode("utf-8", "replace").rstrip("\r\n")
        if line.startswith("event: "):
            self.event = line[7:]
        elif line.startswith("data: "):
            self.data(line[6:])
        elif line == "":
            self.event = None
        return True

    def data(self, d):
        if self.kind == "native":
            ev = self.event or "message"
            if len(self.events) < 8:
                self.events.append(ev)
            if ev == "token":
                self.tokens += 1
            elif ev == "end":
                self.terminal = "end"
            elif ev == "error":
                self.terminal = error_code('{"error":%s}' % d)
            return
        if d == "[DONE]":
            self.terminal = "[DONE]"
            return
        try:
            o = json.loads(d)
        except ValueError:
            return
        if "error" in o:
            self.error = error_code(d)
        elif o.get("choices"):
            self.tokens += 1


def one(rng, conn, tid, n):
    """One request on @conn (or a new connection); the connection to use next."""
    kind = rng.choice(["native", "completions", "chat"])
    cancel, x = None, rng.random()
    if x < 0.05:
        cancel = "close"
    elif x < 0.10:
        cancel, kind = "api", "native"
    max_tokens = rng.randint(16, 96)
    cut_after = rng.randint(1, max(1, max_tokens // 2))
    path, body = request_body(rng, kind, n, tid, max_tokens)
    S.bump(S.kinds, kind)
    S.add("requests")
    t_start = now()
    for attempt in range(2):  # a kept-alive connection the server closed: once more on a new one
        reused = conn is not None
        if conn is None:
            conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=READ_TIMEOUT)
        try:
            conn.request("POST", path, json.dumps(body), JSON_CT)
            r = conn.getresponse()
            break
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            conn = None
            if reused and attempt == 0 and not stop.is_set():
                S.add("keepalive_retries")
                continue
            S.add("connect_errors")
            S.bump(S.errors, "connect:" + type(e).__name__)
            return None
    S.bump(S.http_status, str(r.status))
    if r.status != 200:
        try:
            S.bump(S.errors, "http:" + error_code(r.read().decode()))
        except (OSError, http.client.HTTPException):
            S.bump(S.errors, "http:unread")
        if r.will_close:
            conn.close()
            conn = None
        return conn
    S.add("streams")
    st = Stream(kind, r)
    xid = r.getheader("X-Job-Id", "")
    cancelled = None
    try:
        while st.terminal is None:
            if cancel and cancelled is None and st.tokens >= cut_after:
                if cancel == "close":
                    conn.sock.shutdown(socket.SHUT_RDWR)
                    conn.close()
                    S.add("cancel_close")
                    return None
                api_cancel(xid)
                cancelled = "api"
                S.add("cancel_api")
            if not st.step():
                break
    except socket.timeout:
        S.add("stalled")
        S.note_lost({"why": "stalled", "kind": kind, "t": round(t_start, 1), "events": st.events,
                     "tokens": st.tokens, "id": xid, "api_cancel": cancelled is not None})
        conn.close()
        return None
    except (OSError, http.client.HTTPException):
        pass
    S.add("tokens", st.tokens)
    if st.terminal is None and kind != "native" and st.error is not None:
        S.add("openai_error_without_done")
        st.terminal = st.error
    if st.terminal is None:
        S.add("lost_terminal_after_api_cancel" if cancelled else "lost_terminal")
        S.note_lost({"why": "no terminal event", "kind": kind, "t": round(t_start, 1),
                     "t_end": round(now(), 1), "events": st.events, "tokens": st.tokens, "id": xid,
                     "api_cancel": cancelled is not None})
        conn.close()
        return None
    code = st.error if st.terminal == "[DONE]" and st.error else st.terminal
    if cancelled:
        S.bump(S.api_cancel_end, code)
    elif code in ("end", "[DONE]"):
        S.add("completed")
    else:
        S.bump(S.errors, code)
    try:  # the rest of the body (the chunked end) before the next request
        r.read()
    except socket.timeout:
        S.add("body_not_ended_after_terminal")
        conn.close()
        return None
    except (OSError, http.client.HTTPException):
        conn.close()
        return None
    if r.will_close:
        conn.close()
        return None
    return conn


def client(tid):
    rng = random.Random(SEED * 1000 + tid)
    conn, n = None, 0
    while not stop.is_set():
        n += 1
        try:
            conn = one(rng, conn, tid, n)
        except Exception as e:  # a bug here must not look like a quiet client
            S.bump(S.errors, "client:" + type(e).__name__)
            S.note_lost({"why": "client exception %r" % e, "t": round(now(), 1)})
            conn = None
    if conn is not None:
        conn.close()


def killer(kills, rng):
    while True:
        if stop.wait(rng.uniform(KILL_LO, KILL_HI)):
            return
        pid, restarts = ready_worker()
        if not pid:
            kills.append({"t": round(now(), 1), "skipped": "no ready worker"})
            continue
        os.kill(pid, signal.SIGKILL)
        k = {"t": round(now(), 1), "pid": pid}
        kills.append(k)
        t = time.monotonic()
        while not stop.is_set() and time.monotonic() - t < 60:
            p, _ = ready_worker()
            if p and p != pid:
                k["new_pid"], k["ready_after_s"] = p, round(time.monotonic() - t, 2)
                break
            time.sleep(0.1)


def sampler(orchd_pid, samples):
    while True:
        t = now()
        rss, fds = proc_usage(orchd_pid)
        s = {"t": round(t, 1), "orchd_rss_kib": rss, "orchd_fds": fds}
        ws = worker_pids(orchd_pid)
        if len(ws) == 1:
            s["worker_pid"] = ws[0]
            s["worker_rss_kib"], s["worker_fds"] = proc_usage(ws[0])
        samples.append(s)
        if stop.wait(max(0.0, SAMPLE_S - (now() - t))):
            return


def slope(points):
    """Least-squares slope of [(seconds, y)] per minute, or None."""
    if len(points) < 3:
        return None
    tm = sum(p[0] for p in points) / len(points)
    ym = sum(p[1] for p in points) / len(points)
    den = sum((p[0] - tm) ** 2 for p in points)
    if den == 0:
        return None
    return 60.0 * sum((p[0] - tm) * (p[1] - ym) for p in points) / den


def series(samples, key):
    pts = [(s["t"], s[key]) for s in samples if s["t"] >= WARMUP and s.get(key) is not None]
    return {"start": pts[0][1] if pts else None, "end": pts[-1][1] if pts else None,
            "window_s": round(pts[-1][0] - pts[0][0], 1) if pts else 0,
            "min": min(p[1] for p in pts) if pts else None, "max": max(p[1] for p in pts) if pts else None,
            "slope_per_min": round(slope(pts), 2) if slope(pts) is not None else None}


def worker_series(samples, key):
    first, by = {}, {}
    for s in samples:
        pid = s.get("worker_pid")
        if pid is None or s.get(key) is None:
            continue
        first.setdefault(pid, s["t"])
        if s["t"] >= WARMUP and s["t"] - first[pid] >= WORKER_SKIP_S:
            by.setdefault(pid, []).append((s["t"], s[key]))
    fits = {pid: slope(p) for pid, p in by.items() if slope(p) is not None}
    all_pts = [(s["t"], s[key]) for s in samples if s.get(key) is not None and s["t"] >= WARMUP]
    out = {"start": all_pts[0][1] if all_pts else None, "end": all_pts[-1][1] if all_pts else None,
           "pids": len(first), "fitted_pids": len(fits),
           "per_pid": {str(pid): {"samples": len(by[pid]), "slope_per_min": round(f, 2)} for pid, f in fits.items()}}
    if fits:
        longest = max(fits, key=lambda p: len(by[p]))
        out.update(longest_pid=longest, longest_samples=len(by[longest]),
                   longest_slope_per_min=round(fits[longest], 2),
                   median_slope_per_min=round(statistics.median(fits.values()), 2))
    return out


def metrics_lines():
    try:
        st, t = get("/metrics")
    except (OSError, http.client.HTTPException):
        return []
    keep = ("orch_requests_total", "orch_client_cancellations_total", "orch_worker_restarts_total",
            "orch_jobs_kept", "orch_jobs_evicted_total", "orch_open_streams", "orch_http_connections ",
            "orch_sse_slow_clients_total", "orch_http_deadline_closes_total")
    return [l for l in t.split("\n") if l.startswith(keep)] if st == 200 else []


def write_config(tmp):
    path = os.path.join(tmp, "orchd.conf")
    with open(path, "w") as f:
        f.write("[server]\nlisten = 127.0.0.1:%d\nadmin_socket = %s\nruntime_dir = %s\n"
                "hash_cache_beside = no\n"
                '[model "a"]\npath = %s\nslots = 16\ncontext = 256\nthreads = 1\n'
                % (PORT, ADMIN, tmp, MODEL))
    return path


def wait_ready(orchd):
    end = time.monotonic() + 30
    while time.monotonic() < end and orchd.poll() is None:
        try:
            if get("/ready")[0] == 200 and ready_worker()[0]:
                return True
        except (OSError, http.client.HTTPException):
            pass
        time.sleep(0.1)
    return False


def report(r):
    c = r["counts"]
    dur = r["load_seconds"] or 1
    o, w = r["orchd"], r["worker"]
    lines = [
        "soak: %.0f s of load, %d streams, seed %d, warm-up %.0f s, kills every %.0f-%.0f s"
        % (r["load_seconds"], STREAMS, SEED, WARMUP, KILL_LO, KILL_HI),
        "requests %d (%.1f/s): %s; streams %d, completed %d (%.1f/s), tokens %d (%.0f/s)"
        % (c["requests"], c["requests"] / dur, r["kinds"], c["streams"], c["completed"],
           c["completed"] / dur, c["tokens"], c["tokens"] / dur),
        "errors by code %s; http statuses %s; connect errors %d" % (r["errors"], r["http_status"],
                                                                   c["connect_errors"]),
        "client cancels: %d by close, %d by POST /cancel (answers %s, streams ended %s)"
        % (c["cancel_close"], c["cancel_api"], r["api_cancel_status"], r["api_cancel_end"]),
        "keep-alive connections closed under a request (sent again) %d" % c["keepalive_retries"],
        "worker kills %d (ready again after %s s)" % (len([k for k in r["kills"] if "pid" in k]),
                                                      [k.get("ready_after_s") for k in r["kills"] if "pid" in k]),
        "LOST terminal events %d (+%d after POST /cancel), stalled %d, body open after terminal %d, "
        "OpenAI error without [DONE] %d" % (c["lost_terminal"], c["lost_terminal_after_api_cancel"], c["stalled"],
                                           c["body_not_ended_after_terminal"], c["openai_error_without_done"]),
        "orchd RSS KiB: start %s end %s (min %s max %s) slope %s KiB/min over %s s (limit %g)"
        % (o["rss"]["start"], o["rss"]["end"], o["rss"]["min"], o["rss"]["max"], o["rss"]["slope_per_min"],
           o["rss"]["window_s"], o["rss"]["limit_per_min"]),
        "orchd fds: idle before %s, after warm-up %s, end %s (max %s) slope %s/min; idle after %s (limit +%d)"
        % (o["fds_idle_before"], o["fds"]["start"], o["fds"]["end"], o["fds"]["max"], o["fds"]["slope_per_min"],
           o["fds_idle_after"], FD_GROWTH_MAX),
        "worker RSS KiB: start %s end %s, %s pids; longest-lived pid %s slope %s KiB/min, median %s; per pid %s"
        % (w["rss"]["start"], w["rss"]["end"], w["rss"]["pids"], w["rss"].get("longest_pid"),
           w["rss"].get("longest_slope_per_min"), w["rss"].get("median_slope_per_min"),
           {p: v["slope_per_min"] for p, v in w["rss"]["per_pid"].items()}),
        "worker fds: start %s end %s; longest-lived slope %s/min, median %s"
        % (w["fds"]["start"], w["fds"]["end"], w["fds"].get("longest_slope_per_min"),
           w["fds"].get("median_slope_per_min")),
        "orchd's orch_requests_total: %s (orchd counts a stream cut by close after its job ended as length)"
        % ", ".join(l.split('outcome="')[1].replace('"}', "") for l in r["metrics"]
                    if l.startswith("orch_requests_total") and 'outcome="' in l),
        "orchd exit status %s" % r["orchd_exit"],
    ]
    for l in r["lost"]:
        lines.append("  lost: %s" % json.dumps(l))
    lines.append("soak: %s%s" % ("PASS" if not r["failures"] else "FAIL: ", "; ".join(r["failures"])))
    return "\n".join(lines)


def main():
    global PORT, ADMIN, T0
    if not os.path.exists(MODEL):
        print("soak: no model at %s (ORCH_TESTDATA)" % MODEL, file=sys.stderr)
        return 2
    tmp = tempfile.mkdtemp(prefix="orch-soak-")
    PORT = free_port(os.getpid() + 11)
    ADMIN = os.path.join(tmp, "orchd.sock")
    os.makedirs(os.path.dirname(os.path.abspath(OUT)), exist_ok=True)
    log_path = os.path.join(os.path.dirname(os.path.abspath(OUT)), "soak-orchd.log")
    log = open(log_path, "w")
    orchd = subprocess.Popen([os.path.join(BIN, "orchd"), "--config", write_config(tmp)], stdout=log,
                             stderr=subprocess.STDOUT)
    samples, kills, failures = [], [], []
    try:
        if not wait_ready(orchd):
            print("soak: orchd not ready in 30 s (log: %s)" % log_path, file=sys.stderr)
            return 2
        time.sleep(1)
        fds_idle_before = proc_usage(orchd.pid)[1]
        T0 = time.monotonic()
        aux = [threading.Thread(target=sampler, args=(orchd.pid, samples)),
               threading.Thread(target=killer, args=(kills, random.Random(SEED)))]
        clients = [threading.Thread(target=client, args=(k,), daemon=True) for k in range(STREAMS)]
        for t in aux + clients:
            t.start()
        while now() < SECONDS and orchd.poll() is None:
            time.sleep(min(1.0, SECONDS - now()))
        stop.set()
        load_seconds = now()
        for t in clients:
            t.join(max(1.0, READ_TIMEOUT + 30 - (now() - load_seconds)))
        hung = sum(t.is_alive() for t in clients)
        for t in aux:
            t.join(70)
        time.sleep(QUIET_S)
        rss_idle_after, fds_idle_after = proc_usage(orchd.pid)
        metrics = metrics_lines()
        alive = orchd.poll() is None
        if alive:
            orchd.send_signal(signal.SIGTERM)
            try:
                code = orchd.wait(60)
            except subprocess.TimeoutExpired:
                code = "still running 60 s after SIGTERM"
        else:
            code = "died during the soak: %s" % orchd.returncode

        o = {"rss": series(samples, "orchd_rss_kib"), "fds": series(samples, "orchd_fds"),
             "fds_idle_before": fds_idle_before, "fds_idle_after": fds_idle_after,
             "rss_idle_after_kib": rss_idle_after}
        w = {"rss": worker_series(samples, "worker_rss_kib"), "fds": worker_series(samples, "worker_fds")}
        c = dict(S.c)
        if c["lost_terminal"] or c["lost_terminal_after_api_cancel"]:
            failures.append("%d streams lost their terminal event" % (c["lost_terminal"]
                                                                      + c["lost_terminal_after_api_cancel"]))
        if c["stalled"] or hung:
            failures.append("%d streams stalled, %d clients still hung at the end" % (c["stalled"], hung))
        if fds_idle_after is None or o["fds"]["start"] is None:
            failures.append("no descriptor count of orchd")
        else:
            if fds_idle_after > o["fds"]["start"] + FD_GROWTH_MAX:
                failures.append("orchd fds %d at the end, %d after warm-up" % (fds_idle_after, o["fds"]["start"]))
            if fds_idle_after > fds_idle_before + FD_GROWTH_MAX:
                failures.append("orchd fds %d idle at the end, %d idle before" % (fds_idle_after, fds_idle_before))
        sl = o["rss"]["slope_per_min"]
        o["rss"]["limit_per_min"] = round(max(RSS_SLOPE_MAX, RSS_FLOOR_KIB * 60 / max(1.0, o["rss"]["window_s"])), 1)
        if sl is None or sl > o["rss"]["limit_per_min"]:
            failures.append("orchd RSS slope %s KiB/min (limit %g)" % (sl, o["rss"]["limit_per_min"]))
        if code != 0:
            failures.append("orchd exit status %s" % code)
        if c["requests"] == 0 or c["completed"] == 0:
            failures.append("no request completed")
        r = {"seconds": SECONDS, "load_seconds": round(load_seconds, 1), "streams": STREAMS, "seed": SEED,
             "warmup_seconds": WARMUP, "kill_interval_s": [KILL_LO, KILL_HI],
             "thresholds": {"orchd_rss_slope_kib_per_min": RSS_SLOPE_MAX, "orchd_rss_floor_kib": RSS_FLOOR_KIB,
                            "orchd_fd_growth": FD_GROWTH_MAX,
                            "read_timeout_s": READ_TIMEOUT},
             "counts": c, "kinds": S.kinds, "errors": S.errors, "http_status": S.http_status,
             "api_cancel_status": S.api_cancel_status, "api_cancel_end": S.api_cancel_end,
             "kills": kills, "orchd": o, "worker": w, "orchd_exit": code, "metrics": metrics,
             "lost": S.lost, "samples": samples, "failures": failures, "orchd_log": log_path}
        print(report(r), flush=True)
        with open(OUT, "w") as f:
            json.dump(r, f, indent=1)
            f.write("\n")
        print("soak: report in %s, orchd's log in %s" % (OUT, log_path))
        return 1 if failures else 0
    finally:
        stop.set()
        if orchd.poll() is None:
            orchd.kill()
            orchd.wait()
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
