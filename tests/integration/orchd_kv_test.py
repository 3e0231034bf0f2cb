#!/usr/bin/env python3
"""orchd_kv_test - the paged KV cache and the prefix cache as a client and an
operator see them (issue 19), against real workers on the cpu device serving
the repository's own model (models/stories260K.gguf):

- a repeated prompt is served from the prefix cache: OpenAI
  usage.prompt_tokens_details.cached_tokens (completions and chat, streamed
  with include_usage and not) and the native end event's cached_tokens say
  how many prompt tokens were not computed, a multiple of the block, and the
  answer is the same;
- cache_salt: a salted request shares blocks only with its own salt; a bad
  one is a 400 naming it;
- two replicas: each prompt prefix goes back to the replica that holds it
  (orch_affinity_routed_total counts the times that was not the least
  loaded one), so every repeat is a hit;
- /metrics (orch_kv_blocks, orch_kv_blocks_used, orch_prefix_cache_queries_total,
  orch_prefix_cache_hits_total, orch_preemptions_total), /admin/workers and
  orchctl status show the pool;
- a model with a sliding window (gpt-oss tiny, from $ORCH_TESTDATA when it is
  there): a repeated prompt longer than the window is served from the cache
  too, with the same answer;
- configuration: kv_cache_mib sizes the pool; one smaller than a sequence of
  the context fails the load saying what fits; kv_cache_fraction; both at
  once is a config error; enable_prefix_cache = no turns the cache off."""
import json
import os
import subprocess
import sys
import time

BIN = os.environ["ORCH_BIN"]
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
MODEL = os.path.join(ROOT, "models", "stories260K.gguf")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import orchd_lib  # noqa: E402
from orchd_lib import OrchdProc, admin, check, get, metric, post, sse_events  # noqa: E402
OSS = orchd_lib.gpt_oss_tiny() or "gpt-oss-tiny-mxfp4.gguf (or gpt-oss's vocabulary)"

CTX = 256
SYSTEM = ("Once upon a time there was a little girl named Lily who lived in a small house "
          "near the woods with her mother, her father and a dog called Max. ")


def model(name, extra=""):
    return ('[model "%s"]\npath = %s\ndevice = cpu\nslots = 4\nthreads = 1\ncontext = %d\n%s\n'
            % (name, MODEL, CTX, extra))


def completion(prompt, **kw):
    body = {"model": kw.pop("model", "m"), "prompt": prompt, "max_tokens": 8, "temperature": 0}
    body.update(kw)
    st, _, text = post("/v1/completions", body)
    return st, json.loads(text)


def cached(resp):
    return resp["usage"]["prompt_tokens_details"]["cached_tokens"]


def wait_metric(name, labels, pred, secs=6):
    """The metric once @pred holds of it (heartbeats come every second), else its last value."""
    end = time.time() + secs
    v = metric(name, labels)
    while not pred(v) and time.time() < end:
        time.sleep(0.2)
        v = metric(name, labels)
    return v


def test_cache_hits():
    prompt = SYSTEM + "One day Lily"
    st, a = completion(prompt)
    check(st == 200 and cached(a) == 0, "first request: nothing cached: %s" % a)
    st, b = completion(prompt)
    n = a["usage"]["prompt_tokens"]
    check(st == 200 and cached(b) > 0 and cached(b) % 16 == 0 and cached(b) <= n,
          "repeat: cached_tokens a multiple of 16 within the prompt: %s of %d" % (cached(b), n))
    check(b["choices"][0]["text"] == a["choices"][0]["text"], "the same answer from the cache")
    # streamed with include_usage: the usage chunk carries it too
    st, _, text = post("/v1/completions", {"model": "m", "prompt": prompt, "max_tokens": 8,
                                           "temperature": 0, "stream": True,
                                           "stream_options": {"include_usage": True}})
    usage = [json.loads(e["data"]) for e in sse_events(text) if e["data"] != "[DONE]"]
    usage = [u["usage"] for u in usage if u.get("usage")]
    check(st == 200 and usage and usage[-1]["prompt_tokens_details"]["cached_tokens"] == cached(b),
          "stream usage cached_tokens: %s" % usage)
    # native: the end event
    st, _, text = post("/execute", {"job_id": "kv1", "model": "m", "prompt": prompt,
                                    "max_tokens": 8, "temperature": 0})
    end = [json.loads(e["data"]) for e in sse_events(text) if e["event"] == "end"]
    check(st == 200 and end and end[0]["cached_tokens"] == cached(b),
          "native end cached_tokens: %s" % end)
    # chat: a shared system message, different user turns
    msgs = [{"role": "system", "content": SYSTEM}]
    got = []
    for q in ("Who is Lily?", "Who is Max?"):
        st, _, text = post("/v1/chat/completions", {"model": "m", "max_tokens": 4,
                                                    "messages": msgs + [{"role": "user", "content": q}]})
        got.append(json.loads(text)["usage"]["prompt_tokens_details"]["cached_tokens"] if st == 200 else -1)
    check(got[0] >= 0 and got[1] >= 32, "chat: the shared system prompt is cached: %s" % got)


