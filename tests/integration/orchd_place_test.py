#!/usr/bin/env python3
"""orchd_place_test - the device inventory and placement of orchd, with real
workers on the cpu device and a stand-in NVML (tests/integration/fake_nvml.c)
for GPUs:

- the inventory lists cpu and the fake GPUs (name, total, free) in
  /admin/status, orchctl status and /metrics; without NVML (no library, init
  failure, no GPU) only cpu, with the reason;
- a model that does not fit its GPU (free minus vram_headroom_mib) is refused
  with INSUFFICIENT_VRAM naming the bytes needed and free, retriable; one on a
  GPU that is not there is refused naming the device;
- with cpu_memory_mib capping cpu and evict = lru: a third model evicts the
  least recently used idle one, never one with a running job, and when only
  busy models are left the start is refused; with evict = none, refused."""
import json
import os
import signal
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import orchd_lib  # noqa: E402
from orchd_lib import check, post, get, admin, sse_events  # noqa: E402
DATA = orchd_lib.testdata("models/stories260K.gguf")

BIN = os.environ["ORCH_BIN"]
LIB = os.environ["ORCH_LIB"]
MODEL = os.path.join(DATA, "models", "stories260K.gguf")
FAKE = os.path.join(LIB, "libfake_nvml.so")
RUNTIME = 256 << 20  # MODEL_RUNTIME_OVERHEAD_BYTES: a GPU's share of the estimate
tmp = tempfile.mkdtemp()
procs = []

# what one stories260K worker needs at slots 8, context 256 (orchctl inspect's estimate)
r = subprocess.run([BIN + "/orchctl", "inspect", "--json", "--context", "256", "--slots", "8", MODEL],
                   capture_output=True, text=True)
NEED_CPU = json.loads(r.stdout)["memory"]["total_bytes"] - RUNTIME
MIB = 1 << 20


def start(name, server, models, env_extra=None):
    """An orchd with [server] lines @server and model sections @models."""
    port = orchd_lib.free_port(os.getpid() + 7 * len(procs))
    sock = os.path.join(tmp, name + ".sock")
    conf = os.path.join(tmp, name + ".conf")
    with open(conf, "w") as f:
        # hash_cache_beside = no: the shared test models stay as they are
        f.write("[server]\nlisten = 127.0.0.1:%d\nadmin_socket = %s\nruntime_dir = %s\n"
                "hash_cache_beside = no\n%s\n"
                % (port, sock, os.path.join(tmp, name), server))
        for m, extra in models:
            f.write('[model "%s"]\npath = %s\nslots = 8\ncontext = 256\nthreads = 1\n%s\n' % (m, MODEL, extra))
    log = open(os.path.join(tmp, name + ".log"), "w")
    env = dict(os.environ, **(env_extra or {}))
    p = subprocess.Popen([BIN + "/orchd", "--config", conf], stdout=log, stderr=subprocess.STDOUT, env=env)
    procs.append((p, log, name))
    orchd_lib.PORT, orchd_lib.ADMIN = port, sock
    end = time.time() + 20
    while time.time() < end:
        try:
            if get("/health")[0] == 200:
                break
        except OSError:
            time.sleep(0.05)
    return p


def stop(p):
    p.send_signal(signal.SIGTERM)
    check(p.wait(15) == 0, "orchd exits 0")


def status():
    return json.loads(admin("GET", "/admin/status")[1])


def model_state(name):
    for m in status()["models"]:
        if m["name"] == name:
            return m
    return {}


def wait_state(name, want, timeout=20):
    end = time.time() + timeout
    while time.time() < end:
        if model_state(name).get("state") == want:
            return True
        time.sleep(0.05)
    return False


def complete(model, n=8):
    st, _, t = post("/v1/completions", {"model": model, "prompt": "Once upon a time", "max_tokens": n,
                                        "temperature": 0})
    return st, json.loads(t)


def worker_pid(model):
    for w in json.loads(admin("GET", "/admin/workers")[1]):
        if w["model"] == model and w["state"] == "ready":
            return w["pid"]
    return 0


