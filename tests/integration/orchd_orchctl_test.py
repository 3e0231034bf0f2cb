#!/usr/bin/env python3
"""orchd_orchctl_test - orchctl that talks back (issue 18), with the repository's
models/stories260K.gguf only (no ../shared data):

- orchctl --version / version; --socket and --json before or after the subcommand;
- load of a non-GGUF file, a missing file, an unknown device: an error in words on
  stderr, exit 1, JSON only with --json; --context beyond n_ctx_train warns;
- load waits by default (plain progress lines, not one per percent) and exits 0 when
  ready; a load short of memory fails in words, exit 1, and 'orchctl logs' says why;
- unload frees /ready and the memory figures of ps, status and /metrics;
- rm forgets a runtime model and refuses a configured one;
- runtime models persist across a restart (loaded ones loaded, unloaded ones known);
- a burst of load/unload/rm with SIGKILL at random points: the state file is always
  the state before or after the request in flight, and orchd starts on it.
ORCH_TEST_SEED sets the burst's seed."""
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

BIN = os.environ["ORCH_BIN"]
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import orchd_lib  # noqa: E402
from orchd_lib import check, get, admin  # noqa: E402

tmp = tempfile.mkdtemp()
MODEL = os.path.join(tmp, "m.gguf")
shutil.copy(os.path.join(HERE, "..", "..", "models", "stories260K.gguf"), MODEL)
SOCK = os.path.join(tmp, "orchd.sock")
RT = os.path.join(tmp, "rt")
STATE = os.path.join(RT, "models.json")
CONF = os.path.join(tmp, "orchd.conf")
PORT = orchd_lib.free_port(os.getpid() * 13)
with open(CONF, "w") as f:
    f.write("[server]\nlisten = 127.0.0.1:%d\nadmin_socket = %s\nruntime_dir = %s\n"
            "cpu_memory_mib = 512\n"
            '[model "c"]\npath = %s\nslots = 1\ncontext = 64\nthreads = 1\npreload = false\n'
            % (PORT, SOCK, RT, MODEL))
orchd_lib.PORT, orchd_lib.ADMIN = PORT, SOCK
proc = None
log = open(os.path.join(tmp, "orchd.log"), "a")


def start(wait_ready=True):
    global proc
    proc = subprocess.Popen([BIN + "/orchd", "--config", CONF], stdout=log, stderr=subprocess.STDOUT)
    end = time.time() + 20
    while time.time() < end and proc.poll() is None:
        try:
            if admin("GET", "/admin/status")[0] == 200 and (not wait_ready or get("/ready")[0] == 200):
                return True
        except OSError:
            pass
        time.sleep(0.05)
    return False


def stop(sig=signal.SIGTERM):
    proc.send_signal(sig)
    proc.wait(20)


def orchctl(*args, env=None):
    return subprocess.run([BIN + "/orchctl"] + list(args), capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, ORCHD_SOCKET=SOCK) if env is None else env)


def status():
    return json.loads(admin("GET", "/admin/status")[1])


def model(name):
    return next((m for m in status()["models"] if m["name"] == name), None)


def wait_for(cond, what, secs=20):
    end = time.time() + secs
    while time.time() < end:
        if cond():
            return True
        time.sleep(0.05)
    return check(False, what)


def memory_figures(name):
    """ps's and /metrics' memory of @name's workers, and status's device total."""
    ps = [w["memory_used_bytes"] for w in json.loads(orchctl("ps", "--json").stdout) if w["model"] == name]
    met = [float(l.split()[-1]) for l in get("/metrics")[2].splitlines()
           if l.startswith("orch_worker_memory_used_bytes{model=\"%s\"" % name)]
    dev = sum(d["memory_used_bytes"] for d in status()["devices"])
    return ps, met, dev


