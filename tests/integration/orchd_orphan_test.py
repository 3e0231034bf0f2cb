#!/usr/bin/env python3
"""orchd_orphan_test - workers die with their supervisor (issue 16, item 7).

An orchd serving stories260K with jobs in flight is killed with SIGKILL: its
worker must exit within a second without trying to deliver the jobs' events
(before, it spent 5 s per job on sends nobody received). A new orchd on the
same runtime directory then starts the model again (its sockets' files are
left behind) and serves; a SIGKILL of its worker that orchd did not send is
reported as a possible OOM kill (issue 16, item 12).

The runtime directory belongs to one orchd (a second one on it stops at
start); a worker stopped with SIGSTOP dies with its orchd all the same (its
own process group is orphaned: SIGHUP, SIGCONT, then its parent-death signal);
one that survives somehow (a stand-in) is killed by the next orchd through its
pidfile, and a debug endpoint some other process holds makes
the worker's start fail and be retried, not the model fail for good.
Jobs a lost worker had taken but not started are queued again and complete
on its successor; the one it was running ends with WORKER_LOST (item 12)."""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

BIN = os.environ["ORCH_BIN"]
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import orchd_lib  # noqa: E402
from orchd_lib import check, post, admin  # noqa: E402
DATA = orchd_lib.testdata("models/stories260K.gguf")
MODEL = os.path.join(DATA, "models", "stories260K.gguf")

tmp = tempfile.mkdtemp()
orchd_lib.PORT = orchd_lib.free_port(os.getpid() + 11)
orchd_lib.ADMIN = os.path.join(tmp, "orchd.sock")
conf = os.path.join(tmp, "orchd.conf")
with open(conf, "w") as f:
    f.write("[server]\nlisten = 127.0.0.1:%d\nadmin_socket = %s\nruntime_dir = %s\n\n"
            '[model "m"]\npath = %s\nslots = 8\ncontext = 512\nthreads = 1\n\n'
            '[model "n"]\npath = %s\nslots = 2\ncontext = 128\nthreads = 1\npreload = no\n\n'
            '[model "r"]\npath = %s\nslots = 1\ncontext = 512\nthreads = 1\n'
            % (orchd_lib.PORT, orchd_lib.ADMIN, tmp, MODEL, MODEL, MODEL))


def start():
    log = open(os.path.join(tmp, "orchd.log"), "a")
    p = subprocess.Popen([BIN + "/orchd", "--config", conf], stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            for w in json.loads(admin("GET", "/admin/workers")[1]):
                if w["model"] == "m" and w["state"] == "ready":
                    return p, w["pid"]
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.05)
    return p, 0


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(") ")[1][0] != "Z"
    except OSError:
        return False


orchd, worker = start()
check(worker > 0, "the worker is ready")
# 32 long streams: 8 running, 24 waiting in the worker (the responses never complete: orchd dies under them)
for i in range(32):
    threading.Thread(target=post, daemon=True,
                     args=("/execute", {"job_id": "o%d" % i, "model": "m", "prompt": "Once upon a time",
                                        "max_tokens": 100000, "temperature": 1, "seed": i})).start()
time.sleep(0.5)
orchd.send_signal(signal.SIGKILL)
orchd.wait()
t0 = time.time()
while alive(worker) and time.time() - t0 < 10:
    time.sleep(0.01)
gone_s = time.time() - t0
check(not alive(worker), "the worker exits when orchd dies")
check(gone_s < 1.0, "the worker exits within 1 s of orchd's death (took %.3f s)" % gone_s)
print("worker exited %.3f s after orchd was killed with 32 jobs in flight (8 slots)" % gone_s)
# (its supervisor_died line went to the dead orchd's pipe; serve_test cannot see it either)

# a new orchd on the same runtime directory serves the model again
orchd, worker = start()
check(worker > 0, "a restarted orchd brings the model back up")
st, _, text = post("/v1/completions", {"model": "m", "prompt": "Once", "max_tokens": 3})
check(st == 200, "the restarted orchd serves: %d %s" % (st, text[:200]))

# jobs a worker took but never started go back to the queue when it is lost (model r: 1 slot,
# so the worker holds one running job and three waiting ones)
def pid_of(model):
    for w in json.loads(admin("GET", "/admin/workers")[1]):
        if w["model"] == model and w["state"] == "ready":
            return w["pid"]
    return 0


