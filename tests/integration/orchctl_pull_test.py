#!/usr/bin/env python3
"""orchctl_pull_test - the model store and `orchctl pull` (issue 21) against
hf_fixture, a local Hugging Face with two hosts (never the network).

- pull hf:ORG/REPO:QUANT: the file of that quant (not the others, not an
  mmproj), checked, in the store; a second pull fetches nothing; orchd
  serves the path it prints and answers with the golden text;
- a transfer cut mid-file: resumed in the same pull with a Range request for
  the rest only; a pull killed mid-file: the next one resumes from the
  partial file;
- a file whose bytes are not the listed SHA-256: refused, the partial
  removed, nothing in the index;
- 404s in words (no such repository, revision, file), a quant the
  repository lacks (the ones it has listed), several files of one quant;
- a gated repository: 401 without a token says to set HF_TOKEN; a wrong
  token 403; the right one (HF_TOKEN or --token-file) pulls;
- two pulls of one file at once: one download, both succeed;
- a write that fails (RLIMIT_FSIZE: an injected disk full): a clear error,
  the partial kept for a resume;
- a split GGUF: every part, part 1 first; a revision pins the commit;
- offline (HF_HUB_OFFLINE=1, --offline): what the store has, else an error;
- models (text and --json) and rm: refused while orchd serves the file,
  then removed with its blob and links; a link another reference uses stays;
- a listing in pages (the Link header's next page, followed);
- hostile servers: a listing that is not a list, more bytes than listed,
  Range ignored after a cut (the file starts over), an X-Repo-Commit that is
  no commit id (refused before any download); a token with a line break."""
import json
import os
import resource
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
from hf_fixture import HfFixture  # noqa: E402
from orchd_lib import check, post  # noqa: E402

DATA = orchd_lib.testdata("models/golden-stories260K.json")
STORIES = os.path.join(HERE, "..", "..", "models", "stories260K.gguf")
GOLDEN = json.load(open(os.path.join(DATA, "models", "golden-stories260K.json")))["cases"][0]
MODEL = open(STORIES, "rb").read()
SMALL = MODEL[:200000]

REPOS = {
    "org/stories-GGUF": {"files": {"stories-Q8_0.gguf": MODEL, "stories-F32.gguf": SMALL + b"f32",
                                   "mmproj-stories-Q8_0.gguf": b"proj", "README.md": b"# stories"},
                         "faults": {"stories-Q8_0.gguf": {"cut_after": 400000}}},
    "org/bad": {"files": {"bad-Q4_K_M.gguf": SMALL}, "faults": {"bad-Q4_K_M.gguf": {"corrupt": True}}},
    # distinct bytes in each repository: the fixture serves a blob by its SHA-256
    "org/slow": {"files": {"slow-Q8_0.gguf": MODEL + b"s"}, "faults": {"slow-Q8_0.gguf": {"slow": 0.05}}},
    "org/twice": {"files": {"t-Q8_0.gguf": MODEL + b"t"}, "faults": {"t-Q8_0.gguf": {"slow": 0.01}}},
    "org/gated": {"files": {"g-Q8_0.gguf": SMALL + b"gated"}, "gated": "hf_secret"},
    "org/two": {"files": {"a-Q4_0.gguf": SMALL + b"a", "b-Q4_0.gguf": SMALL + b"b"}},
    "org/split": {"files": {"big-Q4_K_M-00001-of-00002.gguf": SMALL + b"1",
                            "big-Q4_K_M-00002-of-00002.gguf": SMALL + b"2"},
                  "commit": "c" * 40},
    "org/full": {"files": {"full-Q8_0.gguf": MODEL + b"f"}},
    # hostile or broken servers (a review's attack cases)
    "org/notlist": {"files": {"n-Q8_0.gguf": SMALL + b"n"}, "listing_body": b'{"a": 1}'},
    "org/more": {"files": {"m-Q8_0.gguf": SMALL + b"m"}, "faults": {"m-Q8_0.gguf": {"extra": 5000000}}},
    "org/norange": {"files": {"r-Q8_0.gguf": MODEL + b"r"},
                    "faults": {"r-Q8_0.gguf": {"cut_after": 300000, "no_range": True}}},
    "org/badcommit": {"files": {"c-Q8_0.gguf": SMALL + b"c"}, "commit": "../../../tmp/x"},
    "org/shared": {"files": {"sh-Q8_0.gguf": SMALL + b"sh"}},
    # a listing in pages of 2 (the real API pages its listing): the file is on the last
    "org/paged": {"files": dict([("a%d-F16.gguf" % i, SMALL + bytes([i])) for i in range(5)] +
                                [("z-Q8_0.gguf", SMALL + b"z")]), "page": 2},
}


