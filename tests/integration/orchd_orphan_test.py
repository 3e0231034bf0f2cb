#!/usr/bin/env python3
"""orchd_orphan_test - workers die with their supervisor (issue 16, item 7).

An orchd serving stories260K with jobs in flight is killed with SIGKILL: its
worker must exit within a second without trying to deliver the jobs' events
(before, it spent 5 s per job on sends nobody received). A new orchd on the
same runtime directory then starts the model again (its sockets' files are
left behind) and serves; a SIGKILL of its worker that orchd did not send is
reported as a possible OOM kill (issue 16, item 12)."""
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
DATA = os.environ["ORCH_TESTDATA"]
MODEL = os.path.join(DATA, "models", "stories260K.gguf")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import orchd_lib  # noqa: E402
from orchd_lib import check, post, admin  # noqa: E402

tmp = tempfile.mkdtemp()
orchd_lib.PORT = orchd_lib.free_port(os.getpid() + 11)
orchd_lib.ADMIN = os.path.join(tmp, "orchd.sock")
conf = os.path.join(tmp, "orchd.conf")
with open(conf, "w") as f:
    f.write("[server]\nlisten = 127.0.0.1:%d\nadmin_socket = %s\nruntime_dir = %s\n\n"
            '[model "m"]\npath = %s\nslots = 8\ncontext = 512\nthreads = 1\n'
            % (orchd_lib.PORT, orchd_lib.ADMIN, tmp, MODEL))


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
orchd.terminate()
check(orchd.wait(20) == 0, "orchd exits 0")
shutil.rmtree(tmp, ignore_errors=True)
print("orchd_orphan_test: %d passed, %d failed" % (orchd_lib.passed, orchd_lib.failed))
sys.exit(1 if orchd_lib.failed else 0)
