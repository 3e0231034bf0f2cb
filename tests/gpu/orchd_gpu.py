#!/usr/bin/env python3
"""orchd_gpu.py PORT RUNDIR - orchd serving a cuda:0 model, as a client sees it
(tests/gpu/run.sh orchd and orchd_device_test.py start orchd): /health names
the device's sm and the CUDA versions, the admin API lists cuda:0 with its
memory (NVML), a completion streams, a native job cancelled mid-stream ends
CANCELLED and the worker serves on, and after the worker is killed (SIGKILL)
orchd restarts it and the next request answers the same. Prints what it saw;
exits 1 on the first thing that is wrong."""
import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import orchd_lib as L  # noqa: E402  (HTTP, the admin socket and SSE, as the orchd tests use them)

L.PORT, rundir = int(sys.argv[1]), sys.argv[2]
L.ADMIN = os.path.join(rundir, "orchd.sock")


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def worker(h):
    m = h.get("models", {}).get("stories")
    if not m or not m.get("workers"):
        return None
    return m["workers"][0]


def wait_healthy(old_pid, secs):
    end = time.time() + secs
    while time.time() < end:
        try:
            st, _, body = L.get("/health")
            w = worker(json.loads(body))
            if (st == 200 and w and w.get("state") == "ready" and w.get("status") == "healthy"
                    and w.get("pid") not in (0, old_pid)):
                return w
        except (OSError, ValueError):
            pass
        time.sleep(0.25)
    return None


def stream(prompt, n):
    t0 = time.time()
    st, _, body = L.post("/v1/completions", {"model": "stories", "prompt": prompt, "max_tokens": n,
                                             "temperature": 0, "stream": True})
    if st != 200:
        fail(f"completion: HTTP {st} {body[:300]!r}")
    evs = [e["data"] for e in L.sse_events(body)]
    if not evs or evs[-1] != "[DONE]":
        fail("stream ended without [DONE]")
    text, chunks = "", 0
    for d in evs[:-1]:
        ev = json.loads(d)
        if "error" in ev:
            fail(f"stream error event: {ev}")
        text += ev["choices"][0].get("text", "")
        chunks += 1
    return text, chunks, time.time() - t0


w = wait_healthy(0, 60)
if w is None:
    fail("the cuda:0 worker did not become healthy in 60 s: " + L.get("/health")[2][:800])
print("health:", json.dumps({k: w.get(k) for k in
      ("device", "sm", "cuda_runtime_version", "driver_version", "quant_kind", "vram_bytes_used", "resident")}))
if w.get("device") != "cuda:0" or not w.get("sm") or not w.get("cuda_runtime_version"):
    fail("health lacks the device's sm or CUDA versions")
if not w.get("resident"):
    fail("worker not resident in VRAM")

code, raw = L.admin("GET", "/admin/status")
if code != 200:
    fail(f"admin status: HTTP {code} {raw[:300]!r}")
st = json.loads(raw)
devs = [d for d in st.get("devices", []) if d.get("id") == "cuda:0"]
if not devs or devs[0].get("memory_total_bytes", 0) <= 0 or devs[0].get("memory_free_bytes", 0) <= 0:
    fail(f"admin status devices: {st.get('devices')}")
print("admin devices:", json.dumps(devs[0]))

# /metrics (issue 62, item 6): the worker's memory by part, adding up to what it uses, and
# the GPU's sensors where NVML answers them (a real GPU, or the stand-in library)
_, _, mtext = L.get("/metrics")
parts = {l.split('kind="')[1].split('"')[0]: float(l.split()[-1]) for l in mtext.splitlines()
         if l.startswith('orch_worker_memory_bytes{model="stories"')}
used = [float(l.split()[-1]) for l in mtext.splitlines()
        if l.startswith('orch_worker_memory_used_bytes{model="stories"')]
sensors = [l for l in mtext.splitlines() if l.startswith("orch_gpu_") and 'device="cuda:0"' in l]
print("metrics: memory parts %s of %s used; sensors %s" % (parts, used, sensors))
if sorted(parts) != ["kv_cache", "scratch", "weights"] or parts["weights"] <= 0 or parts["kv_cache"] <= 0:
    fail(f"orch_worker_memory_bytes: {parts}")
if not used or sum(parts.values()) != used[0]:
    fail(f"the memory parts {parts} do not add up to memory_used {used}")
if not sensors:
    print("note: NVML answers none of the sensors for cuda:0 (no orch_gpu_* gauge)")

text, chunks, secs = stream("Once upon a time", 64)
print(f"stream: {chunks} chunks in {secs * 1000:.1f} ms: {text[:80]!r}")
if chunks < 8:
    fail("too few chunks")

# cancel: a native job stopped after its first tokens, by the id orchd gave it
c = L.conn(60)
c.request("POST", "/execute", json.dumps({"job_id": "gpu-cancel", "model": "stories",
                                          "prompt": "Once upon a time", "max_tokens": 400,
                                          "ignore_eos": True}),
          {"Content-Type": "application/json"})
r = c.getresponse()
job = r.getheader("X-Job-Id")
if r.status != 200 or not job:
    fail(f"execute: HTTP {r.status}")
head = b""
while head.count(b"event: token") < 3:
    more = r.read1(4096)
    if not more:
        fail(f"the stream ended before 3 tokens: {head[-300:]!r}")
    head += more
st, _, body = L.post("/cancel", {"job_id": job})
if st != 202:
    fail(f"cancel: HTTP {st} {body[:200]!r}")
t0 = time.time()
evs = L.sse_events((head + r.read()).decode())
c.close()
last = evs[-1] if evs else {}
if last.get("event") != "error" or json.loads(last["data"]).get("code") != "CANCELLED":
    fail(f"the cancelled stream ended {last!r}")
toks = sum(1 for e in evs if e.get("event") == "token")
print(f"cancel: ended CANCELLED after {toks} tokens, {(time.time() - t0) * 1000:.0f} ms after the cancel")
text_c, _, _ = stream("Once upon a time", 64)
if text_c != text:
    fail(f"after the cancel the greedy text differs: {text_c[:80]!r}")

os.kill(w["pid"], signal.SIGKILL)
t0 = time.time()
w2 = wait_healthy(w["pid"], 60)
if w2 is None:
    fail("the worker was not restarted within 60 s: " + L.get("/health")[2][:800])
print(f"worker {w['pid']} killed; {w2['pid']} healthy after {time.time() - t0:.2f} s "
      f"(last_restart_reason {w2.get('last_restart_reason')!r})")
text2, _, _ = stream("Once upon a time", 64)
if text2 != text:
    fail(f"after the restart the greedy text differs: {text2[:80]!r}")
print("after the restart: the same greedy text")
print("orchd on cuda:0: ok")