def orchctl(store, *args, env=None, preexec=None, timeout=120):
    e = dict(os.environ, **(env or {}))
    e.pop("HF_TOKEN", None) if env is None or "HF_TOKEN" not in env else None
    p = subprocess.run([BIN + "/orchctl"] + list(args) + ["--model-dir", store], env=e, capture_output=True,
                       text=True, timeout=timeout, preexec_fn=preexec)
    return p.returncode, p.stdout, p.stderr


def blobs(store, suffix=""):
    d = os.path.join(store, "blobs")
    return sorted(f for f in os.listdir(d) if f.endswith(suffix) and (suffix or "." not in f))


def test_pull_and_serve(hf, store):
    env = {"HF_ENDPOINT": hf.hub}
    rc, out, err = orchctl(store, "pull", "hf:org/stories-GGUF:q8_0", env=env)
    path = out.split("path = ")[-1].rstrip(")\n") if rc == 0 else ""
    check(rc == 0 and os.path.realpath(path) == os.path.join(store, "blobs", "sha256-" + hf.repos[
        "org/stories-GGUF"]["sha"]["stories-Q8_0.gguf"]), "pull: the Q8_0 file, in the store: %s %s" % (out, err))
    check(hf.ranges == ["bytes=400000-"], "the cut transfer resumed for the rest only: %r" % hf.ranges)
    check(len(blobs(store)) == 1 and os.path.exists(os.path.join(store, "blobs", blobs(store)[0] + ".sha256")),
          "one blob (not F32, not the mmproj), its digest cache beside it: %r" % os.listdir(os.path.join(store, "blobs")))
    n = dict(hf.requests)
    rc, out2, err2 = orchctl(store, "pull", "org/stories-GGUF:Q8_0", env=env)  # hf: may be left out
    cdn = [k for k in hf.requests if k.startswith("/blobs/") and hf.requests[k] != n.get(k)]
    check(rc == 0 and not cdn, "a second pull fetches nothing: %s %s" % (err2, cdn))
    o = orchd_lib.OrchdProc(BIN, seed=53, ready_s=60, more=lambda t: '[model "s"]\npath = %s\ndevice = cpu\n'
                            'threads = 1\ncontext = 256\n' % path)
    try:
        st, _, t = post("/v1/completions", {"model": "s", "prompt": GOLDEN["prompt"], "max_tokens": 8,
                                            "temperature": 0})
        check(st == 200 and GOLDEN["text"].startswith(json.loads(t)["choices"][0]["text"]),
              "orchd serves the pulled file: %s" % t[:200])
        rc, out, err = orchctl(store, "models", env={"ORCHD_SOCKET": os.path.join(o.tmp, "orchd.sock")})
        check(rc == 0 and "hf:org/stories-GGUF:Q8_0" in out and " s\n" in out and "llama" in out,
              "models: the reference, its architecture, used by s: %s %s" % (out, err))
        rc, out, err = orchctl(store, "rm", "hf:org/stories-GGUF:Q8_0",
                               env={"ORCHD_SOCKET": os.path.join(o.tmp, "orchd.sock")})
        check(rc == 1 and "in use by s" in err and len(blobs(store)) == 1, "rm refused while s uses it: %s" % err)
    finally:
        o.stop()
    rc, out, err = orchctl(store, "models", "--json", env={"ORCHD_SOCKET": "/nonexistent"})
    m = json.loads(out) if rc == 0 else []
    link = m[0]["path"] if m else ""
    check(os.path.exists(link + ".sha256"), "the worker found the digest beside the link: not hashed again")
    check(len(m) == 1 and m[0]["ref"] == "hf:org/stories-GGUF:Q8_0" and m[0]["used_by"] == [] and
          m[0]["files"][0]["size"] == len(MODEL), "models --json: %s" % out[:300])
    rc, out, err = orchctl(store, "rm", "hf:org/stories-GGUF:Q8_0", env={"ORCHD_SOCKET": "/nonexistent"})
    check(rc == 0 and blobs(store) == [] and not os.listdir(os.path.join(store, "snapshots")),
          "rm: the blob and its links gone: %s %s" % (err, os.listdir(os.path.join(store, "snapshots"))))


