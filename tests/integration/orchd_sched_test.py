#!/usr/bin/env python3
"""orchd_sched_test - a model's scheduling policy (issue 62, item 8), on the
repository's own model (models/stories260K.gguf: a clone alone runs it).

- `scheduler = fair` with two API keys: key A sends six jobs while the worker
  is frozen, key B one job after them; B's job starts before A's later ones
  (the queue serves the key with the fewest jobs running, then the key not
  served last), where fcfs starts it last;
- `scheduler = prefill_first` reaches the worker (`--scheduler
  prefill_first` on its command line) and serves;
- an unknown policy is refused at start naming the key."""
import json
import os
import signal
import subprocess
import sys
import threading
import time

BIN = os.environ["ORCH_BIN"]
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import orchd_lib  # noqa: E402
from orchd_lib import check, sse_events  # noqa: E402
MODEL = os.path.join(HERE, "..", "..", "models", "stories260K.gguf")
KA = "key-a-0123456789abcdef01"
KB = "key-b-0123456789abcdef01"


def worker_pid():
    for w in json.loads(orchd_lib.admin("GET", "/admin/workers")[1]):
        if w["model"] == "m" and w["state"] == "ready":
            return w["pid"]
    return 0


def run(job_id, key, out):
    c = orchd_lib.conn(timeout=60)
    c.request("POST", "/execute", json.dumps({"job_id": job_id, "model": "m", "prompt": "Once upon a time",
                                              "max_tokens": 64}),
              {"Content-Type": "application/json", "Authorization": "Bearer " + key})
    r = c.getresponse()
    evs = sse_events(r.read().decode())
    c.close()
    started = [json.loads(e["data"]) for e in evs if e["event"] == "started"]
    out[job_id] = (r.status, evs[-1]["event"] if evs else None,
                   started[0].get("started_at_ms") if started else None)


def order(policy, seed):
    """The jobs in the order they started, A's six sent first, B's one last."""
    tmp_keys = os.path.join("/tmp", "orchd_sched_%d.keys" % os.getpid())
    with open(tmp_keys, "w") as f:
        f.write("%s\n%s\n" % (KA, KB))
    os.chmod(tmp_keys, 0o600)
    o = orchd_lib.OrchdProc(BIN, "api_keys_file = %s\nmax_queue = 16\n" % tmp_keys, seed=seed,
                            more=lambda tmp: '[model "m"]\npath = %s\nslots = 2\ncontext = 128\nthreads = 1\n'
                            'scheduler = %s\n' % (MODEL, policy))
    orchd_lib.ADMIN = os.path.join(o.tmp, "orchd.sock")
    pid = worker_pid()
    check(pid > 0, "%s: the worker is ready" % policy)
    os.kill(pid, signal.SIGSTOP)
    out = {}
    threads = []
    for k, (job_id, key) in enumerate([("a%d" % i, KA) for i in range(6)] + [("b0", KB)]):
        t = threading.Thread(target=run, args=(job_id, key, out), daemon=True)
        t.start()
        threads.append(t)
        want = k + 1
        end = time.time() + 5
        while time.time() < end and (orchd_lib.metric("orch_running_jobs", {"model": "m"})
                                     + orchd_lib.metric("orch_queue_depth", {"model": "m"})) < want:
            time.sleep(0.01)
    os.kill(pid, signal.SIGCONT)
    for t in threads:
        t.join(30)
    o.stop()
    os.unlink(tmp_keys)
    check(len(out) == 7 and all(v[0] == 200 and v[1] == "end" for v in out.values()),
          "%s: all seven jobs end: %r" % (policy, out))
    return [j for j, _ in sorted(out.items(), key=lambda kv: (kv[1][2] or 0, kv[0]))]


fcfs = order("fcfs", 71)
fair = order("fair", 72)
print("start order, fcfs: %s; fair: %s" % (fcfs, fair))
check(fcfs.index("b0") == 6, "fcfs: B's job starts after A's (the worker took them all): %s" % fcfs)
check(fair.index("b0") <= 3, "fair: B's job starts before A's later ones: %s" % fair)

# prefill_first reaches the worker and serves
o = orchd_lib.OrchdProc(BIN, "", seed=73, more=lambda tmp: '[model "m"]\npath = %s\nslots = 2\ncontext = 128\n'
                        'threads = 1\nscheduler = prefill_first\n' % MODEL)
orchd_lib.ADMIN = os.path.join(o.tmp, "orchd.sock")
pid = worker_pid()
cmd = open("/proc/%d/cmdline" % pid, "rb").read().split(b"\0") if pid > 0 else []
check(b"--scheduler" in cmd and cmd[cmd.index(b"--scheduler") + 1] == b"prefill_first",
      "prefill_first: the worker runs with --scheduler prefill_first: %r" % cmd[-8:])
st, _, text = orchd_lib.post("/v1/completions", {"model": "m", "prompt": "Once", "max_tokens": 8})
check(st == 200 and json.loads(text)["usage"]["completion_tokens"] == 8, "prefill_first serves: %d %s" % (st, text[:200]))
o.stop()

# an unknown policy: orchd does not start, naming the key
bad = os.path.join("/tmp", "orchd_sched_bad_%d.conf" % os.getpid())
with open(bad, "w") as f:
    f.write('[model "m"]\npath = %s\nscheduler = lifo\n' % MODEL)
r = subprocess.run([BIN + "/orchd", "--config", bad, "--check-config"], capture_output=True, text=True, timeout=30)
os.unlink(bad)
check(r.returncode != 0 and "scheduler wants fcfs, prefill_first or fair, got 'lifo'" in r.stderr,
      "scheduler = lifo is refused: %d %r" % (r.returncode, r.stderr[-300:]))
print("orchd_sched_test: %d passed, %d failed" % (orchd_lib.passed, orchd_lib.failed))
sys.exit(1 if orchd_lib.failed else 0)
