#!/usr/bin/env python3
"""ncu_sum.py - sums an `ncu --csv --page raw` log of orch-gpu-bench --profile
per phase and kernel name: launches, total and mean microseconds, share.

The bench profiles three phases in order (4 decode steps at batch 1, 4 at
batch 8, one 512-token prefill); the rows are split between them by the
position of the first launch of each step, found by the kernel that starts
a step (the embedding lookup)."""
import csv
import sys
from collections import defaultdict


def main(path):
    rows = []
    with open(path, newline="") as f:
        lines = [l for l in f if l.startswith('"')]
    rd = csv.DictReader(lines)
    for r in rd:
        name = r.get("Kernel Name") or r.get("Function Name") or "?"
        t = r.get("gpu__time_duration.sum", "")
        try:
            v = float(t.replace(",", ""))
        except ValueError:
            continue  # the units row
        short = name.replace("(anonymous namespace)::", "").replace("void ", "")
        rows.append((short.split("(")[0].strip(), name, v))
    # steps start at the embedding kernel
    starts = [i for i, r in enumerate(rows) if "embed_kernel" in r[1]]
    phases = [("decode b1", 4), ("decode b8", 4), ("prefill 512", 1)]
    k = 0
    bounds = []
    for ph, n in phases:
        a = starts[k] if k < len(starts) else len(rows)
        k += n
        b = starts[k] if k < len(starts) else len(rows)
        bounds.append((ph, n, a, b))
    for ph, n, a, b in bounds:
        agg = defaultdict(lambda: [0, 0.0])
        for short, full, v in rows[a:b]:
            key = short[:90]
            agg[key][0] += 1
            agg[key][1] += v
        tot = sum(x[1] for x in agg.values())
        print(f"  {ph}: {b - a} launches in {n} steps, {tot / n / 1e3:.1f} us of kernels a step")
        for key, (c, v) in sorted(agg.items(), key=lambda kv: -kv[1][1])[:14]:
            print(f"    {v / n / 1e3:9.1f} us/step {c // n:5d} launches  {100 * v / tot:5.1f}%  {key}")


if __name__ == "__main__":
    main(sys.argv[1])