def test_refusals(hf, store):
    env = {"HF_ENDPOINT": hf.hub}
    cases = [("hf:org/bad:Q4_K_M", "not the file listed"), ("hf:org/nope:Q8_0", "no such repository"),
             ("hf:org/stories-GGUF:Q8_0@v9", "no such revision"),
             ("hf:org/stories-GGUF/missing-Q8_0.gguf", "has no file missing-Q8_0.gguf"),
             ("hf:org/stories-GGUF:Q4_K_M", "it has: F32, Q8_0"),
             ("hf:org/two:Q4_0", "more than one Q4_0"),
             ("hf:org/gated:Q8_0", "a token that may read it is needed (HF_TOKEN")]
    for ref, words in cases:
        rc, out, err = orchctl(store, "pull", ref, env=env)
        check(rc == 1 and words in err, "%s refused (%s): %s" % (ref, words, err.strip()))
    check(not blobs(store, ".partial") and not blobs(store), "nothing left behind: %r" % os.listdir(store + "/blobs"))
    for bad in ("orgx", "hf:org", "hf:org/../x", "hf:org/x/../../etc/passwd.gguf", "hf:org/x:Q4 K", "hf:org/x@a/b"):
        rc, out, err = orchctl(store, "pull", bad, env=env)
        check(rc == 2 and "orchctl: pull:" in err, "a malformed reference %r: %s" % (bad, err.strip()))
    rc, out, err = orchctl(store, "pull", "hf:org/gated:Q8_0", env=dict(env, HF_TOKEN="hf_wrong"))
    check(rc == 1 and "403" in err and "may not read it" in err, "a wrong token: %s" % err.strip())
    tok = os.path.join(store, "..", "token")
    with open(tok, "w") as f:
        f.write("hf_secret\n")
    rc, out, err = orchctl(store, "pull", "hf:org/gated:Q8_0", "--token-file", tok, env=env)
    check(rc == 0, "the right token (--token-file) pulls: %s" % err.strip())
    rc, out, err = orchctl(store, "pull", "hf:org/gated:Q8_0", env=dict(env, HF_TOKEN="hf_secret"))
    check(rc == 0, "and HF_TOKEN: %s" % err.strip())