def stream_first_then_rest(out, job_id="r1", max_tokens=400):
    c = orchd_lib.conn()
    c.request("POST", "/execute", json.dumps({"job_id": job_id, "model": "r", "prompt": "Once upon a time",
                                              "max_tokens": max_tokens, "temperature": 1, "seed": 1}),
              orchd_lib.JSON_CT)
    r = c.getresponse()
    while True:
        line = r.readline()
        if not line:
            break
        if line.startswith(b"event: started"):
            out.setdefault("started", threading.Event()).set()
        if line.startswith(b"event: token"):
            out["first"].set()
        out["body"] += line.decode()


rpid = pid_of("r")
check(rpid > 0, "model r is ready")
running = {"first": threading.Event(), "body": ""}
t1 = threading.Thread(target=stream_first_then_rest, args=(running,), daemon=True)
t1.start()
check(running["first"].wait(10), "the running job streams")
os.kill(rpid, signal.SIGSTOP)  # frozen mid-job: what it takes next it cannot start
waiting = [{} for _ in range(3)]
threads = [threading.Thread(target=lambda o=o, i=i: o.update(r=post(
    "/v1/completions", {"model": "r", "prompt": "Once", "max_tokens": 4, "seed": i})), daemon=True)
    for i, o in enumerate(waiting)]
for t in threads:
    t.start()
time.sleep(0.5)
os.kill(rpid, signal.SIGKILL)
t1.join(20)
for t in threads:
    t.join(30)
check("WORKER_LOST" in running["body"], "the running job ends with WORKER_LOST")
check(all(o.get("r", (0,))[0] == 200 for o in waiting),
      "the three jobs it had not started complete on the next worker: %r"
      % [o.get("r", (0, 0, ""))[::2] for o in waiting])
requeued = [l for l in orchd_lib.get("/metrics")[2].splitlines()
            if l.startswith("orch_jobs_requeued_total ")]
check(requeued == ["orch_jobs_requeued_total 3"], "requeues are counted: %r" % requeued)

# the same for jobs the worker had admitted (their started event went out) but not begun: they
# run on the next worker, and their stream has one started event, then tokens, then its end
deadline = time.time() + 20
while time.time() < deadline and (pid_of("r") in (0, rpid)):
    time.sleep(0.05)
rpid = pid_of("r")
running = {"first": threading.Event(), "body": ""}
t1 = threading.Thread(target=stream_first_then_rest, args=(running, "r2"), daemon=True)
t1.start()
check(running["first"].wait(10), "the running job streams (2)")
os.kill(rpid, signal.SIGSTOP)
admitted = [{"first": threading.Event(), "started": threading.Event(), "body": ""} for _ in range(3)]
threads = [threading.Thread(target=stream_first_then_rest, args=(o, "w%d" % i, 8), daemon=True)
           for i, o in enumerate(admitted)]
for t in threads:
    t.start()
time.sleep(0.2)
deadline = time.time() + 5  # let it run a few ms at a time until it has admitted all three
while time.time() < deadline and not all(o["started"].is_set() for o in admitted):
    os.kill(rpid, signal.SIGCONT)
    time.sleep(0.003)
    os.kill(rpid, signal.SIGSTOP)
    time.sleep(0.05)
check(all(o["started"].is_set() for o in admitted), "the worker admitted the three jobs")
check(not any(o["first"].is_set() for o in admitted), "none of them has a token yet")
os.kill(rpid, signal.SIGKILL)
t1.join(20)
for t in threads:
    t.join(30)
check("WORKER_LOST" in running["body"], "the running job ends with WORKER_LOST (2)")
for o in admitted:
    evs = [l[7:] for l in o["body"].splitlines() if l.startswith("event: ")]
    check(evs.count("started") == 1 and evs[-1] == "end" and "token" in evs,
          "an admitted job completes on the next worker, one started event: %r" % evs)
requeued = [l for l in orchd_lib.get("/metrics")[2].splitlines()
            if l.startswith("orch_jobs_requeued_total ")]
check(requeued == ["orch_jobs_requeued_total 6"], "requeues are counted (2): %r" % requeued)

# a second orchd on the same runtime directory stops at once and says why
second = subprocess.run([BIN + "/orchd", "--config", conf, "--listen", "127.0.0.1:%d"
                         % orchd_lib.free_port(os.getpid() + 97),
                         "--admin-socket", os.path.join(tmp, "second.sock")],
                        capture_output=True, text=True, timeout=20)
check(second.returncode != 0 and "in use by another orchd" in second.stdout + second.stderr,
      "a second orchd on the runtime directory is refused: %d %r"
      % (second.returncode, (second.stdout + second.stderr)[-300:]))
st, _, text = post("/v1/completions", {"model": "m", "prompt": "Once", "max_tokens": 2})
check(st == 200, "the first orchd still serves: %d" % st)

