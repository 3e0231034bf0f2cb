#!/usr/bin/env python3
"""orchd_test - a real orchd with real workers (cpu device, stories260K) on
loopback, driven by curl and by plain HTTP clients: golden text through
/execute, event order, 32 concurrent streams across 2 models equal to their
solo runs, cancel by disconnect, kill -9 of a worker mid-stream, queue full,
bad requests, stream resume, OpenAI endpoints, admin API, metrics checked by
promtool, sd_notify, SIGHUP reload and SIGTERM.

A paused worker (SIGSTOP) holds jobs in flight deterministically where a
test needs a job to still be running; it is resumed (SIGCONT) well inside
the heartbeat timeout."""
import hashlib
import http.client
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
from orchd_lib import metric  # noqa: E402
from orchd_lib import JSON_CT, check, conn, post, get, sse_events, admin  # noqa: E402
DATA = orchd_lib.testdata("models/golden-stories260K.json", "models/stories260K-Q8_0.gguf", "models/stories260K.gguf", "vocab/ggml-vocab-qwen2.gguf")
MODEL = os.path.join(DATA, "models", "stories260K.gguf")
MODEL_Q8 = os.path.join(DATA, "models", "stories260K-Q8_0.gguf")

PORT = orchd_lib.free_port(os.getpid())

orchd_lib.PORT = PORT


def execute(model, prompt, n, seed=1, temp=0.0, job_id=None, extra=None):
    body = {"job_id": job_id or "j%d-%f" % (seed, time.time()), "model": model,
            "prompt": prompt, "max_tokens": n, "temperature": temp, "seed": seed}
    body.update(extra or {})
    st, _, text = post("/execute", body)
    return st, sse_events(text)


def text_of(events):
    return "".join(json.loads(e["data"])["t"] for e in events if e["event"] == "token")


def worker_pid(model):
    st, t = admin("GET", "/admin/workers")
    for w in json.loads(t):
        if w["model"] == model:
            return w["pid"], w["state"]
    return 0, None


def worker_pid_url(model):
    for w in json.loads(admin("GET", "/admin/workers")[1]):
        if w["model"] == model:
            return w["debug_endpoint"]
    return ""


def wait_ready(model, timeout=20):
    end = time.time() + timeout
    while time.time() < end:
        pid, state = worker_pid(model)
        if state == "ready":
            return pid
        time.sleep(0.05)
    return 0


def check_health():
    """/health shows every field of a cpu worker and its model (docs/http-api.md), cheaply."""
    st, _, t = get("/health")
    h = json.loads(t)
    ma, wa = h["models"]["a"], h["models"]["a"]["workers"][0]
    fields = ("status", "resident", "quant_kind", "vram_bytes_used", "tokenizer_kind", "vocab_size",
              "bos_id", "eos_id", "context_length", "uptime_seconds")
    check(st == 200 and h["status"] == "ok" and h["build_id"].startswith("orch-"), "health: %s" % t[:200])
    check(all(k in ma for k in fields) and all(k in wa for k in fields), "health fields: %r" % wa)
    check(wa["status"] == "healthy" and wa["resident"] is True and wa["quant_kind"] == "F32"
          and wa["tokenizer_kind"] == "gguf-spm" and wa["vocab_size"] == 512 and wa["context_length"] == 256
          and wa["bos_id"] == 1 and wa["eos_id"] == 2 and ma["bos_id"] == 1 and ma["eos_id"] == 2
          and wa["vram_bytes_used"] > 0 and wa["uptime_seconds"] >= 0, "health of worker a-0: %r" % wa)
    check(ma["status"] == "healthy" and ma["state"] == "ready" and ma["resident"] is True
          and ma["quant_kind"] == "F32" and ma["vram_bytes_used"] == wa["vram_bytes_used"], "health of a: %r" % ma)
    check("sm" not in wa and "cuda_runtime_version" not in wa, "no GPU facts on a cpu worker")
    check(wa["model_sha256"] == hashlib.sha256(open(MODEL, "rb").read()).hexdigest(),
          "the model's sha256 from Hello or Ready: %r" % wa.get("model_sha256"))
    check(len(wa["tokenizer_hash"]) == 64 and wa["build_id"] == h["build_id"], "tokenizer hash, build id")
    check(h["models"]["b"]["workers"][0]["quant_kind"] == "Q8_0", "b is Q8_0 (general.file_type 7)")
    mz = h["models"]["z"]
    check(mz["state"] == "stopped" and mz["status"] == "healthy" and mz["quant_kind"] is None
          and mz["resident"] is False, "a model never started: %r" % mz)
    times = []
    for _ in range(10):
        t0 = time.perf_counter()
        get("/health")
        times.append(time.perf_counter() - t0)
    check(min(times) < 0.010, "GET /health under 10 ms: best %.1f ms" % (min(times) * 1e3))