def cli_checks():
    noenv = {k: v for k, v in os.environ.items() if k != "ORCHD_SOCKET"}
    v1, v2 = orchctl("--version"), orchctl("version")
    check(v1.returncode == 0 and v1.stdout.startswith("orchctl ") and v1.stdout == v2.stdout,
          "--version and version agree: %r %r" % (v1.stdout, v2.stdout))
    r = orchctl("--socket", SOCK, "status", env=noenv)
    check(r.returncode == 0 and "orchd" in r.stdout, "--socket before the command: %r" % r.stderr)
    r = orchctl("status", "--json", "--socket=" + SOCK, env=noenv)
    check(r.returncode == 0 and json.loads(r.stdout)["ready"] is True, "--json after it")
    r = orchctl("--socket", os.path.join(tmp, "nope.sock"), "ps", env=noenv)
    check(r.returncode == 3 and "cannot reach orchd" in r.stderr, "unreachable: exit 3: %r" % r.stderr)

    r = orchctl("load", "bad", "/etc/passwd")
    check(r.returncode == 1 and r.stderr == "orchctl: load bad: /etc/passwd is not a GGUF file (bad magic)\n"
          and r.stdout == "", "not a GGUF in words: %r" % r.stderr)
    r = orchctl("load", "bad", tmp)
    check(r.returncode == 1 and "is not a regular file" in r.stderr, "a directory: %r" % r.stderr)
    st, t = admin("POST", "/admin/models", {"name": "bad", "path": "/etc/passwd"})
    check(st == 400 and "is not a GGUF file orchd can read" in t, "orchd's own answer: %s %s" % (st, t))
    r = orchctl("load", "bad", os.path.join(tmp, "nonexistent.gguf"))
    check(r.returncode == 1 and "nonexistent.gguf" in r.stderr, "missing file: %r" % r.stderr)
    r = orchctl("load", "x", MODEL, "--device", "cuda:0")
    check(r.returncode == 1 and "no device 'cuda:0'" in r.stderr, "unknown device: %r" % r.stderr)
    r = orchctl("--json", "load", "x", MODEL, "--device", "cuda:7")
    check(r.returncode == 1 and json.loads(r.stdout)["error"]["param"] == "device",
          "--json: the error body on stdout: %r" % r.stdout)
    r = orchctl("load", "x", MODEL, "--slots", "zero")
    check(r.returncode == 2 and "--slots wants a number" in r.stderr, "bad number: %r" % r.stderr)
    r = orchctl("logs", "bad")
    check(r.returncode == 1 and "no worker or model 'bad'" in r.stderr, "logs of no model: %r" % r.stderr)
    check(model("bad") is None and model("x") is None, "refused loads add no model")

    r = orchctl("load", "big", MODEL, "--context", "999999", "--slots", "1", "--no-wait")
    check(r.returncode == 0 and "warning: load big: context 999999 is beyond the model's training context"
          in r.stderr, "--context beyond n_ctx_train warns: %r" % r.stderr)
    check(orchctl("rm", "big").returncode == 0, "rm big")


def load_unload_checks():
    r = orchctl("load", "e", MODEL, "--slots", "1", "--context", "128")
    lines = [l for l in r.stdout.splitlines() if l.startswith("e: loading")]
    check(r.returncode == 0 and "e: ready" in r.stdout and 1 <= len(lines) <= 11,
          "load waits, plain progress lines: %r %r" % (r.stdout, r.stderr))
    check(get("/ready")[0] == 200, "ready with e loaded")
    ps, met, dev = memory_figures("e")
    check(ps and ps[0] > 0 and met and met[0] > 0 and dev > 0, "e's memory counted: %r" % ((ps, met, dev),))

    r = orchctl("load", "huge", MODEL, "--slots", "256", "--context", "1048576")
    check(r.returncode == 1 and "orchctl: load huge: " in r.stderr and "needs" in r.stderr,
          "a load short of memory fails in words: %r" % r.stderr)
    check(get("/ready")[0] == 503, "/ready waits for a failed wanted model")
    r = orchctl("logs", "huge")
    check(r.returncode == 0 and r.stdout.startswith("huge failed: ") and "INSUFFICIENT" in r.stdout,
          "logs says why: %r %r" % (r.stdout, r.stderr))
    r = orchctl("unload", "huge")
    check(r.returncode == 0, "unload huge: %r" % r.stderr)
    wait_for(lambda: get("/ready")[0] == 200, "/ready after unloading the failed model")

    r = orchctl("unload", "e")
    check(r.returncode == 0 and "e: unloading" in r.stdout, "unload e: %r" % r.stderr)
    wait_for(lambda: model("e")["state"] == "stopped", "e stopped")
    wait_for(lambda: memory_figures("e") == ([0], [0.0], 0), "unload frees ps, /metrics and status memory: %r"
             % (memory_figures("e"),))
    check(get("/ready")[0] == 200, "ready after unload")
    r = orchctl("unload", "zzz")
    check(r.returncode == 1 and "no model 'zzz'" in r.stderr, "unload of no model: %r" % r.stderr)
    r = orchctl("rm", "c")
    check(r.returncode == 1 and "configuration file" in r.stderr, "rm of a configured model: %r" % r.stderr)
    check(orchctl("rm", "huge").returncode == 0, "rm huge")
    wait_for(lambda: model("huge") is None, "huge forgotten")


