#!/usr/bin/env python3
"""orchd_pull_test - models named by reference in orchd (issue 21), against
hf_fixture (never the network).

- `model = hf:...` found in the store (pulled by orchctl): served, and the
  admin API shows the reference and the file it resolved to;
- not in the store, `pull = no` (the default): orchd starts, a request
  fails saying to run orchctl pull; nothing is fetched;
- `pull = yes`: the first request starts the pull, the admin API shows its
  file and bytes while it runs, then the model loads and answers with the
  golden text;
- `orchctl load NAME hf:... --pull` through the admin API: followed to
  ready; without --pull a reference the store lacks is refused (400);
  the model persists across a restart of orchd by its reference;
- unloading a model while it pulls stops the pull and keeps the partial;
- `orchctl pull` while orchd runs: orchd pulls into its own store, the
  pull listed in GET /admin/pulls (done, with its path; a failure's error);
- config errors: a path and a model, a malformed reference."""
import json
import os
import subprocess
import sys
import tempfile
import time

BIN = os.environ["ORCH_BIN"]
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import orchd_lib  # noqa: E402
from hf_fixture import HfFixture  # noqa: E402
from orchd_lib import check, get, post  # noqa: E402

DATA = orchd_lib.testdata("models/golden-stories260K.json", "models/stories260K-Q8_0.gguf")
STORIES = os.path.join(HERE, "..", "..", "models", "stories260K.gguf")
GOLDEN = json.load(open(os.path.join(DATA, "models", "golden-stories260K.json")))["cases"][0]
MODEL = open(STORIES, "rb").read()

REPOS = {
    "org/stories-GGUF": {"files": {"stories-Q8_0.gguf": MODEL}},
    "org/slow-GGUF": {"files": {"stories-Q8_0.gguf": MODEL[:-16] + MODEL[-16:]}},
    # other bytes than the two above: the fixture serves a blob by its SHA-256
    "org/gated-GGUF": {"files": {"g-Q8_0.gguf": open(os.path.join(DATA, "models", "stories260K-Q8_0.gguf"),
                                                     "rb").read()}, "gated": "hf_secret"},
}


def golden_ok(model):
    st, _, t = post("/v1/completions", {"model": model, "prompt": GOLDEN["prompt"], "max_tokens": 8,
                                        "temperature": 0})
    return st == 200 and GOLDEN["text"].startswith(json.loads(t)["choices"][0]["text"]), t[:300]


def start(**kw):
    o = orchd_lib.OrchdProc(BIN, ready_s=60, **kw)
    orchd_lib.ADMIN = os.path.join(o.tmp, "orchd.sock")
    return o


def status_model(name):
    st, t = orchd_lib.admin("GET", "/admin/status")
    for m in (json.loads(t).get("models", []) if st == 200 else []):
        if m["name"] == name:
            return m
    return None


