#!/usr/bin/env python3
"""orchd_crashloop_test - a worker that crashes seconds after each Ready (issue 52,
A8), on the repository's own model (a clone alone runs it):

- the restart delay keeps doubling (1, 2, 4, 8 s, ±20 %): a Ready followed by a
  crash within seconds does not start it again at 1 s (only a minute of serving
  does);
- the fifth crash in ten minutes fails the model, and what the admin API and
  orchctl say of it names the signal ("killed by SIGABRT"), not "status 134",
  holds no load-progress lines of the worker's output, and is cut, when it is,
  at a word."""
import json
import os
import re
import signal
import sys
import time

BIN = os.environ["ORCH_BIN"]
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import orchd_lib  # noqa: E402
from orchd_lib import check, admin  # noqa: E402
MODEL = os.path.join(HERE, "..", "..", "models", "stories260K.gguf")


def ready_pid(not_pid, timeout=30):
    end = time.time() + timeout
    while time.time() < end:
        for w in json.loads(admin("GET", "/admin/workers")[1]):
            if w["model"] == "m" and w["state"] == "ready" and w["pid"] not in (0, not_pid):
                return w["pid"]
        time.sleep(0.02)
    return 0


o = orchd_lib.OrchdProc(BIN, "", seed=31,
                        more=lambda tmp: '[model "m"]\npath = %s\nslots = 1\ncontext = 128\nthreads = 1\n' % MODEL)
orchd_lib.ADMIN = os.path.join(o.tmp, "orchd.sock")
pid = 0
for i in range(5):
    pid = ready_pid(pid)
    check(pid > 0, "crash %d: a ready worker" % (i + 1))
    if pid <= 0:
        break
    time.sleep(0.3)  # served a moment: Ready, then a crash within seconds
    os.kill(pid, signal.SIGABRT)  # not SIGSEGV: ASan builds catch that and abort themselves
end = time.time() + 10
model = {}
while time.time() < end:
    model = next((m for m in json.loads(admin("GET", "/admin/status")[1])["models"] if m.get("name") == "m"), {})
    if model.get("state") == "failed":
        break
    time.sleep(0.05)
log = o.log_text()
delays = [int(x) for x in re.findall(r"event=worker_restart_scheduled worker=m-0 in_ms=(\d+)", log)]
print("restart delays (ms):", delays)
check(len(delays) == 4, "4 restarts before the model fails: %r" % delays)
for k, ms in enumerate(delays):
    check(ms >= 0.8 * 1000 * 2 ** k, "restart %d waits %d ms, at least 0.8 × %d: it doubles" % (k + 1, ms, 1000 * 2 ** k))
err = model.get("error", "")
print("the model's error:", err)
check(model.get("state") == "failed", "the fifth crash fails the model: %r" % model.get("state"))
check("killed by SIGABRT (Aborted)" in err, "the error names the signal: %r" % err)
check("status 134" not in err, "no 'status 134': %r" % err)
check("model_load_progress" not in err, "no load progress in the error: %r" % err)
check("<6>" not in err and "model_load_start" not in err and "model_load_complete" not in err,
      "no info lines of the load, no <N> prefixes, in the error: %r" % err)
check(not err.endswith("…") or err[-2] == " ", "cut at a word: %r" % err[-40:])
o.stop()
print("orchd_crashloop_test: %d passed, %d failed" % (orchd_lib.passed, orchd_lib.failed))
sys.exit(1 if orchd_lib.failed else 0)