def busy(model):
    """Pause @model's worker with a job in flight: (pid, thread, result)."""
    pid = worker_pid(model)
    os.kill(pid, signal.SIGSTOP)
    res = {}
    th = threading.Thread(target=lambda: res.update(st=complete(model, 16)[0]))
    th.start()
    time.sleep(0.3)
    return pid, th, res


try:
    # ---- inventory and GPU refusals, with a stand-in NVML: 600 MiB free on cuda:0
    p = start("gpu", "nvml_library = %s\nvram_headroom_mib = 512" % FAKE,
              [("big", "device = cuda:0\npreload = no"), ("far", "device = cuda:7\npreload = no"),
               ("c", "device = cpu")],
              {"FAKE_NVML": "FakeGPU A:81559:600,FakeGPU B:81559:80000"})
    s = status()
    devs = {d["id"]: d for d in s["devices"]}
    check(set(devs) == {"cpu", "cuda:0", "cuda:1"}, "inventory: cpu and two GPUs: %r" % list(devs))
    check(devs.get("cuda:0", {}).get("name") == "FakeGPU A" and devs["cuda:0"]["memory_free_bytes"] == 600 * MIB
          and devs["cuda:0"]["memory_total_bytes"] == 81559 * MIB, "cuda:0 name and memory: %r" % devs.get("cuda:0"))
    check(devs["cpu"]["memory_total_bytes"] > 0 and devs["cpu"]["memory_free_bytes"] > 0, "cpu memory from /proc/meminfo")
    r = subprocess.run([BIN + "/orchctl", "status", "--socket", orchd_lib.ADMIN], capture_output=True, text=True)
    check(r.returncode == 0 and "cuda:1" in r.stdout and "FakeGPU B" in r.stdout and "80000" in r.stdout,
          "orchctl status lists the GPUs: %r" % r.stdout[-400:])
    _, _, text = get("/metrics")
    check('orch_device_memory_free_bytes{device="cuda:0"} %d' % (600 * MIB) in text, "device memory metrics")
    # issue 62 item 6: each GPU's clock, temperature, power and utilization, none for the cpu
    for line in ('orch_gpu_sm_clock_hertz{device="cuda:1"} 1501000000', 'orch_gpu_temperature_celsius{device="cuda:0"} 40',
                 'orch_gpu_power_watts{device="cuda:1"} 250.001', 'orch_gpu_utilization_ratio{device="cuda:0"} 0.3'):
        check(line in text, "GPU sensor gauge: %s" % line)
    check('orch_gpu_power_watts{device="cpu"}' not in text, "no sensor gauge for the cpu")
    st, o = complete("big")
    err = o.get("error", {})
    need = NEED_CPU + RUNTIME
    check(st == 503 and err.get("code") == "INSUFFICIENT_VRAM" and err.get("retriable") is True
          and str(need) in err.get("message", "") and str(88 * MIB) in err.get("message", ""),
          "too big for cuda:0: INSUFFICIENT_VRAM naming %d needed, %d free: %s %r" % (need, 88 * MIB, st, err))
    m = model_state("big")
    check(m.get("state") == "failed" and m.get("error_code") == "INSUFFICIENT_VRAM", "big reads failed: %r" % m)
    check(not any(w["model"] == "big" and w["pid"] for w in json.loads(admin("GET", "/admin/workers")[1])),
          "no worker was started for it")
    st, _, t = post("/execute", {"job_id": "far1", "model": "far", "prompt": "x", "max_tokens": 2})
    ev = sse_events(t)
    check(ev and ev[-1]["event"] == "error" and "cuda:7 is not here" in ev[-1]["data"],
          "a GPU that is not there: %s %r" % (st, t[:300]))
    check(complete("c")[0] == 200, "the cpu model still serves")
    stop(p)

    for name, extra, env, note in (("nonvml", "nvml_library = /nonexistent/libnvidia-ml.so.1", {}, "no NVML"),
                                   ("nogpu", "nvml_library = " + FAKE, {"FAKE_NVML": ""}, "NVML sees no GPU"),
                                   ("nvfail", "nvml_library = " + FAKE, {"FAKE_NVML": "fail"}, "Driver Not Loaded")):
        p = start(name, extra, [], env)
        s = status()
        check([d["id"] for d in s["devices"]] == ["cpu"] and note in s.get("devices_note", ""),
              "%s: cpu only, says why: %r" % (name, s.get("devices_note")))
        check("orch_gpu_" not in get("/metrics")[2], "%s: no GPU sensor gauges at all" % name)
        stop(p)
    p = start("nosensors", "nvml_library = " + FAKE, [], {"FAKE_NVML": "FakeGPU A:81559:600",
                                                          "FAKE_NVML_NO_SENSORS": "1"})
    text = get("/metrics")[2]
    check('orch_device_memory_free_bytes{device="cuda:0"}' in text and "orch_gpu_" not in text,
          "a GPU whose sensors NVML does not support: memory, no sensor gauges")
    stop(p)

    # ---- eviction on cpu: room for two models, not three
    cap = (2 * NEED_CPU + MIB - 1) // MIB
    check(3 * NEED_CPU > cap * MIB, "the cap fits two models, not three")
    p = start("lru", "cpu_memory_mib = %d\nevict = lru\nmax_queue = 8" % cap,
              [("x", "preload = yes"), ("y", "preload = yes"), ("z", "preload = no")])
    check(wait_state("x", "ready") and wait_state("y", "ready"), "x and y ready")
    check(model_state("x").get("memory_estimate_bytes") == NEED_CPU, "status shows the estimate")
    st_x, ox = complete("x")
    time.sleep(0.01)
    complete("y")
    st, oz = complete("z")  # evicts x, the least recently used
    check(st == 200 and oz["choices"][0]["text"] == ox["choices"][0]["text"],
          "z served after an eviction: %s %r" % (st, oz))
    check(model_state("x").get("state") == "stopped" and model_state("x").get("evictions") == 1,
          "x (least recently used) was evicted: %r" % model_state("x"))
    check(model_state("y").get("state") == "ready", "y (used later) stays")
    _, _, text = get("/metrics")
    check('orch_model_evictions_total{model="x"} 1' in text, "eviction metric")
    # y busy (its worker paused with a job in flight): x comes back by evicting z, not y
    pid_y, th_y, res_y = busy("y")
    st, _ = complete("x")
    check(st == 200, "x loads again: %s" % st)
    check(model_state("z").get("state") == "stopped" and model_state("y").get("state") == "ready",
          "z evicted, busy y kept: z=%s y=%s" % (model_state("z").get("state"), model_state("y").get("state")))
    # x busy too: z has no idle model to evict
    pid_x, th_x, res_x = busy("x")
    st, oz = complete("z")
    e = oz.get("error", {})
    check(st == 503 and e.get("code") == "INSUFFICIENT_VRAM" and "even evicting every idle model" in e.get("message", ""),
          "only busy models left: refused: %s %r" % (st, e))
    os.kill(pid_x, signal.SIGCONT)
    os.kill(pid_y, signal.SIGCONT)
    th_x.join(15)
    th_y.join(15)
    check(res_y.get("st") == 200 and res_x.get("st") == 200, "the paused jobs finish")
    stop(p)

    # ---- evict = none: refused, naming the bytes
    p = start("none", "cpu_memory_mib = %d" % ((NEED_CPU + MIB - 1) // MIB), [("x", "preload = yes"), ("y", "")])
    check(wait_state("x", "ready"), "x ready")
    st, o = complete("y")
    e = o.get("error", {})
    check(st == 503 and e.get("code") == "INSUFFICIENT_VRAM" and str(NEED_CPU) in e.get("message", "")
          and "evict = none" in e.get("message", "") and "cpu_memory_mib" in e.get("message", ""),
          "evict = none: refused: %s %r" % (st, e))
    check(model_state("x").get("state") == "ready", "x untouched")
    stop(p)
finally:
    for p, log, name in procs:
        if p.poll() is None:
            p.kill()
            p.wait()
        log.close()
    if orchd_lib.failed:
        for _, _, name in procs:
            text = open(os.path.join(tmp, name + ".log")).read()
            sys.stderr.write("---- %s\n%s" % (name, "".join(
                l + "\n" for l in text.splitlines() if "load_progress" not in l)[-4000:]))
    shutil.rmtree(tmp, ignore_errors=True)

print("orchd_place_test: %d passed, %d failed" % (orchd_lib.passed, orchd_lib.failed))
sys.exit(1 if orchd_lib.failed else 0)
