#!/usr/bin/env python3
"""orchd_repro_test - what reproducibility orch guarantees (issue 62, item 7;
docs/models.md, Reproducibility), on the repository's own model: the same seeded
request (temperature 0.9, seed 42, 64 tokens) run twice in one orchd gives the
same tokens, the second time with six other sampled requests batched beside it
(so the step's batch, and the slots, differ); and a request with no seed reports
the seed it drew, which reproduces it."""
import http.client
import json
import os
import sys
import threading

BIN = os.environ["ORCH_BIN"]
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import orchd_lib  # noqa: E402
from orchd_lib import check, post, sse_events  # noqa: E402
MODEL = os.path.join(HERE, "..", "..", "models", "stories260K.gguf")


def complete(body):
    c = orchd_lib.conn(timeout=60)
    c.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    t = json.loads(r.read())
    c.close()
    return t["choices"][0]["text"]


o = orchd_lib.OrchdProc(BIN, "", seed=61,
                        more=lambda tmp: '[model "m"]\npath = %s\nslots = 8\ncontext = 512\nthreads = 1\n' % MODEL)
body = {"model": "m", "prompt": "Once upon a time", "max_tokens": 64, "temperature": 0.9, "seed": 42}
alone = complete(body)
others = []
threads = [threading.Thread(target=lambda i=i: others.append(complete(
    {"model": "m", "prompt": "The dog %d" % i, "max_tokens": 200, "temperature": 1.0, "seed": i})))
    for i in range(6)]
for t in threads:
    t.start()
batched = complete(body)
for t in threads:
    t.join()
check(len(others) == 6, "the six other requests ran")
check(alone == batched and len(alone) > 0, "the same seed, alone and batched: the same text: %r / %r"
      % (alone[:60], batched[:60]))
# no seed: the native API's end event reports the one drawn, and it gives the same tokens again
st, _, t = post("/execute", {"job_id": "r1", "model": "m", "prompt": "Once", "max_tokens": 32,
                             "temperature": 0.9})
evs = sse_events(t)
seed = json.loads(evs[-1]["data"]).get("seed") if evs and evs[-1]["event"] == "end" else None
text1 = "".join(json.loads(e["data"]).get("t", "") for e in evs if e["event"] == "token")
st2, _, t2 = post("/execute", {"job_id": "r2", "model": "m", "prompt": "Once", "max_tokens": 32,
                               "temperature": 0.9, "seed": seed})
text2 = "".join(json.loads(e["data"]).get("t", "") for e in sse_events(t2) if e["event"] == "token")
check(st == 200 and st2 == 200 and seed is not None and text1 == text2 and text1,
      "the seed a request drew reproduces it: seed %r, %r / %r" % (seed, text1[:40], text2[:40]))
o.stop()
print("orchd_repro_test: %d passed, %d failed" % (orchd_lib.passed, orchd_lib.failed))
sys.exit(1 if orchd_lib.failed else 0)