def persist_checks():
    check(orchctl("load", "p1", MODEL, "--slots", "1", "--context", "64").returncode == 0, "load p1")
    check(orchctl("unload", "e").returncode == 0, "unload e again")
    st = json.load(open(STATE))
    check({m["name"]: m["loaded"] for m in st["models"]} == {"e": False, "p1": True},
          "the state file: %r" % st)
    stop()
    check(start(), "orchd restarts")
    wait_for(lambda: model("p1") and model("p1")["state"] == "ready", "p1 restored loaded")
    check(model("e")["state"] == "stopped" and model("e")["origin"] == "admin", "e restored known, unloaded")
    check(model("c")["origin"] == "config", "c from the config")
    check(get("/ready")[0] == 200, "ready after the restart")
    # a reload of the config file leaves the models orchctl added alone
    reloads = open(os.path.join(tmp, "orchd.log")).read().count("event=reloaded")
    proc.send_signal(signal.SIGHUP)
    wait_for(lambda: open(os.path.join(tmp, "orchd.log")).read().count("event=reloaded") > reloads,
             "the reload is done")
    check(model("p1") and model("p1")["state"] == "ready" and model("e") is not None,
          "SIGHUP keeps the run-time models: %r" % model("p1"))
    check(orchctl("rm", "e").returncode == 0 and orchctl("rm", "p1").returncode == 0, "rm e, p1")
    check(json.load(open(STATE))["models"] == [], "state file empty after rm")


def as_set(models):
    return {m["name"]: m["loaded"] for m in models}


def burst(seed, rounds):
    rng = random.Random(seed)
    for rnd in range(rounds):
        check(start(wait_ready=False), "orchd starts on the state file (round %d)" % rnd)
        cur = as_set(json.load(open(STATE))["models"]) if os.path.exists(STATE) else {}
        wait_for(lambda: {m["name"] for m in status()["models"] if m["origin"] == "admin"} == set(cur),
                 "round %d: orchd has the file's models %r" % (rnd, cur))
        states, inflight = [dict(cur)], [dict(cur)]

        def ops():
            s = dict(cur)
            while True:
                name = "k%d" % rng.randrange(4)
                n = dict(s)
                if name not in s:
                    body, method, path = ({"name": name, "path": MODEL, "slots": 1, "context": 32,
                                          "threads": 1}, "POST", "/admin/models")
                    n[name] = True
                elif s[name] and rng.random() < 0.5:
                    body, method, path = None, "DELETE", "/admin/models/" + name
                    n[name] = False
                elif rng.random() < 0.5:
                    body, method, path = None, "POST", "/admin/models/%s/forget" % name
                    del n[name]
                else:
                    body, method, path = {"name": name}, "POST", "/admin/models"
                    n[name] = True
                inflight[0] = n
                try:
                    code, _ = admin(method, path, body)
                except Exception:
                    return
                if code == 202:  # else (a name still being removed) nothing changed
                    s = n
                states.append(dict(s))
                inflight[0] = dict(s)

        t = threading.Thread(target=ops, daemon=True)
        t.start()
        time.sleep(rng.uniform(0.05, 1.5))
        proc.kill()
        proc.wait()
        t.join(10)
        got = as_set(json.load(open(STATE))["models"]) if os.path.exists(STATE) else {}
        print("round %d: killed after %d requests, file %r" % (rnd, len(states) - 1, got))
        check(got in (states[-1], inflight[0]), "round %d (%d requests): the state file %r is the "
              "acked %r or the next %r" % (rnd, len(states) - 1, got, states[-1], inflight[0]))
    check(start(wait_ready=False), "orchd starts after the burst")


seed = int(os.environ.get("ORCH_TEST_SEED", str(int(time.time()))))
print("seed", seed)
try:
    check(start(), "orchd starts")
    cli_checks()
    load_unload_checks()
    persist_checks()
    stop()
    burst(seed, 8)
    stop()
finally:
    if proc and proc.poll() is None:
        proc.kill()
        proc.wait()
    log.close()
    if orchd_lib.failed:
        sys.stderr.write("".join(l for l in open(os.path.join(tmp, "orchd.log")) if "load_progress" not in l)[-6000:])
    shutil.rmtree(tmp, ignore_errors=True)
print("passed %d failed %d" % (orchd_lib.passed, orchd_lib.failed))
sys.exit(1 if orchd_lib.failed else 0)
