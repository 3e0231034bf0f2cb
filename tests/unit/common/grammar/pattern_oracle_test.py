#!/usr/bin/env python3
"""pattern_oracle_test.py DRIVER - string patterns, with and without lengths, against
Python's re as the oracle (issue 56): random patterns of the subset orch takes (classes,
groups, alternation, repeats, '^'/'$' anywhere), random strings; every string the
grammar takes must match the pattern (searched, '$' as the string's end) within
minLength..maxLength, and every such string must be taken. Seeded: the same cases on
every run. Strings are at most 9 characters, so the 32-character prefix orch allows
before an unanchored match never matters."""
import json
import random
import re
import subprocess
import sys

ATOMS = ['a', 'b', '.', '[a-c]', '[^a]', 'x', '(a|b)', '(?:ab|c)', '^', '$', '"', '\\\\', 'é', '-']
QUANTS = ['', '', '', '*', '+', '?', '{2}', '{1,3}', '{0,2}']
ALPHA = ['a', 'b', 'c', 'x', '1', 'é', '"', '\\', '-', '_']


def pattern(rng, depth=0):
    out = ''
    for _ in range(rng.randint(1, 4)):
        if depth < 2 and rng.random() < 0.2:
            out += '(' + pattern(rng, depth + 1)
            out += ('|' + pattern(rng, depth + 1) if rng.random() < 0.5 else '') + ')'
        else:
            out += rng.choice(ATOMS)
        out += rng.choice(QUANTS)
    return out


def main():
    rng = random.Random(11)
    cases = []
    for _ in range(int(sys.argv[2]) if len(sys.argv) > 2 else 1500):
        p = pattern(rng)
        p = ('^' if rng.random() < 0.3 else '') + p + ('$' if rng.random() < 0.3 else '')
        s = {"type": "string", "pattern": p}
        if rng.random() < 0.8:
            s["minLength"] = rng.randint(0, 5)
        if rng.random() < 0.8:
            s["maxLength"] = s.get("minLength", 0) + rng.randint(0, 6)
        strs = [''.join(rng.choice(ALPHA) for _ in range(rng.randint(0, 9))) for _ in range(30)]
        cases.append((s, strs))
    text = ''.join(json.dumps(s) + '\t' + '\t'.join(json.dumps(x, ensure_ascii=False) for x in strs)
                   + '\n' for s, strs in cases)
    out = subprocess.run([sys.argv[1]], input=text.encode(), stdout=subprocess.PIPE,
                         check=True).stdout.decode().splitlines()
    assert len(out) == len(cases), "the driver answered %d of %d" % (len(out), len(cases))
    taken = checked = bad = 0
    for (s, strs), bits in zip(cases, out):
        if bits == 'R':
            continue
        taken += 1
        try:  # ECMAScript's '$' is the end of the string; Python's also before a final \n
            rx = re.compile(s['pattern'].replace('$', r'(?!(?s:.))'))
        except re.error as e:
            bad += 1
            print("FAIL: orch takes a pattern Python refuses (%s): %s" % (e, json.dumps(s)))
            continue
        lo, hi = s.get('minLength', 0), s.get('maxLength', 1 << 30)
        for x, bit in zip(strs, bits):
            want = bool(rx.search(x)) and lo <= len(x) <= hi
            checked += 1
            if want != (bit == '1'):
                bad += 1
                if bad <= 10:
                    print("FAIL: %s on %s: want %s" % (json.dumps(s), json.dumps(x, ensure_ascii=False), want))
    print("%d schemas, %d taken, %d strings checked against Python's re, %d wrong"
          % (len(cases), taken, checked, bad))
    return 1 if bad or taken < len(cases) // 4 else 0


if __name__ == '__main__':
    sys.exit(main())