def orchctl(o, *args, env=None):
    env = dict(os.environ, ORCHD_SOCKET=os.path.join(o.tmp, "orchd.sock"), **(env or {}))
    p = subprocess.run([BIN + "/orchctl"] + list(args), env=env, capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def section(name, ref, pull=False, preload=False):
    return ('[model "%s"]\nmodel = %s\npull = %s\npreload = %s\ndevice = cpu\nthreads = 1\n'
            'context = 256\n' % (name, ref, "yes" if pull else "no", "yes" if preload else "no"))


def test_served_from_store(hf, store):
    p = subprocess.run([BIN + "/orchctl", "pull", "hf:org/stories-GGUF:Q8_0", "--model-dir", store],
                       capture_output=True, text=True)
    check(p.returncode == 0, "orchctl pull into the store: %s" % p.stderr)
    o = start(conf="model_dir = %s\n" % store, seed=61,
              more=lambda t: section("s", "hf:org/stories-GGUF:q8_0", preload=True) +
              section("x", "hf:org/none:Q8_0"))
    try:
        ok, t = golden_ok("s")
        check(ok, "a model named by reference, found in the store, answers: %s" % t)
        m = status_model("s")
        check(m and m["model"] == "hf:org/stories-GGUF:Q8_0" and m["path"].startswith(store + "/snapshots/"),
              "the admin API shows the reference and its file: %r" % m)
        log = open(o.log_path).read()
        sha = hf.repos["org/stories-GGUF"]["sha"]["stories-Q8_0.gguf"]
        check("model_sha256 sha256=%s from=cache_beside" % sha in log,
              "the worker took the file's sha256 from the store's digest cache, not by hashing: %r"
              % [l for l in log.splitlines() if "model_sha256" in l])
        rc, out, err = orchctl(o, "models", "--model-dir", store)
        check(rc == 0 and "s, x" not in out and [l for l in out.splitlines() if "stories-GGUF" in l and
                                                  l.rstrip().endswith(" s")],
              "orchctl models: the configured model that names the reference uses it: %s" % out)
        n = dict(hf.requests)
        st, _, t = post("/v1/completions", {"model": "x", "prompt": "a", "max_tokens": 2})
        x = status_model("x")
        check(st == 503 and "MODEL_LOAD_FAILED" in t and x and x["state"] == "failed" and
              "orchctl pull hf:org/none:Q8_0" in x.get("error", "") and hf.requests == n,
              "not in the store, pull = no: fails, the admin API says how to get it, nothing fetched: "
              "%d %s %r" % (st, t[:200], x))
    finally:
        o.stop()


def test_pull_yes(hf, store):
    hf.repos["org/slow-GGUF"]["faults"] = {"stories-Q8_0.gguf": {"slow": 0.1}}
    o = start(conf="model_dir = %s\n" % store, seed=62,
              more=lambda t: section("p", "hf:org/slow-GGUF:Q8_0", pull=True))
    try:
        import threading
        res = {}
        th = threading.Thread(target=lambda: res.update(r=golden_ok("p")))
        th.start()
        seen = None
        for _ in range(100):
            m = status_model("p")
            if m and m.get("pulling") and m["pulling"]["bytes_done"] > 0:
                seen = m
                break
            time.sleep(0.05)
        rc, out, err = orchctl(o, "status")
        th.join(120)
        check(rc == 0 and "pulling hf:org/slow-GGUF:Q8_0 for p: stories-Q8_0.gguf" in out and
              "  model: hf:org/slow-GGUF:Q8_0 (pull = yes)" in out,
              "orchctl status shows the reference and the pull: %s" % out)
        check(seen is not None and seen["state"] == "loading" and seen["pulling"]["file"] == "stories-Q8_0.gguf" and
              seen["pulling"]["bytes_total"] == len(MODEL), "while it pulls, the admin API shows it: %r" % seen)
        check(res.get("r", (False,))[0], "pull = yes: the first request pulls, loads, answers: %r" % (res,))
        check(os.path.isdir(os.path.join(store, "snapshots", "org", "slow-GGUF")), "the pull went to model_dir")
    finally:
        o.stop()


def test_admin_load(hf, store):
    hf.repos["org/slow-GGUF"]["faults"] = {}
    state = tempfile.mkdtemp()
    o = start(conf="model_dir = %s\nstate_dir = %s\n" % (store, state), seed=63)
    try:
        rc, out, err = orchctl(o, "load", "a", "hf:org/stories-GGUF:Q8_0", "--device", "cpu")
        check(rc == 1 and "is not in the model store" in err and "orchctl pull" in err,
              "load of a reference the store lacks, without --pull: refused: %s" % err.strip())
        rc, out, err = orchctl(o, "load", "a", "hf:org/stories-GGUF:Q8_0", "--pull", "--device", "cpu",
                               "--context", "256")
        check(rc == 0 and "ready" in out, "load --pull: pulled and ready: %s %s" % (out[-300:], err))
        ok, t = golden_ok("a")
        check(ok, "and it answers: %s" % t)
    finally:
        o.stop()
    # the run-time model persists by its reference
    o = start(conf="model_dir = %s\nstate_dir = %s\n" % (store, state), seed=64)
    try:
        m = status_model("a")
        check(m is not None and m.get("model") == "hf:org/stories-GGUF:Q8_0",
              "after a restart, the model is there by its reference: %r" % m)
    finally:
        o.stop()


def test_unload_stops_pull(hf, store):
    hf.repos["org/slow-GGUF"]["faults"] = {"stories-Q8_0.gguf": {"slow": 0.2}}
    o = start(conf="model_dir = %s\n" % store, seed=65)
    try:
        st, t = orchd_lib.admin("POST", "/admin/models", {"name": "u", "model": "hf:org/slow-GGUF:Q8_0",
                                                             "pull": True, "device": "cpu"})
        check(st == 202, "admin load with pull: %d %s" % (st, t[:200]))
        for _ in range(100):
            m = status_model("u")
            if m and m.get("pulling") and m["pulling"]["bytes_done"] > 0:
                break
            time.sleep(0.05)
        st, t = orchd_lib.admin("DELETE", "/admin/models/u")
        time.sleep(1.0)
        sha = hf.repos["org/slow-GGUF"]["sha"]["stories-Q8_0.gguf"]
        part = os.path.join(store, "blobs", "sha256-%s.partial" % sha)
        size = os.path.getsize(part) if os.path.exists(part) else -1
        time.sleep(0.6)
        m = status_model("u")
        check(0 < size < len(MODEL) and os.path.getsize(part) == size and m and "pulling" not in m,
              "unload stops the pull, the partial kept: %d bytes, %r" % (size, m))
    finally:
        o.stop()


def test_orchctl_pull_through_orchd(hf, store):
    o = start(conf="model_dir = %s\n" % store, seed=66)
    try:
        rc, out, err = orchctl(o, "pull", "hf:org/stories-GGUF:Q8_0")
        check(rc == 0 and "orchd's model store" in out and
              os.path.isdir(os.path.join(store, "snapshots", "org", "stories-GGUF")),
              "orchctl pull with orchd running: orchd pulls into its store: %s %s" % (out, err))
        st, t = orchd_lib.admin("GET", "/admin/pulls")
        p = json.loads(t)["pulls"] if st == 200 else []
        check(p and p[0]["model"] == "hf:org/stories-GGUF:Q8_0" and p[0]["state"] == "done" and
              p[0]["path"].startswith(store), "GET /admin/pulls lists it, done, with its path: %r" % p)
        rc, out, err = orchctl(o, "pull", "hf:org/nope:Q8_0")
        check(rc == 1 and "no such repository" in err, "a failed pull through orchd says why: %s" % err.strip())
        st, t = orchd_lib.admin("POST", "/admin/pulls", {"model": "org/x"})
        check(st == 400 and "hf:" in t, "POST /admin/pulls with a bad reference: %d %s" % (st, t[:200]))
    finally:
        o.stop()


def test_operator_paths(hf, store):
    """What a new user ran into: HUP, --check-config, orchd's store for models and rm, rm after
    an unload, a failed model that works once its file is pulled, load --pull of a gated one."""
    hf.repos["org/slow-GGUF"]["faults"] = {}
    sec = section("r", "hf:org/stories-GGUF:Q8_0", preload=True) + section("late", "hf:org/slow-GGUF:Q8_0")
    subprocess.run([BIN + "/orchctl", "pull", "hf:org/stories-GGUF:Q8_0", "--model-dir", store],
                   capture_output=True)
    o = start(conf="model_dir = %s\n" % store, seed=67, more=lambda t: sec)
    try:
        pid = [w for w in json.loads(orchd_lib.admin("GET", "/admin/status")[1])["workers"]
               if w["model"] == "r"][0]["pid"]
        os.kill(o.proc.pid, 1)  # SIGHUP, the configuration unchanged
        time.sleep(1.5)
        m = status_model("r")
        w = [w for w in json.loads(orchd_lib.admin("GET", "/admin/status")[1])["workers"] if w["model"] == "r"]
        check(m and m["state"] == "ready" and w and w[0]["pid"] == pid and "reload_unload" not in open(o.log_path).read(),
              "a reload leaves an unchanged model = hf: model running: %r" % m)
        p = subprocess.run([BIN + "/orchd", "--config", os.path.join(o.tmp, "orchd.conf"), "--check-config"],
                           capture_output=True, text=True)
        check(p.returncode == 1 and "model 'r': " + store in p.stdout and "'late'" in p.stderr and
              "orchctl pull hf:org/slow-GGUF:Q8_0" in p.stderr,
              "--check-config resolves references (one found, one to pull): %s %s" % (p.stdout, p.stderr))
        rc, out, err = orchctl(o, "models")
        check(rc == 0 and ("store: " + store) in out and "hf:org/stories-GGUF:Q8_0" in out,
              "orchctl models with orchd running reads orchd's store: %s %s" % (out, err))
        st, _, t = post("/v1/completions", {"model": "late", "prompt": "a", "max_tokens": 2})
        rc, out, err = orchctl(o, "pull", "hf:org/slow-GGUF:Q8_0")
        ok, t2 = golden_ok("late")
        check(st == 503 and rc == 0 and ok, "a model failed for want of its file serves once it is pulled: "
              "%d %s / %s" % (st, err.strip(), t2))
        rc, out, err = orchctl(o, "unload", "late")
        time.sleep(0.5)
        rc, out, err = orchctl(o, "rm", "hf:org/slow-GGUF:Q8_0")
        check(rc == 0, "rm after the model that used it is unloaded: %s" % err.strip())
        rc, out, err = orchctl(o, "rm", "hf:org/stories-GGUF:Q8_0")
        check(rc == 1 and "in use by r" in err, "rm of the running model's file: refused: %s" % err.strip())
        rc, out, err = orchctl(o, "load", "g", "hf:org/gated-GGUF:Q8_0", "--pull", "--device", "cpu",
                               "--context", "256", env={"HF_TOKEN": "hf_secret"})
        check(rc == 0 and "ready" in out, "load --pull of a gated repository with orchctl's token: %s %s"
              % (out[-200:], err.strip()[-300:]))
        rc, out, err = orchctl(o, "load", "h", "org/gated-GGUF:Q8_0", "--pull")
        check(rc == 2 and "hf:" in err, "load --pull of something that is no hf: reference: %s" % err.strip())
    finally:
        o.stop()


def test_config_errors(store):
    tmp = tempfile.mkdtemp()
    for body, words in ((section("b", "hf:org/x:Q8_0").replace("model = ", "path = /x\nmodel = "), "both a path"),
                        (section("b", "hf:org/../x"), "not a repository")):
        path = os.path.join(tmp, "c.conf")
        with open(path, "w") as f:
            f.write("[server]\nlisten = 127.0.0.1:1\n" + body)
        p = subprocess.run([BIN + "/orchd", "--config", path, "--check-config"], capture_output=True, text=True)
        check(p.returncode != 0 and words in p.stderr + p.stdout,
              "config %r refused: %s" % (words, (p.stderr + p.stdout).strip()[-300:]))


with HfFixture(REPOS) as hf:
    os.environ["HF_ENDPOINT"] = hf.hub
    os.environ.pop("HF_TOKEN", None)
    root = tempfile.mkdtemp()
    test_served_from_store(hf, os.path.join(root, "s1"))
    test_pull_yes(hf, os.path.join(root, "s2"))
    test_admin_load(hf, os.path.join(root, "s3"))
    test_unload_stops_pull(hf, os.path.join(root, "s4"))
    test_orchctl_pull_through_orchd(hf, os.path.join(root, "s6"))
    test_operator_paths(hf, os.path.join(root, "s7"))
    test_config_errors(os.path.join(root, "s5"))
print("orchd_pull_test: %d passed, %d failed" % (orchd_lib.passed, orchd_lib.failed))
sys.exit(1 if orchd_lib.failed else 0)