def test_resume_after_kill(hf, store):
    env = dict(os.environ, HF_ENDPOINT=hf.hub)
    p = subprocess.Popen([BIN + "/orchctl", "pull", "hf:org/slow:Q8_0", "--model-dir", store], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    part = os.path.join(store, "blobs", "sha256-%s.partial" % hf.repos["org/slow"]["sha"]["slow-Q8_0.gguf"])
    for _ in range(200):
        if os.path.exists(part) and os.path.getsize(part) > 200000:
            break
        time.sleep(0.05)
    p.send_signal(signal.SIGKILL)
    p.wait()
    have = os.path.getsize(part) if os.path.exists(part) else 0
    hf.repos["org/slow"]["faults"] = {}
    hf.ranges.clear()
    rc, out, err = orchctl(store, "pull", "hf:org/slow:Q8_0", env={"HF_ENDPOINT": hf.hub})
    check(have > 0 and rc == 0 and hf.ranges == ["bytes=%d-" % have] and not os.path.exists(part),
          "a killed pull resumes from its %d bytes: %r %s" % (have, hf.ranges, err.strip()[-200:]))


def test_two_at_once(hf, store):
    sha = hf.repos["org/twice"]["sha"]["t-Q8_0.gguf"]
    before = hf.requests.get("/blobs/" + sha, 0)
    res = []

    def one():
        res.append(orchctl(store, "pull", "hf:org/twice:Q8_0", env={"HF_ENDPOINT": hf.hub}))
    ts = [threading.Thread(target=one) for _ in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    check(len(res) == 2 and all(r[0] == 0 for r in res) and hf.requests.get("/blobs/" + sha, 0) - before == 1,
          "two pulls of one file: one download, both done: %r" % ([r[2][-120:] for r in res],))


def test_disk_full(hf, store):
    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (300000, 300000))
    rc, out, err = orchctl(store, "pull", "hf:org/full:Q8_0", env={"HF_ENDPOINT": hf.hub}, preexec=limit)
    part = os.path.join(store, "blobs", "sha256-%s.partial" % hf.repos["org/full"]["sha"]["full-Q8_0.gguf"])
    check(rc == 1 and "cannot write" in err and "pull again to resume" in err and
          os.path.getsize(part) == 300000, "a failed write (disk full) says so, keeps the partial: %s" % err.strip())
    rc, out, err = orchctl(store, "pull", "hf:org/full:Q8_0", env={"HF_ENDPOINT": hf.hub})
    check(rc == 0 and not os.path.exists(part), "then resumes: %s" % err.strip()[-200:])


def test_split_rev_offline(hf, store):
    rc, out, err = orchctl(store, "pull", "hf:org/split@" + "c" * 40, "--json", env={"HF_ENDPOINT": hf.hub})
    o = json.loads(out) if rc == 0 else {}
    check(rc == 0 and [f["path"] for f in o.get("files", [])] == ["big-Q4_K_M-00001-of-00002.gguf",
                                                                  "big-Q4_K_M-00002-of-00002.gguf"] and
          o["commit"] == "c" * 40 and o["ref"] == "hf:org/split:Q4_K_M@" + "c" * 40 and
          o["path"].endswith("/" + "c" * 40 + "/big-Q4_K_M-00001-of-00002.gguf") and
          os.path.exists(o["path"].replace("00001-of", "00002-of")),
          "a split GGUF at a commit: both parts, side by side: %s %s" % (out[:400], err))
    rc, out, err = orchctl(store, "pull", "hf:org/split@" + "c" * 40, env={"HF_ENDPOINT": "http://127.0.0.1:9",
                                                                            "HF_HUB_OFFLINE": "1"})
    check(rc == 0, "offline: what the store has: %s" % err.strip())
    rc, out, err = orchctl(store, "pull", "hf:org/split:Q8_0", "--offline", env={"HF_ENDPOINT": hf.hub})
    check(rc == 1 and "offline" in err, "offline: not in the store is an error: %s" % err.strip())


def test_hostile(hf, store):
    env = {"HF_ENDPOINT": hf.hub}
    rc, out, err = orchctl(store, "pull", "hf:org/paged:Q8_0", env=env)
    pages = sum(v for k, v in hf.requests.items() if k.startswith("/api/models/org/paged/tree/"))
    check(rc == 0 and pages == 3, "a listing in 3 pages, followed to the file on the last: %d %s" % (pages, err))
    rc, out, err = orchctl(store, "pull", "hf:org/notlist:Q8_0", env=env)
    check(rc == 1 and "not a file listing" in err, "a listing that is JSON but not a list: %s" % err.strip())
    rc, out, err = orchctl(store, "pull", "hf:org/more:Q8_0", env=env)
    sha = hf.repos["org/more"]["sha"]["m-Q8_0.gguf"]
    part = os.path.join(store, "blobs", "sha256-%s.partial" % sha)
    check(rc == 1 and "sent more than" in err and (not os.path.exists(part) or os.path.getsize(part) == 0),
          "a server that sends more than listed: stopped, nothing kept: %s" % err.strip())
    rc, out, err = orchctl(store, "pull", "hf:org/norange:Q8_0", env=env)
    check(rc == 0, "a server that ignores Range after a cut: the file starts over and completes: %s"
          % err.strip()[-300:])
    n = sum(v for k, v in hf.requests.items() if k.startswith("/blobs/"))
    rc, out, err = orchctl(store, "pull", "hf:org/badcommit:Q8_0", env=env)
    check(rc == 1 and "invalid commit id" in err and sum(v for k, v in hf.requests.items()
                                                          if k.startswith("/blobs/")) == n,
          "an X-Repo-Commit that is no commit: refused before any download: %s" % err.strip())
    rc, out, err = orchctl(store, "pull", "hf:org/shared:Q8_0", env=dict(env, HF_TOKEN="hf_a\nX-Injected: 1"))
    check(rc == 1 and "token" in err, "a token with a line break is refused: %s" % err.strip())
    # two references to one file: removing one keeps the other's link
    for ref in ("hf:org/shared:Q8_0", "hf:org/shared/sh-Q8_0.gguf"):
        rc, out, err = orchctl(store, "pull", ref, env=env)
    rc, out, err = orchctl(store, "rm", "hf:org/shared:Q8_0", env={"ORCHD_SOCKET": "/nonexistent"})
    rc2, out2, err2 = orchctl(store, "models", "--json", env={"ORCHD_SOCKET": "/nonexistent"})
    left = [m for m in json.loads(out2) if m["ref"] == "hf:org/shared/sh-Q8_0.gguf"] if rc2 == 0 else []
    check(rc == 0 and left and os.path.exists(left[0]["path"]),
          "rm of one of two references to a file keeps the other's path: %r" % left)
    # offline, with the file gone from under the index
    for f in os.listdir(os.path.join(store, "blobs")):
        if f.endswith(hf.repos["org/shared"]["sha"]["sh-Q8_0.gguf"]):
            os.unlink(os.path.join(store, "blobs", f))
    rc, out, err = orchctl(store, "pull", "hf:org/shared/sh-Q8_0.gguf", "--offline", env=env)
    check(rc == 1 and "is gone" in err, "offline, a reference whose file is gone: %s" % err.strip())


with HfFixture(REPOS) as hf:
    root = tempfile.mkdtemp()
    for i, t in enumerate([test_pull_and_serve, test_refusals, test_resume_after_kill, test_two_at_once,
                           test_disk_full, test_split_rev_offline, test_hostile]):
        store = os.path.join(root, "store%d" % i)
        t(hf, store)
print("orchctl_pull_test: %d passed, %d failed" % (orchd_lib.passed, orchd_lib.failed))
sys.exit(1 if orchd_lib.failed else 0)