def test_window_cache():
    """gpt-oss tiny: every other layer sees a window of 128 positions; its blocks
    have a pool of their own, and a prompt resumes where both pools hold it."""
    if not os.path.isfile(OSS):
        print("skipped: the sliding-window case needs %s" % OSS, flush=True)
        return
    prompt = " ".join("w%d" % i for i in range(120))
    st, a = completion(prompt, model="oss")
    st2, b = completion(prompt, model="oss")
    n = a["usage"]["prompt_tokens"] if st == 200 else 0
    check(st == st2 == 200 and n > 200, "gpt-oss answered a %d-token prompt" % n)
    check(cached(a) == 0 and cached(b) == (n - 1) // 16 * 16,
          "gpt-oss repeat: %d of %d tokens cached (every whole block but the last token's)"
          % (cached(b), n))
    check(b["choices"][0]["text"] == a["choices"][0]["text"], "gpt-oss: the same answer from the cache")


def test_salt():
    prompt = "The dog Max. " + SYSTEM
    st, a = completion(prompt, cache_salt="tenant-a")
    st2, b = completion(prompt, cache_salt="tenant-b")
    st3, c = completion(prompt, cache_salt="tenant-a")
    st4, d = completion(prompt)
    check(st == st2 == st3 == st4 == 200, "salted requests answered")
    check(cached(a) == 0 and cached(b) == 0, "another salt sees nothing: %d %d" % (cached(a), cached(b)))
    check(cached(c) > 0, "the same salt hits: %d" % cached(c))
    check(cached(d) == 0, "no salt does not see salted blocks: %d" % cached(d))
    for bad in ("", 7, "x" * 257):
        st, r = completion(prompt, cache_salt=bad)
        check(st == 400 and r["error"]["param"] == "cache_salt", "cache_salt %r refused: %s" % (bad, r))
    st, _, text = post("/execute", {"job_id": "kv2", "model": "m", "prompt": "x", "cache_salt": 1})
    check(st == 400 and "cache_salt" in text, "native cache_salt checked: %s" % text)


def test_affinity():
    """Ten prefixes, each twice, one at a time: every repeat finds its blocks."""
    before = metric("orch_affinity_routed_total", {"model": "r"})
    hits = []
    for k in range(10):
        p = "Story %d. " % k + SYSTEM + "The end."
        completion(p, model="r")
        hits.append(cached(completion(p, model="r")[1]))
    check(all(h > 0 for h in hits), "every repeat hits on two replicas: %s" % hits)
    routed = metric("orch_affinity_routed_total", {"model": "r"}) - before
    check(routed > 0, "some prefixes went to the replica that is not the least loaded: %s" % routed)
    st, text = admin("GET", "/admin/workers")
    ws = [w for w in json.loads(text) if w["model"] == "r"]
    q = [wait_metric_worker(w["id"]) for w in ws]
    check(len(ws) == 2 and all(x > 0 for x in q), "both replicas served prefixes: %s" % q)


