#!/usr/bin/env python3
"""orchd_health_test - worker health and identity end to end (docs/operations.md):

- a worker whose residency check fails (the test-only ORCH_FAULT_RESIDENCY:
  the check fails while the file it names exists) is marked unhealthy, gets
  no new jobs, lets its running job finish, restarts, and orchctl status,
  the log and orch_worker_unhealthy_total say why;
- an unhealthy worker whose jobs do not finish within unhealthy_drain_s
  (paused with SIGSTOP) is killed: those jobs end WORKER_LOST (retriable),
  a job that arrived meanwhile waited in orchd's queue and runs on the
  restarted worker;
- the model's sha256 is cached in orchd's state directory, not beside the file
  (hash_cache_beside = no, the default) (first start: hashed during
  the load, in Ready; after the restart: from the cache, in Hello);
- a worker of another build (the test-only ORCH_FAULT_BUILD_ID) is refused
  and not restarted, the model failed with a message saying why."""
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

BIN = os.environ["ORCH_BIN"]
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import orchd_lib  # noqa: E402
from orchd_lib import check, post, get, sse_events, admin  # noqa: E402
DATA = orchd_lib.testdata("models/stories260K.gguf")

tmp = tempfile.mkdtemp()
MODEL = os.path.join(tmp, "m.gguf")
shutil.copy(os.path.join(DATA, "models", "stories260K.gguf"), MODEL)
SHA = hashlib.sha256(open(MODEL, "rb").read()).hexdigest()
FAULT = os.path.join(tmp, "residency-fault")
procs = []


def start(name, env_extra, server="", tries=3):
    port = orchd_lib.free_port(os.getpid() + 11 * len(procs))
    sock = os.path.join(tmp, name + ".sock")
    conf = os.path.join(tmp, name + ".conf")
    rt = os.path.join(tmp, name)
    os.makedirs(rt, exist_ok=True)
    with open(conf, "w") as f:
        f.write("[server]\nlisten = 127.0.0.1:%d\nadmin_socket = %s\nruntime_dir = %s\n%s\n"
                '[model "r"]\npath = %s\nslots = 1\ncontext = 512\nthreads = 1\n'
                % (port, sock, rt, server, MODEL))
    log_path = os.path.join(tmp, name + ".log")
    log = open(log_path, "w")
    p = subprocess.Popen([BIN + "/orchd", "--config", conf], stdout=log, stderr=subprocess.STDOUT,
                         env=dict(os.environ, **env_extra))
    procs.append((p, log, log_path))
    orchd_lib.PORT, orchd_lib.ADMIN = port, sock
    end = time.time() + 60
    while time.time() < end and not os.path.exists(sock) and p.poll() is None:
        time.sleep(0.02)
    if not os.path.exists(sock):  # another test took the port between free_port and bind?
        out = open(log_path).read()
        if p.poll() is not None and "the port is in use" in out and tries > 1:
            return start(name, env_extra, server, tries - 1)
        raise RuntimeError("orchd %s did not start (exit %r): %s" % (name, p.poll(), out[-2000:]))
    return p, log_path


def worker():
    ws = json.loads(admin("GET", "/admin/workers")[1])
    return ws[0] if ws else {}


def wait_worker(pred, timeout=20, step=0.05):
    end = time.time() + timeout
    while time.time() < end:
        w = worker()
        if pred(w):
            return w
        time.sleep(step)
    return worker()


