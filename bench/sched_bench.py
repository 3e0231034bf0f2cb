#!/usr/bin/env python3
"""bench/sched_bench.py BUILD [MODEL.gguf] - the scheduling policies (issue 62,
item 8) on one mixed workload, side by side.

The workload, the same for each policy (`scheduler` = fcfs, prefill_first,
fair), one orchd, one cpu worker of 4 slots (chunk 512, 2 threads):
- key A, a batch: 16 jobs (/execute) sent at once, each a 512-token prompt (token
  ids) and 64 tokens out;
- key B, interactive: 6 jobs, one every 0.5 s from 0.3 s on, each a
  16-token prompt and 32 tokens out.
Every request streams; per key, the time to first token (p50, p95) and the mean
gap between tokens, the wall time of the whole and the tokens out per second;
each the median of 3 rounds, the policies' order rotated each round.
The model: MODEL, or qwen2.5-0.5b's shape cut to 2 layers (Q4_K_M, orch-synth):
~9 ms a decode step and ~0.5 ms a prompt token on 2 cores of the machine that
wrote bench/RESULTS.md, so prompts and decodes both weigh. Prints a Markdown
table for bench/RESULTS.md."""
import http.client
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build"))
KA = "bench-key-a-0123456789abcdef"
KB = "bench-key-b-0123456789abcdef"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def stream(port, key, prompt, out, label, max_tokens):
    """/execute (its token events come whatever text a token has: the synthesized
    vocabulary's have none)."""
    t0 = time.time()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    c.request("POST", "/execute", json.dumps({"job_id": "%s-%f" % (label, t0), "model": "m", "prompt": prompt,
                                              "max_tokens": max_tokens, "temperature": 0}),
              {"Content-Type": "application/json", "Authorization": "Bearer " + key})
    r = c.getresponse()
    times = []
    buf = b""
    while True:
        chunk = r.read1(65536) if hasattr(r, "read1") else r.read(1)
        if not chunk:
            break
        buf += chunk
        while b"\n\n" in buf:
            ev, buf = buf.split(b"\n\n", 1)
            if b"event: token" in ev:
                times.append(time.time())
    c.close()
    out.append((label, r.status, t0, times))


def run(policy, model, tmp):
    port = free_port()
    keys = os.path.join(tmp, "keys")
    with open(keys, "w") as f:
        f.write("%s\n%s\n" % (KA, KB))
    os.chmod(keys, 0o600)
    conf = os.path.join(tmp, "orchd.conf")
    with open(conf, "w") as f:
        f.write("[server]\nlisten = 127.0.0.1:%d\nadmin_socket = %s/orchd.sock\nruntime_dir = %s\n"
                "api_keys_file = %s\nmax_queue = 64\n\n[model \"m\"]\npath = %s\nslots = 4\n"
                "context = 1024\nthreads = 2\nscheduler = %s\n" % (port, tmp, tmp, keys, model, policy))
    log = open(os.path.join(tmp, "orchd-%s.log" % policy), "w")
    p = subprocess.Popen([BUILD + "/bin/orchd", "--config", conf], stdout=log, stderr=subprocess.STDOUT)
    try:
        end = time.time() + 120
        while time.time() < end:
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                c.request("GET", "/ready")
                if c.getresponse().status == 200:
                    break
            except OSError:
                pass
            time.sleep(0.1)
        out = []
        threads = []
        t0 = time.time()
        for i in range(16):
            prompt = [(i * 131 + k * 7) % 30000 + 1000 for k in range(512)]
            threads.append(threading.Thread(target=stream, args=(port, KA, prompt, out, "A", 64)))
            threads[-1].start()
        for i in range(6):
            while time.time() < t0 + 0.3 + 0.5 * i:
                time.sleep(0.005)
            prompt = [(i * 17 + k * 3) % 30000 + 2000 for k in range(16)]
            threads.append(threading.Thread(target=stream, args=(port, KB, prompt, out, "B", 32)))
            threads[-1].start()
        for t in threads:
            t.join()
        wall = time.time() - t0
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(30)
        log.close()
    row = {"policy": policy, "wall": wall}
    tokens = 0
    for label in ("A", "B"):
        rs = [r for r in out if r[0] == label]
        bad = [r for r in rs if r[1] != 200 or not r[3]]
        if bad:
            raise SystemExit("%s: %d requests of %s failed" % (policy, len(bad), label))
        ttft = sorted(r[3][0] - r[2] for r in rs)
        gaps = [b - a for r in rs for a, b in zip(r[3], r[3][1:])]
        tokens += sum(len(r[3]) for r in rs)
        row[label] = (statistics.median(ttft), ttft[int(0.95 * (len(ttft) - 1) + 0.5)],
                      statistics.mean(gaps) if gaps else 0.0)
    row["tps"] = tokens / wall
    return row


ROUNDS = 3


def median_row(rs):
    """Each figure's median over the rounds."""
    row = {"policy": rs[0]["policy"], "wall": statistics.median(r["wall"] for r in rs),
           "tps": statistics.median(r["tps"] for r in rs)}
    for label in ("A", "B"):
        row[label] = tuple(statistics.median(r[label][i] for r in rs) for i in range(3))
    return row


def main():
    tmp = tempfile.mkdtemp(prefix="sched_bench.")
    try:
        model = sys.argv[2] if len(sys.argv) > 2 else os.path.join(tmp, "q2l.gguf")
        if len(sys.argv) <= 2:
            subprocess.run([BUILD + "/bin/orch-synth", "--preset", "qwen2.5-0.5b", "--layers", "2",
                            "--quant", "Q4_K_M", "-o", model], check=True, capture_output=True)
        policies = ("fcfs", "prefill_first", "fair")
        runs = {p: [] for p in policies}
        for rnd in range(ROUNDS):  # the order rotated each round: no policy always runs first
            for k in range(len(policies)):
                p = policies[(k + rnd) % len(policies)]
                runs[p].append(run(p, model, tmp))
        rows = [median_row(runs[p]) for p in policies]
        print("| scheduler | A (batch) TTFT p50 / p95 s | A gap ms | B (interactive) TTFT p50 / p95 s "
              "| B gap ms | wall s | tokens/s |")
        print("|---|---|---|---|---|---|---|")
        for r in rows:
            print("| %s | %.2f / %.2f | %.1f | %.2f / %.2f | %.1f | %.1f | %.0f |"
                  % (r["policy"], r["A"][0], r["A"][1], r["A"][2] * 1e3, r["B"][0], r["B"][1],
                     r["B"][2] * 1e3, r["wall"], r["tps"]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


main()