# a debug endpoint another process holds: the worker's start is retried, the model loads
holder = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
holder.bind(os.path.join(tmp, "worker-n-0.debug"))
holder.listen(16)
result = {}
t = threading.Thread(target=lambda: result.update(
    r=post("/v1/completions", {"model": "n", "prompt": "Once", "max_tokens": 2})), daemon=True)
t.start()
time.sleep(3.5)  # past the worker's own 2 s of tries: it exits, orchd starts it again
holder.close()
os.unlink(os.path.join(tmp, "worker-n-0.debug"))
t.join(30)
check(result.get("r", (0,))[0] == 200,
      "a busy debug endpoint delays the model, it does not fail it: %r" % (result.get("r"),))
log_text = open(os.path.join(tmp, "orchd.log")).read()
check("debug_open_failed" in log_text and "worker_restart_scheduled worker=n-0" in log_text,
      "the busy endpoint was seen and the worker restarted")

# a worker killed by SIGKILL that orchd did not send (the OOM killer's signal) is reported as such
os.kill(worker, signal.SIGKILL)
reason, deadline = "", time.time() + 20
while time.time() < deadline and "SIGKILL" not in reason:
    try:
        h = json.loads(orchd_lib.get("/health")[2])
        reason = h["models"]["m"]["workers"][0].get("last_restart_reason", "")
    except (OSError, ValueError, KeyError, IndexError):
        pass
    time.sleep(0.05)
check("killed by SIGKILL, not sent by orchd" in reason and "OOM" in reason,
      "an outside SIGKILL is reported as a possible OOM kill: %r" % reason)
# a worker that outlives its orchd (stopped: the parent-death signal waits) is killed by the next one
deadline = time.time() + 20
while time.time() < deadline:
    try:
        w = [w for w in json.loads(admin("GET", "/admin/workers")[1]) if w["model"] == "m"][0]
        if w["state"] == "ready" and w["pid"] != worker:
            worker = w["pid"]
            break
    except (OSError, ValueError, KeyError, IndexError):
        pass
    time.sleep(0.05)
# a stopped worker: where its new parent leaves its process group (its own, so that a
# terminal's Ctrl-C reaches orchd alone) orphaned, the kernel sends it SIGHUP and SIGCONT and
# its parent-death signal ends it; under a subreaper in the same session it survives, and the
# next orchd kills it through its pidfile. Either way it is gone once that one runs.
os.kill(worker, signal.SIGSTOP)
orchd.send_signal(signal.SIGKILL)
orchd.wait()
time.sleep(0.5)
print("the stopped worker %s its orchd" % ("outlived" if alive(worker) else "died with"))
# and a left-over worker for certain: a stand-in, an orch-worker blocked opening a FIFO,
# named by a pidfile of its own
fifo = os.path.join(tmp, "never-written")
os.mkfifo(fifo)
stand_in = subprocess.Popen([BIN + "/orch-worker", "run", "--model", MODEL, "--prompt-file", fifo,
                             "-n", "1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
time.sleep(0.3)
with open("/proc/%d/stat" % stand_in.pid) as f:
    start_time = f.read().rsplit(") ", 1)[1].split()[19]
with open(os.path.join(tmp, "worker-z-9.pid"), "w") as f:
    f.write("%d %s\n" % (stand_in.pid, start_time))
orchd, fresh = start()
check(not alive(worker), "the stopped worker %d is gone once the next orchd runs" % worker)
try:
    stand_in.wait(5)
except subprocess.TimeoutExpired:
    pass
check(stand_in.poll() is not None, "the next orchd killed the left-over worker %d" % stand_in.pid)
if stand_in.poll() is None:
    stand_in.kill()
check(fresh > 0 and fresh != worker, "and serves with a worker of its own")
log_text = open(os.path.join(tmp, "orchd.log")).read()
check("left_over_worker_killed" in log_text and "runtime_dir_swept" in log_text,
      "the sweep is logged")
if alive(worker):
    os.kill(worker, signal.SIGKILL)
orchd.terminate()
check(orchd.wait(20) == 0, "orchd exits 0")
check(not any(n.endswith(".pid") for n in os.listdir(tmp)), "no pidfile left after a clean exit")
if not os.environ.get("KEEP_TMP"):
    shutil.rmtree(tmp, ignore_errors=True)
else:
    print("kept", tmp)
print("orchd_orphan_test: %d passed, %d failed" % (orchd_lib.passed, orchd_lib.failed))
sys.exit(1 if orchd_lib.failed else 0)