tmp = tempfile.mkdtemp()
ADMIN = os.path.join(tmp, "orchd.sock")
orchd_lib.ADMIN = ADMIN
notify_path = os.path.join(tmp, "notify.sock")
notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
notify.bind(notify_path)
notify.settimeout(0.1)
conf = os.path.join(tmp, "orchd.conf")
with open(conf, "w") as f:
    f.write("""[server]
listen = 127.0.0.1:%d
admin_socket = %s
runtime_dir = %s   # inline comments work
hash_cache_beside = no   # the shared test models stay as they are
max_queue = 2
max_body_bytes = 65536
heartbeat_timeout_s = 10
events_keep_s = 60

[model "a"]
path = %s
device = cpu
slots = 8
context = 256
threads = 1

[model "b"]
path = %s
slots = 8
context = 256
threads = 1

[model "q"]
path = %s
slots = 1
context = 256
threads = 1

[model "z"]
path = %s
preload = no
""" % (PORT, ADMIN, tmp, MODEL, MODEL_Q8, MODEL, os.path.join(DATA, "vocab", "ggml-vocab-qwen2.gguf")))

# --check-config, and a config error naming its line
r = subprocess.run([BIN + "/orchd", "--config", conf, "--check-config"], capture_output=True, text=True)
check(r.returncode == 0 and "4 models" in r.stdout, "check-config: %r" % (r.stdout + r.stderr))
badconf = os.path.join(tmp, "bad.conf")
with open(badconf, "w") as f:
    f.write("[server]\nlisten = 127.0.0.1:1\nbogus_key = 1\n")
r = subprocess.run([BIN + "/orchd", "--config", badconf, "--check-config"], capture_output=True, text=True)
check(r.returncode == 1 and "bad.conf:3:" in r.stderr and "bogus_key" in r.stderr,
      "unknown key names its line: %r" % r.stderr)

env = dict(os.environ, NOTIFY_SOCKET=notify_path, WATCHDOG_USEC="400000")
env.pop("WATCHDOG_PID", None)
log = open(os.path.join(tmp, "orchd.log"), "w")
orchd = subprocess.Popen([BIN + "/orchd", "--config", conf], stdout=log, stderr=subprocess.STDOUT, env=env)
notes = []
stop_notes = threading.Event()


def read_notes():  # as systemd would: always reading, so orchd never blocks on it
    while not stop_notes.is_set():
        try:
            notes.extend(notify.recv(4096).decode().split("\n"))
        except socket.timeout:
            pass


