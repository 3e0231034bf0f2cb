#!/usr/bin/env python3
"""grammar_e2e.py BUILD - decode speed with and without a JSON schema, end to
end through orchd (issue 20): one orchd serving the qwen2.5-0.5b shape
(Q4_K_M, Qwen2's real 151,936-token vocabulary, random weights), one slot,
2 threads; native /execute requests of up to 128 tokens at temperature 1,
unconstrained and with three schemas of increasing size (the ones of
tests/interop/structured_client.mjs). Each request's decode speed is its end
event's tokens_per_second (the steps after the first token). Per schema, the
first request meets an empty mask cache (cold), the later ones a cache the
earlier ones filled (warm, though a random model keeps wandering into new
states: the worst case for the cache). Prints a table for bench/RESULTS.md."""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build")
DATA = os.environ.get("ORCH_TESTDATA", os.path.join(ROOT, "..", "shared", "testdata"))
REPS = int(os.environ.get("REPS", "4"))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
os.environ.setdefault("ORCH_TESTDATA", DATA)
import orchd_lib  # noqa: E402

SMALL = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 20},
                                          "age": {"type": "integer", "minimum": 0, "maximum": 150}},
         "required": ["name", "age"], "additionalProperties": False}
MEDIUM = {"type": "object", "properties": {
    "id": {"type": "string", "format": "uuid"}, "title": {"type": "string", "minLength": 1, "maxLength": 30},
    "tags": {"type": "array", "items": {"enum": ["red", "green", "blue"]}, "minItems": 1, "maxItems": 3},
    "score": {"type": "number", "minimum": -10, "maximum": 10}, "done": {"type": "boolean"},
    "when": {"type": "string", "format": "date"}, "mail": {"type": "string", "format": "email"},
    "code": {"type": "string", "pattern": "^[A-Z]{2}-[0-9]{3}$"}, "kind": {"const": "task"}},
    "required": ["id", "title", "tags", "score", "done", "kind"], "additionalProperties": False}
NODE = {"type": "object", "properties": {"label": {"type": "string", "maxLength": 8},
                                         "children": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 2}},
        "required": ["label"], "additionalProperties": False}
LARGE = {"$defs": {"node": NODE, "addr": {"type": "object", "properties": {
    "street": {"type": "string", "maxLength": 16}, "zip": {"type": "string", "pattern": "^[0-9]{5}$"},
    "country": {"enum": ["FR", "DE", "JP", None, 7]}}, "required": ["street", "zip", "country"],
    "additionalProperties": False}},
    "type": "object", "properties": {"tree": {"$ref": "#/$defs/node"}, "home": {"$ref": "#/$defs/addr"},
                                     "work": {"anyOf": [{"$ref": "#/$defs/addr"}, {"type": "null"}]},
                                     "ratio": {"type": "number", "minimum": 0, "maximum": 1}},
    "required": ["tree", "home", "work", "ratio"], "additionalProperties": False}


def run(i, schema):
    body = {"model": "q", "job_id": "b-%d-%d" % (i, time.monotonic_ns()), "prompt": "Write JSON number %d:" % i,
            "max_tokens": 128, "temperature": 1.0, "seed": i, "metrics_every": 1}
    if schema is not None:
        body["response_format"] = {"type": "json_schema", "json_schema": {"name": "s", "schema": schema}}
    st, _, text = orchd_lib.post("/execute", body)
    evs = orchd_lib.sse_events(text)
    end = [json.loads(e["data"]) for e in evs if e.get("event") == "end"]
    met = [json.loads(e["data"]) for e in evs if e.get("event") == "metrics"]
    if st != 200 or not end:
        raise SystemExit("request failed: %d %s" % (st, text[-500:]))
    if not met:
        raise SystemExit("no metrics events: %s" % text[-500:])
    return met[-1]["tokens_out"], met[-1]["tokens_per_second"]


def main():
    tmp = tempfile.mkdtemp()
    model = os.path.join(tmp, "q.gguf")
    subprocess.run([BUILD + "/bin/orch-synth", "--preset", "qwen2.5-0.5b", "--quant", "Q4_K_M", "--seed", "1",
                    "--vocab", os.path.join(DATA, "vocab", "ggml-vocab-qwen2.gguf"), "-o", model],
                   check=True, capture_output=True)
    more = '[model "q"]\npath = %s\ndevice = cpu\nslots = 1\nthreads = 2\ncontext = 1024\n' % model
    o = orchd_lib.OrchdProc(BUILD + "/bin", seed=71, ready_s=120, more=lambda t: more)
    rows = []
    try:
        for name, schema in (("none", None), ("small", SMALL), ("medium", MEDIUM), ("large", LARGE)):
            speeds, toks = [], []
            for i in range(REPS):
                n, tps = run(i, schema)
                speeds.append(tps)
                toks.append(n)
            rows.append((name, speeds, toks))
            print("%-7s tokens %s tok/s %s" % (name, toks, ["%.1f" % s for s in speeds]), flush=True)
    finally:
        o.stop()
    base = statistics.mean(rows[0][1])
    print("\n| schema | tokens out | cold tok/s | warm tok/s (mean) | vs unconstrained (warm) |")
    print("|---|---|---:|---:|---:|")
    for name, speeds, toks in rows:
        warm = statistics.mean(speeds[1:]) if len(speeds) > 1 else speeds[0]
        print("| %s | %s | %.1f | %.1f | %+.1f %% |" % (name, " ".join(map(str, toks)), speeds[0], warm,
                                                      100.0 * (warm - base) / base))


if __name__ == "__main__":
    main()