def test_affinity_balance():
    """As many requests at once as a replica has slots, sharing one prefix: the preferred
    replica takes a share, not all (it had free slots for every one)."""
    import threading

    def queries():
        st, text = admin("GET", "/admin/workers")
        return {w["id"]: w.get("prefix_query_tokens", 0) for w in json.loads(text) if w["model"] == "r"}
    time.sleep(1.2)  # a heartbeat: the counters are current
    before = queries()
    p = "A shared prefix for everyone. " + SYSTEM * 7  # past the 1,024 bytes of the key
    ts = [threading.Thread(target=completion, args=(p + str(k),), kwargs={"model": "r", "max_tokens": 150})
          for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    time.sleep(1.2)
    after = queries()
    grew = [after[w] - before.get(w, 0) for w in after]
    check(len(grew) == 2 and all(g > 0 for g in grew), "both replicas took some of a burst: %s" % grew)


def wait_metric_worker(wid, secs=6):
    end = time.time() + secs
    while True:
        st, text = admin("GET", "/admin/workers")
        w = [w for w in json.loads(text) if w["id"] == wid]
        v = w[0].get("prefix_query_tokens", 0) if w else 0
        if v > 0 or time.time() > end:
            return v
        time.sleep(0.2)


def test_observability():
    hits = wait_metric("orch_prefix_cache_hits_total", {"model": "m"}, lambda v: v > 0)
    queries = metric("orch_prefix_cache_queries_total", {"model": "m"})
    check(0 < hits <= queries, "hits %s of %s queried prompt tokens" % (hits, queries))
    check(metric("orch_kv_blocks", {"model": "m"}) == 4 * CTX // 16, "orch_kv_blocks = slots x context / 16")
    _, _, text = get("/metrics")
    for name in ("orch_kv_blocks_used", "orch_preemptions_total", "orch_affinity_routed_total"):
        check('%s{model="m"}' % name in text, "%s exported" % name)
    st, text = admin("GET", "/admin/workers")
    w = [w for w in json.loads(text) if w["model"] == "m"][0]
    check(w.get("kv_blocks_total") == 64 and w.get("kv_block_tokens") == 16 and w.get("prefix_cache") is True,
          "/admin/workers: the pool %s" % w)
    r = subprocess.run([BIN + "/orchctl", "status", "--socket", orchd_lib.ADMIN], capture_output=True, text=True)
    check(r.returncode == 0 and "/64 blocks of 16" in r.stdout and "prefix cache on" in r.stdout,
          "orchctl status shows the pool: %s" % r.stdout)


def test_config():
    # a budget: 2 MiB of 10240-byte blocks (stories260K: 5 layers x 64 x F16 x 2 x 16)
    o = OrchdProc(BIN, seed=11, more=lambda tmp: model("m", "kv_cache_mib = 2\nkv_block_tokens = 32\n"))
    orchd_lib.ADMIN = os.path.join(o.tmp, "orchd.sock")
    try:
        st, a = completion("Hello")
        check(st == 200, "kv_cache_mib = 2 serves")
        n = wait_metric("orch_kv_blocks", {"model": "m"}, lambda v: v > 0)
        check(n == (2 << 20) // 20480, "kv_cache_mib = 2 in blocks of 32: %s" % n)
    finally:
        o.stop()
    # too small for one sequence: the load fails, saying what fits
    o = OrchdProc(BIN, seed=12, more=lambda tmp: model("m", "kv_cache_mib = 1\ncontext = 4096\npreload = no\n"))
    orchd_lib.ADMIN = os.path.join(o.tmp, "orchd.sock")
    try:
        st, _, text = post("/v1/completions", {"model": "m", "prompt": "Hi", "max_tokens": 2})
        check(st == 503 and "MODEL_LOAD_FAILED" in text, "a pool below one sequence: the load fails: %d %s" % (st, text))
        st, text = admin("GET", "/admin/status")
        check("less than one sequence of the context (4096 tokens need 2.5 MiB)" in text,
              "the operator is told what fits: %s" % text)
    finally:
        o.stop()
    # a fraction of the free memory
    o = OrchdProc(BIN, seed=13, more=lambda tmp: model("m", "kv_cache_fraction = 0.001\n"))
    orchd_lib.ADMIN = os.path.join(o.tmp, "orchd.sock")
    try:
        st, a = completion("Hello")
        n = wait_metric("orch_kv_blocks", {"model": "m"}, lambda v: v > 0)
        # a thousandth of this machine's memory is megabytes: far more than the default 64 blocks
        check(st == 200 and n > 4 * CTX // 16, "kv_cache_fraction sizes the pool: %s blocks" % n)
        st, text = admin("GET", "/admin/status")
        est = [m for m in json.loads(text)["models"] if m["name"] == "m"][0]["memory_estimate_bytes"]
        check(est >= n * 10240, "orchd's placement counts the fraction's pool: %s >= %s" % (est, n * 10240))
    finally:
        o.stop()
    # the cache off
    o = OrchdProc(BIN, seed=14, more=lambda tmp: model("m", "enable_prefix_cache = no\n"))
    orchd_lib.ADMIN = os.path.join(o.tmp, "orchd.sock")
    try:
        p = SYSTEM + "Lily"
        completion(p)
        st, b = completion(p)
        check(st == 200 and cached(b) == 0, "enable_prefix_cache = no: nothing cached")
        r = subprocess.run([BIN + "/orchctl", "status", "--socket", orchd_lib.ADMIN], capture_output=True, text=True)
        check("prefix cache off" in r.stdout, "orchctl status says the cache is off: %s" % r.stdout)
        test_orchctl_load()
    finally:
        o.stop()
    # both sizes at once, and bad values: orchd --check-config names the key
    for extra, want in (("kv_cache_mib = 64\nkv_cache_fraction = 0.5\n", "give one"),
                        ("kv_cache_fraction = 1.5\n", "kv_cache_fraction"),
                        ("kv_block_tokens = 0\n", "kv_block_tokens"),
                        ("enable_prefix_cache = maybe\n", "enable_prefix_cache")):
        path = os.path.join(o.tmp + ".conf")
        with open(path, "w") as f:
            f.write("[server]\nlisten = 127.0.0.1:1\n" + model("m", extra))
        r = subprocess.run([BIN + "/orchd", "--check-config", "--config", path], capture_output=True, text=True)
        os.unlink(path)
        check(r.returncode != 0 and want in r.stderr, "%r refused: %s" % (extra, r.stderr))


def test_orchctl_load():
    """orchctl load takes the pool's keys; orchd checks them as the file's."""
    def load(*args):
        return subprocess.run([BIN + "/orchctl", "load", "--socket", orchd_lib.ADMIN] + list(args),
                              capture_output=True, text=True, timeout=60)
    r = load("k", MODEL, "--kv-cache-mib", "2", "--kv-block-tokens", "32", "--no-prefix-cache")
    check(r.returncode == 0, "orchctl load with the kv flags: %s" % (r.stdout + r.stderr))
    n = wait_metric("orch_kv_blocks", {"model": "k"}, lambda v: v > 0)
    check(n == (2 << 20) // 20480, "orchctl load --kv-cache-mib 2 --kv-block-tokens 32: %s blocks" % n)
    st, text = admin("GET", "/admin/status")
    k = [m for m in json.loads(text)["models"] if m["name"] == "k"]
    check(k and k[0].get("kv_cache_mib") == 2 and k[0].get("enable_prefix_cache") is False,
          "status shows the model's kv keys: %s" % k)
    r = load("f", MODEL, "--kv-cache-fraction", "0.002")
    n = wait_metric("orch_kv_blocks", {"model": "f"}, lambda v: v > 0)
    check(r.returncode == 0 and n > 4 * CTX // 16, "orchctl load --kv-cache-fraction: %s blocks %s" % (n, r.stderr))
    r = load("k")
    check(r.returncode == 0, "a known model loads by name: %s" % r.stderr)
    r = load("k", "--kv-cache-mib", "4")
    check(r.returncode != 0 and "changes nothing" in r.stderr,
          "a load by name with settings is refused, not silently ignored: %s" % r.stderr)
    r = load("g", MODEL, "--kv-cache-fraction", "0.5", "--kv-cache-mib", "8")
    check(r.returncode != 0 and "give one" in r.stderr, "both sizes refused by orchd: %s" % r.stderr)
    for bad in (["--kv-cache-fraction", "2"], ["--kv-block-tokens", "0"], ["--kv-cache-mib", "x"]):
        r = load("h", MODEL, *bad)
        check(r.returncode == 2 and bad[0] in r.stderr, "orchctl load %s refused: %s" % (bad, r.stderr))


def main():
    oss = ('[model "oss"]\npath = %s\ndevice = cpu\nslots = 2\nthreads = 1\ncontext = 1024\n' % OSS
           if os.path.isfile(OSS) else "")
    o = OrchdProc(BIN, seed=10, ready_s=30,
                  more=lambda tmp: model("m", "kv_block_tokens = 16\n") + model("r", "replicas = 2\ncontext = 1024\n")
                  + oss)
    orchd_lib.ADMIN = os.path.join(o.tmp, "orchd.sock")
    try:
        test_cache_hits()
        test_window_cache()
        test_salt()
        test_affinity()
        test_affinity_balance()
        test_observability()
    finally:
        o.stop()
    test_config()
    print("orchd_kv_test: %d passed, %d failed" % (orchd_lib.passed, orchd_lib.failed))
    return 1 if orchd_lib.failed else 0


if __name__ == "__main__":
    sys.exit(main())
