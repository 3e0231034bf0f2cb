#!/usr/bin/env python3
"""schema_sample_speed.py BUILD - decode speed with real-world schemas vs none (issue 56):
grammar_e2e.py's setup (orchd, the qwen2.5-0.5b shape with Qwen2's vocabulary, random
weights, one slot, 2 threads, native /execute of up to 128 tokens at temperature 1), with
three schemas of the sample in tests/data/schemas, one per split, REPS requests each.
Prints a table for bench/RESULTS.md (warm = the mean after the first request)."""
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import grammar_e2e as e2e  # noqa: E402

SAMPLE = os.path.join(HERE, "..", "tests", "data", "schemas")
PICKS = ("tooling/schematics-angular-component-schema.json", "github/issues-labeled.json",
         "api/openapi-schemas-v1.2-infoObject.json")


def main():
    tmp = tempfile.mkdtemp()
    model = os.path.join(tmp, "q.gguf")
    subprocess.run([e2e.BUILD + "/bin/orch-synth", "--preset", "qwen2.5-0.5b", "--quant", "Q4_K_M", "--seed",
                    "1", "--vocab", os.path.join(e2e.DATA, "vocab", "ggml-vocab-qwen2.gguf"), "-o", model],
                   check=True, capture_output=True)
    more = '[model "q"]\npath = %s\ndevice = cpu\nslots = 1\nthreads = 2\ncontext = 1024\n' % model
    o = e2e.orchd_lib.OrchdProc(e2e.BUILD + "/bin", seed=72, ready_s=120, more=lambda t: more)
    rows = []
    try:
        for name in ("none",) + PICKS:
            schema = None
            if name != "none":
                with open(os.path.join(SAMPLE, name)) as f:
                    schema = json.load(f)
            got = [e2e.run(i, schema) for i in range(e2e.REPS)]
            rows.append((name, [t for _, t in got], [n for n, _ in got]))
            print("%-50s tokens %s tok/s %s" % (name, rows[-1][2], ["%.1f" % t for _, t in got]), flush=True)
    finally:
        o.stop()
    base = statistics.mean(rows[0][1])
    print("\n| schema | tokens out | cold tok/s | warm tok/s (mean) | vs none (warm) |")
    print("|---|---|---:|---:|---:|")
    for name, speeds, toks in rows:
        warm = statistics.mean(speeds[1:]) if len(speeds) > 1 else speeds[0]
        print("| %s | %s | %.1f | %.1f | %.2f× |" % (name, " ".join(map(str, toks)), speeds[0], warm, warm / base))


if __name__ == "__main__":
    main()