threading.Thread(target=read_notes, daemon=True).start()
try:
    end = time.time() + 20
    while time.time() < end and "READY=1" not in notes:
        time.sleep(0.05)
    check("READY=1" in notes, "sd_notify READY=1: %r" % notes[:5])
    check(any(n.startswith("STATUS=") for n in notes), "sd_notify STATUS")
    end = time.time() + 1.5
    while time.time() < end and "WATCHDOG=1" not in notes:
        time.sleep(0.05)
    check("WATCHDOG=1" in notes, "sd_notify WATCHDOG=1")
    st, _, t = get("/ready")
    check(st == 200 and json.loads(t)["models"]["a"] == "ready", "ready: %s %s" % (st, t))
    check(get("/health")[0] == 200, "health")
    check_health()

    # golden text through curl
    golden = json.load(open(os.path.join(DATA, "models", "golden-stories260K.json")))["cases"][0]
    ids = [str(i) for i in golden["generated_tokens"]]
    want = subprocess.run([BIN + "/orch-worker", "detokenize", "--model", MODEL] + ids,
                          capture_output=True, text=True).stdout.rstrip("\n")
    body = json.dumps({"job_id": "golden", "model": "a", "prompt": "Once upon a time",
                       "max_tokens": 64, "temperature": 0})
    out = subprocess.run(["curl", "-sN", "http://127.0.0.1:%d/execute" % PORT,
                          "-H", "Content-Type: application/json", "-d", body],
                         capture_output=True, text=True).stdout
    evs = sse_events(out)
    check(text_of(evs) == want, "golden text: %r vs %r" % (text_of(evs)[:60], want[:60]))
    names = [e["event"] for e in evs]
    check(names[0] == "started" and names[-1] == "end" and names.count("end") == 1 and
          "error" not in names and set(names[1:-1]) == {"token"}, "event order %r" % names[:3])
    check([e["id"] for e in evs] == list(range(1, len(evs) + 1)), "event ids")
    endd = json.loads(evs[-1]["data"])
    check(endd["tokens_out"] == 64 and endd["finish_reason"] == "length", "end %r" % endd)

    # 32 concurrent streams across 2 models, each equal to its solo run
    prompts = ["Once upon a time", "The dog", "Lily saw", "One day", "Tom was", "The sun",
               "A little bird", "She liked"]
    cases = [("a" if k % 2 == 0 else "b", prompts[k % 8], 40, k + 1, 0.8) for k in range(32)]
    solo = [text_of(execute(m, p, n, s, t)[1]) for (m, p, n, s, t) in cases]
    results = [None] * 32

    def run(k):
        m, p, n, s, t = cases[k]
        results[k] = text_of(execute(m, p, n, s, t, job_id="c%d" % k)[1])
    th = [threading.Thread(target=run, args=(k,)) for k in range(32)]
    [t.start() for t in th]
    [t.join() for t in th]
    same = sum(results[k] == solo[k] for k in range(32))
    check(same == 32 and all(solo), "32 concurrent streams equal solo runs: %d/32" % same)

    # cancel by disconnect: the worker paused, a client goes away mid-stream
    pid_q = wait_ready("q")
    before = metric("orch_client_cancellations_total", {"model": "q"})
    os.kill(pid_q, signal.SIGSTOP)
    c = conn()
    c.request("POST", "/execute", json.dumps({"job_id": "gone", "model": "q",
              "prompt": "Once upon a time", "max_tokens": 200}), JSON_CT)
    resp = c.getresponse()
    check(resp.status == 200, "stream started")
    time.sleep(0.2)
    c.sock.shutdown(socket.SHUT_RDWR)
    c.close()
    time.sleep(0.2)
    os.kill(pid_q, signal.SIGCONT)
    t0 = time.time()
    while time.time() - t0 < 1.0 and metric("orch_requests_total", {"model": "q", "outcome": "CANCELLED"}) < 1:
        time.sleep(0.05)
    check(metric("orch_requests_total", {"model": "q", "outcome": "CANCELLED"}) >= 1,
          "cancelled in the worker within 1 s of the disconnect")
    check(metric("orch_client_cancellations_total", {"model": "q"}) == before + 1, "client cancellation counted")

    # queue full: the worker paused holds 4 jobs, the queue 2, the next gets 429
    os.kill(pid_q, signal.SIGSTOP)
    held = []
    for k in range(6):
        c = conn()
        c.request("POST", "/execute", json.dumps({"job_id": "qf%d" % k, "model": "q",
                  "prompt": "Once", "max_tokens": 4}), JSON_CT)
        held.append((c, c.getresponse()))
    st, hdr, t = post("/execute", {"job_id": "qf-over", "model": "q", "prompt": "Once", "max_tokens": 4})
    check(st == 429 and "Retry-After" in hdr and json.loads(t)["error"]["code"] == "QUEUE_FULL",
          "queue full: %s %r" % (st, t[:120]))
    os.kill(pid_q, signal.SIGCONT)
    done = 0
    for c, r in held:
        done += "event: end" in r.read().decode()
        c.close()
    check(done == 6, "the held jobs finish: %d/6" % done)

    # bad requests, while a stream runs on another model
    side = {}
    th = threading.Thread(target=lambda: side.update(t=text_of(execute("b", "The dog", 40, 7, 0.8)[1])))
    th.start()
    bads = [
        ({"job_id": "x", "model": "a", "prompt": "hi", "temperature": "hot"}, 400, "temperature"),
        ({"job_id": "x", "model": "a", "prompt": "hi", "temperature": 3}, 400, "temperature"),
        ({"job_id": "x", "model": "a", "prompt": "hi", "top_p": 1.5}, 400, "top_p"),
        ({"job_id": "x", "model": "a", "prompt": "hi", "top_k": -1}, 400, "top_k"),
        ({"job_id": "x", "model": "a", "prompt": "hi", "max_tokens": 0}, 400, "max_tokens"),
        ({"job_id": "x", "model": "a", "prompt": "hi", "max_tokens": 4096}, 400, "max_tokens"),
        ({"job_id": "x", "model": "a", "prompt": "hi", "repetition_penalty": 2.5}, 400, "repetition_penalty"),
        ({"job_id": "x", "model": "a", "prompt": "hi", "stop": ["a", "b", "c", "d", "e"]}, 400, "stop"),
        ({"job_id": "x", "model": "a", "prompt": "x" * 32769}, 400, "prompt"),
        ({"job_id": "", "model": "a", "prompt": "hi"}, 400, "job_id"),
        ({"model": "a", "prompt": "hi"}, 400, "job_id"),
        ({"job_id": "x", "model": "a", "prompt": "hi", "bogus": 1}, 400, "bogus"),
        ({"job_id": "x", "model": "zzz", "prompt": "hi"}, 404, "model"),
    ]
    for body, want_st, param in bads:
        st, _, t = post("/execute", body)
        ok = st == want_st
        try:
            e = json.loads(t)["error"]
            ok = ok and e["param"] == param and e["code"] in ("INVALID_REQUEST", "MODEL_NOT_FOUND")
        except Exception:
            ok = False
        check(ok, "bad request %r -> %s %s" % (list(body)[-1], st, t[:100]))
    # an empty prompt is taken, as OpenAI and vLLM take it: the model starts from BOS
    st, _, t = post("/execute", {"job_id": "empty", "model": "a", "prompt": "", "max_tokens": 3})
    check(st == 200 and '"finish_reason":"length"' in t.replace(" ", ""), "an empty native prompt runs: %s %s" % (st, t[-200:]))
    st, _, t = post("/v1/completions", {"model": "a", "prompt": "", "max_tokens": 3})
    check(st == 200 and json.loads(t)["usage"]["prompt_tokens"] == 1,
          "an empty OpenAI prompt runs from BOS alone: %s %s" % (st, t[:300]))
    # no "model": with several served, OpenAI's APIs say it is required (one served: taken)
    st, _, t = post("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}]})
    check(st == 400 and json.loads(t)["error"]["param"] == "model"
          and "'model' is required: 4 models are served" in t, "no model of 4: %s %s" % (st, t[:200]))
    st, _, t = post("/execute", "{not json")
    check(st == 400 and json.loads(t)["error"]["code"] == "INVALID_REQUEST", "bad json")
    st, _, t = post("/execute", "[1,2]")
    check(st == 400, "not an object")
    st, _, _ = post("/execute", "{" + " " * 70000 + "}")
    check(st == 413, "oversized body: %s" % st)
    st, _, t = post("/v1/chat/completions", {"model": "a", "messages": [{"role": "user", "content": "x"}], "functions": []})
    check(st == 400 and json.loads(t)["error"]["param"] == "functions", "unsupported OpenAI parameter")
    st, _, t = post("/v1/chat/completions", {"model": "a", "messages": [{"role": "user", "content": "x"}],
                                             "tools": [], "tool_choice": "required"})
    check(st == 400 and json.loads(t)["error"]["param"] == "tool_choice", "a forced tool call is refused")
    st, _, t = post("/v1/completions", {"model": "a", "prompt": "x", "n": 65})
    check(st == 400 and json.loads(t)["error"]["param"] == "n", "n=65 refused")
    th.join()
    check(side.get("t") == solo[[k for k in range(32) if cases[k][1] == "The dog" and cases[k][3] == 7][0]]
          if any(cases[k][3] == 7 and cases[k][1] == "The dog" for k in range(32)) else bool(side.get("t")),
          "a stream beside the bad requests is unaffected")

    # resume: drop after 3 events, come back with Last-Event-ID
    full = execute("a", "Once upon a time", 60, 5, 0.8)[1]
    c = conn()
    c.request("POST", "/execute", json.dumps({"job_id": "res", "model": "a", "prompt": "Once upon a time",
              "max_tokens": 60, "temperature": 0.8, "seed": 5, "resume_grace_s": 10}), JSON_CT)
    r = c.getresponse()
    first = b""
    while first.count(b"\n\n") < 3:
        first += r.read1(1)
    c.close()
    head = sse_events(first.decode())[:3]
    uid = json.loads(head[0]["data"])["id"]  # the job's id; its job_id finds it too (issue 62)
    check(r.getheader("X-Job-Id") == uid and len(uid) == 32, "the job's id in X-Job-Id and started")
    st, _, t = get("/jobs/res/events", {"Last-Event-ID": str(head[-1]["id"])})
    check(st == 200 and sse_events(t) and sse_events(t)[0]["id"] == head[-1]["id"] + 1,
          "the client's job_id resumes without keys too (the one local owner's)")
    st, _, t = get("/jobs/%s/events" % uid, {"Last-Event-ID": str(head[-1]["id"])})
    rest = sse_events(t)
    check(st == 200 and rest and rest[0]["id"] == head[-1]["id"] + 1, "resume continues after the last id")
    check(text_of(head + rest) == text_of(full) and rest[-1]["event"] == "end", "resumed text equals the full run")
    check(get("/jobs/nope/events")[0] == 404, "resume of an unknown job")
    st, _, t = post("/cancel", {"job_id": uid})
    check(st == 202, "cancel of a finished job is harmless")
    check(post("/cancel", {"job_id": "zzz"})[0] == 404, "cancel of an unknown job")

    # OpenAI endpoints
    st, _, t = post("/v1/completions", {"model": "a", "prompt": "Once upon a time", "max_tokens": 64, "temperature": 0})
    o = json.loads(t)
    check(st == 200 and o["choices"][0]["text"] == want and o["usage"]["completion_tokens"] == 64,
          "completion equals golden")
    st, _, t = post("/v1/chat/completions", {"model": "a", "messages": [{"role": "user", "content": "Hi"}],
                                             "max_tokens": 8, "stream": True, "stream_options": {"include_usage": True}})
    lines = [l for l in t.split("\n") if l.startswith("data: ")]
    check(lines[-1] == "data: [DONE]" and '"usage"' in lines[-2] and '"role":"assistant"' in lines[0],
          "chat stream shape")
    st, _, t = get("/v1/models")
    ms = {m["id"]: m for m in json.loads(t)["data"]}
    check(st == 200 and set(ms) == {"a", "b", "q", "z"} and ms["z"]["state"] == "stopped", "models list")
    check(all(ms[k].get("chat_template") == "fallback" for k in "abq"),
          "/v1/models says stories260K (no template) chats in the fallback format: %s" % t[:300])
    check(ms["z"].get("chat_template") == "model", "a model never started has its template known: %r" % ms["z"])
    # the tokenizer's facts (issue 62, item 5): known once a worker loaded the model
    check(ms["a"].get("orch") == {"bos_id": 1, "eos_id": 2, "vocab_size": 512, "context_length": 256},
          "/v1/models: a's tokenizer facts: %r" % ms["a"].get("orch"))
    check(ms["z"].get("orch") == {"bos_id": None, "eos_id": None, "vocab_size": None, "context_length": None},
          "/v1/models: facts of a model never started are null: %r" % ms["z"].get("orch"))
    # the official openai npm client (installed by 'make deps' in tests/interop)
    interop = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "interop")
    if os.path.isdir(os.path.join(interop, "node_modules", "openai")):
        gpath = os.path.join(tmp, "golden.txt")
        open(gpath, "w").write(want)
        r = subprocess.run(["node", os.path.join(interop, "openai_client.mjs"), "http://127.0.0.1:%d/v1" % PORT,
                            "a", gpath], capture_output=True, text=True, timeout=120)
        check(r.returncode == 0 and "all passed" in r.stdout, "openai npm client: %s" % (r.stdout + r.stderr)[-1500:])
    else:
        check(False, "the openai npm package is not installed in tests/interop: run 'make deps'")

    # kill -9 of a worker holding a job it never started (stopped first): the job goes back
    # to the queue and completes on the next worker (a started job ends with WORKER_LOST,
    # retriable: orchd_orphan_test); back READY; next succeeds
    pid_a = wait_ready("a")
    os.kill(pid_a, signal.SIGSTOP)
    res = {}
    th = threading.Thread(target=lambda: res.update(ev=execute("a", "Once upon a time", 100)[1]))
    th.start()
    time.sleep(0.3)
    os.kill(pid_a, signal.SIGKILL)
    th.join(20)
    last = res.get("ev", [{}])[-1]
    check(last.get("event") == "end" and text_of(res.get("ev", [])).startswith(want),
          "a job the lost worker never started completes after its restart: %r" % last)
    pid2 = wait_ready("a", 15)
    check(pid2 and pid2 != pid_a, "the worker is back READY")
    check(text_of(execute("a", "Once upon a time", 64)[1]) == want, "the next request succeeds")
    check(metric("orch_worker_restarts_total", {"model": "a"}) >= 1, "restart counted")

    # admin: load a new model, watch it, unload it
    st, t = admin("POST", "/admin/models", {"name": "c", "path": MODEL, "slots": 2, "context": 128, "threads": 1})
    check(st == 202, "admin load: %s %s" % (st, t[:100]))
    check(wait_ready("c") > 0, "loaded model c is ready")
    st, t = admin("POST", "/admin/models", {"name": "d", "path": "/nonexistent.gguf"})
    check(st == 400 and "nonexistent" in t, "load of a missing file refused: %s" % st)
    st, t = admin("DELETE", "/admin/models/c")
    check(st == 202, "admin unload")
    end = time.time() + 10
    while time.time() < end and json.loads(admin("GET", "/admin/status")[1])["models"][-1]["state"] != "stopped":
        time.sleep(0.05)
    check(json.loads(admin("GET", "/admin/status")[1])["models"][-1]["state"] == "stopped", "unloaded")

    # tokenizer = hf-json: tokenizer.json and tokenizer_config.json (with a chat template) beside the GGUF
    hf = os.path.join(tmp, "hf")
    os.mkdir(hf)
    subprocess.run([BIN + "/orch-synth", "--preset", "tiny-qwen2", "--vocab",
                    os.path.join(DATA, "vocab", "ggml-vocab-qwen2.gguf"), "--seed", "5", "-o",
                    os.path.join(hf, "m.gguf")], check=True, capture_output=True)
    subprocess.run([BIN + "/orch-tokjson", os.path.join(DATA, "vocab", "ggml-vocab-qwen2.gguf"),
                    os.path.join(hf, "tokenizer.json")], check=True)
    with open(os.path.join(hf, "tokenizer_config.json"), "w") as f:
        json.dump({"eos_token": "<|endoftext|>", "chat_template":
                   "{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}<assistant>"}, f)
    st, t = admin("POST", "/admin/models", {"name": "h", "path": os.path.join(hf, "m.gguf"), "slots": 1,
                                            "context": 128, "threads": 1, "tokenizer": "bogus"})
    check(st == 400 and "gguf or hf-json" in t, "admin load with a bad tokenizer: %s %s" % (st, t[:120]))
    st, t = admin("POST", "/admin/models", {"name": "h", "path": os.path.join(hf, "m.gguf"), "slots": 1,
                                            "context": 128, "threads": 1, "tokenizer": "hf-json"})
    check(st == 202 and wait_ready("h") > 0, "hf-json model loads: %s %s" % (st, t[:120]))
    st, _, t = post("/v1/chat/completions", {"model": "h", "messages": [{"role": "user", "content": "Hi"}],
                                             "max_tokens": 4, "temperature": 0})
    check(st == 200 and json.loads(t)["usage"]["prompt_tokens"] == 7,  # <user>Hi<assistant>: 7 qwen2 tokens, no BOS
          "chat through tokenizer_config.json's template: %s %s" % (st, t[:200]))
    ms = {m["id"]: m for m in json.loads(get("/v1/models")[2])["data"]}
    check(ms["h"].get("chat_template") == "tokenizer_config", "/v1/models: h's template: %r" % ms["h"])
    hs = [m for m in json.loads(admin("GET", "/admin/status")[1])["models"] if m["name"] == "h"]
    check(hs and hs[0].get("tokenizer") == "hf-json", "admin status shows the tokenizer: %r" % hs)
    admin("DELETE", "/admin/models/h")

    # orchctl against the running orchd
    def orchctl(*args):
        return subprocess.run([BIN + "/orchctl"] + list(args) + ["--socket", ADMIN], capture_output=True, text=True)
    r = orchctl("status")
    check(r.returncode == 0 and "MODEL" in r.stdout and "\na " in r.stdout, "orchctl status: %r" % r.stdout[:200])
    r = orchctl("status", "--json")
    check(r.returncode == 0 and len(json.loads(r.stdout)["models"]) >= 3, "orchctl status --json")
    r = orchctl("ps")
    check(r.returncode == 0 and "a-0" in r.stdout and "ready" in r.stdout, "orchctl ps: %r" % r.stdout[:200])
    r = orchctl("load", "e", MODEL, "--slots", "2", "--context", "128", "--wait")
    check(r.returncode == 0 and "e: loading" in r.stdout and "e: ready" in r.stdout, "orchctl load --wait: %r" % r.stdout[-200:])
    trunc = os.path.join(tmp, "truncated.gguf")  # a real model cut short: orchctl says why
    with open(MODEL, "rb") as f, open(trunc, "wb") as g:
        g.write(f.read(500000))
    r = orchctl("load", "cut", trunc)
    check(r.returncode == 1 and "runs past the end of the file" in r.stderr,
          "orchctl load of a truncated model says why: %r" % r.stderr)
    r = orchctl("load", "f", "/nonexistent.gguf")
    check(r.returncode == 1 and "nonexistent" in r.stderr, "orchctl load of a missing file")
    r = orchctl("unload", "e")
    check(r.returncode == 0, "orchctl unload")
    r = orchctl("unload", "zzz")
    check(r.returncode == 1, "orchctl unload of an unknown model")
    r = subprocess.run([BIN + "/orchctl", "status", "--socket", os.path.join(tmp, "none.sock")], capture_output=True, text=True)
    check(r.returncode == 3 and "cannot reach orchd" in r.stderr, "orchctl without orchd: exit 3")
    r = subprocess.run([BIN + "/orch-worker", "attach", worker_pid_url("a"), "--dump"], capture_output=True, text=True)
    check(r.returncode == 0 and r.stdout.startswith("worker id=a-0 "), "attach --dump to a worker of orchd: %r" % r.stdout[:80])
    r = orchctl("attach", "a", "--dump")
    check(r.returncode == 0 and r.stdout.startswith("worker id=a-0 "), "orchctl attach --dump: %r" % r.stdout[:80])
    r = orchctl("attach", "a-0", "--dump", "--json")
    o = json.loads(r.stdout) if r.returncode == 0 else {}
    check(o.get("worker", {}).get("id") == "a-0" and isinstance(o["worker"].get("slots_total"), int)
          and o.get("jobs") == [], "orchctl attach --dump --json: %r" % r.stdout[:200])
    att_path = os.path.join(tmp, "attach.out")
    att = subprocess.Popen([BIN + "/orchctl", "attach", "a", "--topic", "step", "--count", "3", "--json",
                            "--timeout-ms", "10000", "--socket", ADMIN], stdout=open(att_path, "w"), text=True)
    # the subscriber may join late on a loaded machine (pub/sub drops what came
    # before): keep a-0 stepping until the subscriber has printed three records
    end = time.time() + 20
    while att.poll() is None and time.time() < end and open(att_path).read().count("\n") < 3:
        execute("a", "Once upon a time", 4)
        time.sleep(0.05)
    try:
        att.wait(timeout=15)
    except subprocess.TimeoutExpired:
        att.kill()
        att.wait()
    out = open(att_path).read()
    recs = [json.loads(l) for l in out.splitlines()]
    check(att.returncode == 0 and len(recs) == 3 and all(x["topic"] == "step" and x["step"] > 0 for x in recs),
          "orchctl attach --topic step --count 3 --json: rc=%s, %d records: %r" % (att.returncode, len(recs), out[-300:]))
    r = orchctl("attach", "zzz")
    check(r.returncode == 1 and "no worker or model 'zzz'" in r.stderr, "orchctl attach to an unknown worker")
    r = orchctl("attach")
    check(r.returncode == 2 and "usage" in r.stderr, "orchctl attach without a worker is a usage error")
    fakebin = os.path.join(tmp, "fakebin")
    os.makedirs(fakebin, exist_ok=True)
    with open(os.path.join(fakebin, "gdb"), "w") as f:
        f.write("#!/bin/sh\necho \"gdb $*\"\n")
    os.chmod(os.path.join(fakebin, "gdb"), 0o755)
    r = subprocess.run([BIN + "/orchctl", "attach", "a", "--gdb", "--socket", ADMIN], capture_output=True, text=True,
                       env=dict(os.environ, PATH=fakebin + ":" + os.environ["PATH"]))
    check(r.returncode == 0 and r.stdout.strip() == "gdb -p %d" % wait_ready("a"), "orchctl attach --gdb execs gdb -p PID: %r" % r.stdout)
    r = orchctl("logs", "a", "-n", "5")
    check(r.returncode == 0 and len(r.stdout.splitlines()) == 5 and "event=" in r.stdout, "orchctl logs -n 5: %r" % r.stdout[-300:])
    r = orchctl("logs", "a-0", "--json")
    ls = [json.loads(l) for l in r.stdout.splitlines()]
    check(r.returncode == 0 and any(x["source"] == "orchd" and "exited with status 137" in x["text"] for x in ls)
          and any(x["source"] == "orchd" and x["text"].startswith("orchd: spawned pid") for x in ls),
          "orchctl logs --json keeps the killed process's lines and orchd's notes")
    fol = subprocess.Popen([BIN + "/orchctl", "logs", "a", "-f", "-n", "1", "--socket", ADMIN], stdout=subprocess.PIPE, text=True)
    for k in range(2):  # the second job's lines come well after the follower has started
        time.sleep(0.3 if k == 0 else 1.2)
        execute("a", "Once upon a time", 4, job_id="follow-me-%d" % k)
    time.sleep(1.2)
    fol.terminate()
    out, _ = fol.communicate(timeout=5)
    # the worker logs a job by its correlation id (random), not the client's job_id
    check(out.count("event=job_start") >= 2, "orchctl logs --follow shows new lines: %r" % out[-300:])
    r = orchctl("logs", "zzz")
    check(r.returncode == 1, "orchctl logs of an unknown worker")
    st, t = admin("GET", "/admin/workers/zzz/logs")
    check(st == 404 and json.loads(t)["error"]["code"] == "NOT_FOUND", "admin logs of an unknown worker: 404")
    comp = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "supervisor", "orchctl", "orchctl.bash")
    def complete(line):
        script = ('source %s; COMP_WORDS=(%s); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _orchctl; '
                  'printf "%%s\\n" "${COMPREPLY[@]}"' % (comp, line))
        return subprocess.run(["bash", "-c", script], capture_output=True, text=True,
                              env=dict(os.environ, PATH=BIN + ":" + os.environ["PATH"])).stdout.split()
    check(complete("orchctl at") == ["attach"], "completion of a command")
    check("a-0" in complete("orchctl logs --socket %s ''" % ADMIN), "completion of a worker id from orchd")
    check(complete("orchctl attach a --to") == ["--topic"], "completion of an option")

    # every operation of docs/openapi.json (validated by an independent OpenAPI parser) is routed
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    if os.path.isdir(os.path.join(interop, "node_modules", "@apidevtools", "swagger-parser")):
        r = subprocess.run(["node", os.path.join(interop, "openapi_check.mjs"), os.path.join(root, "docs", "openapi.json")],
                           capture_output=True, text=True, timeout=60)
        ops = [l.split(" ", 1) for l in r.stdout.splitlines()]
        check(r.returncode == 0 and len(ops) >= 16, "docs/openapi.json is valid OpenAPI 3: %s" % r.stderr[-500:])
        for method, path in ops:
            concrete = path.replace("{job_id}", "zzz").replace("{name}", "zzz").replace("{id}", "zzz")
            body = {} if method == "POST" else None
            if path.startswith("/admin/"):
                st, t = admin(method, concrete, body)
            elif method == "GET":
                st, _, t = get(concrete)
            else:
                st, _, t = post(concrete, body)
            check(not (st == 404 and ("no route" in t or "no such admin route" in t)),
                  "documented %s %s is routed: %s %s" % (method, path, st, t[:120]))
    else:
        check(False, "swagger-parser is not installed in tests/interop: run 'make deps'")

    # metrics pass promtool
    _, _, text = get("/metrics")
    mpath = os.path.join(tmp, "metrics.txt")
    open(mpath, "w").write(text)
    if shutil.which("promtool"):
        r = subprocess.run(["promtool", "check", "metrics"], stdin=open(mpath), capture_output=True, text=True)
        check(r.returncode == 0, "promtool check metrics: %s" % (r.stdout + r.stderr)[:300])
    else:
        check(False, "promtool is missing (Debian package prometheus)")
    # issue 62, item 6: the queue wait per model, orchd's uptime
    qw = [l for l in text.splitlines() if l.startswith('orch_queue_wait_seconds_count{model="a"}')]
    check(qw and float(qw[0].split()[-1]) >= 1, "orch_queue_wait_seconds counts a's jobs: %r" % qw)
    up = [l for l in text.splitlines() if l.startswith("orch_uptime_seconds ")]
    check(up and float(up[0].split()[-1]) > 0, "orch_uptime_seconds: %r" % up)
    # ... and a worker's memory by part, which add up to what it uses (cpu: constant)
    parts = {}
    for l in text.splitlines():
        if l.startswith('orch_worker_memory_bytes{model="a"'):
            parts[l.split('kind="')[1].split('"')[0]] = float(l.split()[-1])
    used = [float(l.split()[-1]) for l in text.splitlines() if l.startswith('orch_worker_memory_used_bytes{model="a"')]
    check(sorted(parts) == ["kv_cache", "scratch", "weights"] and all(v > 0 for v in parts.values())
          and used and sum(parts.values()) == used[0],
          "a's worker memory: weights + kv_cache + scratch = used: %r %r" % (parts, used))
    check("orch_gpu_" not in text, "no GPU sensor gauges on a cpu-only host")
    for name in ("orch_requests_total", "orch_time_to_first_token_seconds_bucket", "orch_queue_depth",
                 "orch_kv_cache_usage_ratio", "orch_worker_memory_used_bytes", "orch_model_loads_total",
                 "orch_queue_wait_seconds_bucket", "orch_uptime_seconds"):
        check(name in text, "metric %s" % name)

    # SIGTERM: STOPPING, drain, exit 0
    orchd.send_signal(signal.SIGTERM)
    rc = orchd.wait(15)
    check(rc == 0, "exit 0 after SIGTERM: %s" % rc)
    time.sleep(0.3)
    check("STOPPING=1" in notes, "sd_notify STOPPING=1")
    log.flush()
    check("state=failed" not in open(os.path.join(tmp, "orchd.log")).read(), "no model reads failed after a clean shutdown")
finally:
    stop_notes.set()
    if orchd.poll() is None:
        orchd.kill()
        orchd.wait()
    log.close()
    if orchd_lib.failed:
        sys.stderr.write("".join(l for l in open(os.path.join(tmp, "orchd.log")) if "load_progress" not in l)[-12000:])
    shutil.rmtree(tmp, ignore_errors=True)

print("orchd_test: %d passed, %d failed" % (orchd_lib.passed, orchd_lib.failed))
sys.exit(1 if orchd_lib.failed else 0)
