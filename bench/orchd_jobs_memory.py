#!/usr/bin/env python3
"""orchd_jobs_memory - what finished jobs cost orchd (issue 16, item 9).

Starts orchd (ORCH_BIN, or argv[1]) with one cpu model (stories260K), runs
JOBS native jobs of TOKENS tokens each (CONCURRENCY at a time), all kept for
resuming (events_keep_s = 3600), then prints orchd's resident memory before
and after and, when orchd has them, orch_jobs_kept and orch_jobs_kept_bytes.

  bench/orchd_jobs_memory.py [ORCH_BIN]   (JOBS=3200 TOKENS=128 CONCURRENCY=8
                                           EXTRA="events_keep_jobs = 100000;events_keep_mib = 1024")
"""
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

BIN = sys.argv[1] if len(sys.argv) > 1 else os.environ["ORCH_BIN"]
HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.environ.get("ORCH_TESTDATA", os.path.join(HERE, "..", "..", "shared", "testdata"))
MODEL = os.path.join(DATA, "models", "stories260K.gguf")
JOBS = int(os.environ.get("JOBS", "3200"))
TOKENS = int(os.environ.get("TOKENS", "128"))
CONCURRENCY = int(os.environ.get("CONCURRENCY", "8"))
EXTRA = os.environ.get("EXTRA", "")  # more [server] lines, ';' between them


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def rss_kib(pid):
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def request(port, method, path, body=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    c.request(method, path, json.dumps(body) if body is not None else None,
              {"Content-Type": "application/json"})
    r = c.getresponse()
    text = r.read().decode()
    c.close()
    return r.status, text


def metric(port, name):
    for line in request(port, "GET", "/metrics")[1].splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def main():
    tmp = tempfile.mkdtemp()
    port = free_port()
    conf = os.path.join(tmp, "orchd.conf")
    with open(conf, "w") as f:
        f.write("[server]\nlisten = 127.0.0.1:%d\nadmin_socket = %s/orchd.sock\nruntime_dir = %s\n"
                "hash_cache_beside = no\nevents_keep_s = 3600\nmax_queue = 1000\n%s\n"
                '[model "a"]\npath = %s\nslots = 8\ncontext = 256\nthreads = 2\n' % (port, tmp, tmp, EXTRA.replace(';', '\n'), MODEL))
    log = open(os.path.join(tmp, "orchd.log"), "w")
    orchd = subprocess.Popen([os.path.join(BIN, "orchd"), "--config", conf], stdout=log, stderr=subprocess.STDOUT)
    try:
        end = time.time() + 30
        while time.time() < end:
            try:
                if request(port, "GET", "/ready")[0] == 200:
                    break
            except OSError:
                time.sleep(0.1)
        for k in range(16):  # warm: the first streams' buffers and the allocator's arenas
            request(port, "POST", "/execute", {"job_id": "w%d" % k, "model": "a", "prompt": "Once", "max_tokens": 2})
        before = rss_kib(orchd.pid)
        next_k = [0]
        lock = threading.Lock()
        done = [0]
        tokens = [0]

        def worker():
            while True:
                with lock:
                    k = next_k[0]
                    next_k[0] += 1
                if k >= JOBS:
                    return
                st, text = request(port, "POST", "/execute", {
                    "job_id": "m%d" % k, "model": "a", "prompt": "Once upon a time", "max_tokens": TOKENS,
                    "temperature": 0.8, "seed": k})
                tail = text[text.rfind("event: end"):]
                with lock:
                    if st == 200 and tail.startswith("event: end"):
                        done[0] += 1
                        tokens[0] += json.loads(tail.split("data: ", 1)[1].split("\n", 1)[0])["tokens_out"]
        t0 = time.time()
        th = [threading.Thread(target=worker) for _ in range(CONCURRENCY)]
        [t.start() for t in th]
        [t.join() for t in th]
        secs = time.time() - t0
        after = rss_kib(orchd.pid)
        kept, kept_bytes = metric(port, "orch_jobs_kept"), metric(port, "orch_jobs_kept_bytes")
        print("jobs=%d max_tokens=%d ended=%d tokens=%d (%.1f a job) in %.1f s"
              % (JOBS, TOKENS, done[0], tokens[0], tokens[0] / max(done[0], 1), secs))
        print("orchd VmRSS before=%d KiB after=%d KiB growth=%.1f MiB (%.0f bytes per job)"
              % (before, after, (after - before) / 1024.0, (after - before) * 1024.0 / max(JOBS, 1)))
        print("orch_jobs_kept=%s orch_jobs_kept_bytes=%s" % (kept, kept_bytes))
    finally:
        orchd.send_signal(signal.SIGTERM)
        try:
            orchd.wait(30)
        except subprocess.TimeoutExpired:
            orchd.kill()
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)


main()