def metric(name, labels):
    for line in get("/metrics")[2].splitlines():
        if line.startswith(name + "{") and all('%s="%s"' % kv in line for kv in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def stream(results, key, job_id, n):
    st, _, text = post("/execute", {"job_id": job_id, "model": "r", "prompt": "Once upon a time",
                                     "max_tokens": n, "temperature": 0})
    results[key] = (st, sse_events(text))


def streams(ids, n):
    """Start a stream per job id (threads); the results land in the returned dict."""
    res = {}
    th = [threading.Thread(target=stream, args=(res, k, k, n)) for k in ids]
    [t.start() for t in th]
    return res, th


def names(events):
    return [e["event"] for e in events]


def orchctl_status():
    return subprocess.run([BIN + "/orchctl", "status", "--socket", orchd_lib.ADMIN],
                          capture_output=True, text=True).stdout


def unhealthy_then_drained(pid1, log_path):
    """Phase 1: the residency check fails with a job running; the job ends; a restart follows."""
    os.kill(pid1, signal.SIGSTOP)  # the job and the fault reach it at once
    res, th = streams(["p1"], 200)
    time.sleep(0.3)
    open(FAULT, "w").close()
    time.sleep(1.2)  # past the worker's next residency check (residency_check_s = 1)
    os.kill(pid1, signal.SIGCONT)
    [t.join(20) for t in th]
    os.unlink(FAULT)  # the restart (after a backoff of about 1 s) is healthy
    st, evs = res.get("p1", (0, []))
    check(st == 200 and names(evs)[0] == "started" and names(evs)[-1] == "end"
          and json.loads(evs[-1]["data"])["tokens_out"] == 200,
          "the running job finished on the unhealthy worker: %r" % names(evs)[-3:])
    w = wait_worker(lambda w: w.get("state") == "ready" and w.get("pid") not in (0, pid1))
    check(w.get("state") == "ready" and w["pid"] != pid1, "restarted: %r" % w)
    check("unhealthy: residency check failed: injected residency fault" in w.get("last_restart_reason", ""),
          "the admin API says why: %r" % w.get("last_restart_reason"))
    check(w.get("status") == "healthy" and w.get("resident") is True, "healthy again: %r" % w)
    out = orchctl_status()
    check("worker r-0 last restart: unhealthy: residency check failed" in out, "orchctl status: %r" % out)
    log = open(log_path).read()
    check("event=worker_unhealthy worker=r-0" in log and "injected residency fault" in log,
          "logged: worker_unhealthy")
    check(metric("orch_worker_unhealthy_total", {"model": "r", "worker": "r-0", "reason": "residency"}) == 1,
          "orch_worker_unhealthy_total counts it")
    check(metric("orch_worker_restarts_total", {"model": "r", "worker": "r-0"}) == 1, "the restart counted")
    return w["pid"]


def unhealthy_then_killed(pid2, log_path):
    """Phase 2: jobs that do not finish within unhealthy_drain_s; a job arriving meanwhile waits."""
    os.kill(pid2, signal.SIGSTOP)
    res, th = streams(["k%d" % i for i in range(4)], 500)  # 4 jobs, one slot: about 2000 tokens
    time.sleep(0.3)
    open(FAULT, "w").close()
    time.sleep(1.2)
    os.kill(pid2, signal.SIGCONT)
    w = wait_worker(lambda w: w.get("state") == "unhealthy", timeout=10, step=0.005)
    os.kill(pid2, signal.SIGSTOP)  # its jobs cannot finish now
    t0 = time.time()
    check(w.get("state") == "unhealthy" and "residency check failed" in w.get("reason", ""),
          "unhealthy, with the reason: %r" % {k: w.get(k) for k in ("state", "reason", "jobs")})
    h = json.loads(get("/health")[2])["models"]["r"]
    check(h["status"] == "unhealthy" and h["workers"][0]["status"] == "unhealthy"
          and h["workers"][0]["resident"] is False, "/health: unhealthy: %r" % h["workers"][0])
    late, th2 = streams(["late"], 8)  # no healthy worker: it waits in orchd's queue
    time.sleep(0.3)
    st = json.loads(admin("GET", "/admin/status")[1])
    check([m["queued"] for m in st["models"] if m["name"] == "r"] == [1],
          "a new job is not routed to the unhealthy worker")
    # the kill: the fault goes the moment pid2 is gone (pid 0 or already the next one), so the
    # restarted worker's first residency check cannot read it on a busy machine
    wait_worker(lambda w: w.get("pid") != pid2, timeout=10, step=0.005)
    waited = time.time() - t0
    os.unlink(FAULT)
    [t.join(60) for t in th]
    lost = [k for k, (s, evs) in res.items() if evs and evs[-1]["event"] == "error"
            and json.loads(evs[-1]["data"]).get("code") == "WORKER_LOST"
            and json.loads(evs[-1]["data"]).get("retriable") is True and "token" in names(evs)]
    done = [k for k, (s, evs) in res.items() if names(evs)[-1:] == ["end"]]
    # the one in the slot ends WORKER_LOST if a token of it went out before the kill (the
    # worker may be stopped before its first one, on a slow build); the others, and a slot
    # job with no token, run again on the restarted worker
    check(len(lost) <= 1 and len(lost) + len(done) == 4
          and all(names(evs).count("started") == 1 for _, evs in res.values()),
          "past unhealthy_drain_s a job with a token out ends WORKER_LOST, the others (no token "
          "yet) run on the restarted worker: %r" % {k: names(v[1])[-1:] for k, v in res.items()})
    check(2.0 <= waited < 6.0, "killed after unhealthy_drain_s (3 s): %.1f s" % waited)
    check("why=\"killed: unhealthy, and its jobs did not finish within unhealthy_drain_s\"" in open(log_path).read(),
          "the kill logged with its reason")
    [t.join(30) for t in th2]
    st, evs = late.get("late", (0, []))
    check(st == 200 and names(evs)[-1:] == ["end"], "the queued job ran on the restarted worker: %r" % names(evs))
    w = wait_worker(lambda w: w.get("state") == "ready")
    check(w.get("pid") not in (0, pid2) and "killed: unhealthy" in w.get("last_restart_reason", ""),
          "restarted after the kill: %r" % w.get("last_restart_reason"))
    check(metric("orch_worker_unhealthy_total", {"model": "r", "worker": "r-0", "reason": "residency"}) == 2,
          "counted twice in all")


def residency():
    p, log_path = start("res", {"ORCH_FAULT_RESIDENCY": FAULT},
                        "residency_check_s = 1\nunhealthy_drain_s = 3\nheartbeat_timeout_s = 20\n")
    w = wait_worker(lambda w: w.get("state") == "ready")
    check(w.get("state") == "ready", "worker ready: %r" % w)
    check(w.get("model_sha256") == SHA, "Ready brought the model's sha256: %r" % w.get("model_sha256"))
    # cached in orchd's state (here its runtime dir), keyed by path, size, mtime and inode; the
    # model's folder is left as found (issue 62, item 9)
    hashes = os.path.join(tmp, "res", "model-hashes")
    cached = [open(os.path.join(hashes, f)).read() for f in os.listdir(hashes)] if os.path.isdir(hashes) else []
    check(len(cached) == 1 and cached[0].endswith("sha256=%s\n" % SHA) and " ino=" in cached[0],
          "the digest is cached in STATE/model-hashes: %r" % cached)
    check(not os.path.exists(MODEL + ".sha256"), "nothing is written beside the model")
    pid2 = unhealthy_then_drained(w["pid"], log_path)
    hellos = [l for l in open(log_path).read().splitlines() if "event=worker_hello worker=r-0" in l]
    check(len(hellos) == 2 and "model_sha256=-" in hellos[0] and "model_sha256=%s" % SHA in hellos[1],
          "the restarted worker's Hello carries the cached digest: %r" % hellos)
    unhealthy_then_killed(pid2, log_path)
    p.send_signal(signal.SIGTERM)
    check(p.wait(20) == 0, "orchd exits 0")


def build_skew():
    p, log_path = start("skew", {"ORCH_FAULT_BUILD_ID": "orch-0.0.0+skew"})
    end = time.time() + 20
    st = {}
    while time.time() < end:
        st = json.loads(admin("GET", "/admin/status")[1])
        if st["models"][0]["state"] == "failed":
            break
        time.sleep(0.05)
    m = st["models"][0]
    check(m["state"] == "failed" and "is build 'orch-0.0.0+skew'" in m.get("error", "")
          and "restart orchd" in m.get("error", ""), "a worker of another build is refused: %r" % m)
    check(m["restarts"] == 0 and st["workers"][0]["restarts"] == 0, "and not restarted")
    log = open(log_path).read()
    check("event=worker_refused worker=r-0 build_id=orch-0.0.0+skew" in log, "the refusal is logged")
    st_, _, t = post("/execute", {"job_id": "x", "model": "r", "prompt": "hi", "max_tokens": 2})
    check(st_ == 503 and json.loads(t)["error"]["code"] == "MODEL_LOAD_FAILED", "requests get 503: %s" % t[:200])
    h = json.loads(get("/health")[2])
    check(h["models"]["r"]["status"] == "unhealthy" and h["models"]["r"]["state"] == "failed",
          "/health: the model is unhealthy: %r" % h["models"]["r"])
    p.send_signal(signal.SIGTERM)
    check(p.wait(20) == 0, "orchd exits 0")


try:
    residency()
    build_skew()
finally:
    for p, log, path in procs:
        if p.poll() is None:
            p.kill()
            p.wait()
        log.close()
        if orchd_lib.failed:
            sys.stderr.write("---- %s\n" % path)
            sys.stderr.write("".join(l for l in open(path) if "load_progress" not in l)[-8000:])
    shutil.rmtree(tmp, ignore_errors=True)

print("orchd_health_test: %d passed, %d failed" % (orchd_lib.passed, orchd_lib.failed))
sys.exit(1 if orchd_lib.failed else 0)
