#!/usr/bin/env python3
"""arch_check.py SRC BUILD - the module graph's circles, held to a ratchet (issue 53).

Two graphs, each split into strongly connected components (a component of more
than one file is an import circle):

- includes: a module is NAME.c with its NAME.h anywhere under a folder (orchd's
  layers are its subfolders); A -> B when A's .c or .h includes B's header by name;
- symbols: a module is one object file of a library (nm); A -> B when A uses a
  function or variable B defines. This one sees calls that go through one shared
  internal header (cuda/cuda_int.h), which the include graph cannot.

Issue 53's goal is no circle longer than two files anywhere, and libevent's
headers only under orchd's HTTP edge and main.c (and leaf/loop.c, the one door
to the loop below it); the core's and the API's unit tests build without it.
LIMITS holds each graph at its size: a change may shrink a circle (lower the
limit then, in the same commit), never grow one.
Prints every circle over two files with its edges; exit 1 when a limit is passed.
Also: orchd's folders are layers (ORCHD_LAYERS, lowest first), and no file
includes a header of a higher one.
"""
import os
import re
import subprocess
import sys

# (graph, what) -> the largest circle allowed today; the goal is 2 everywhere
LIMITS = {
    ("include", "supervisor/orchd"): 2,
    ("include", "cuda"): 2,
    ("include", "common/grammar"): 2,
    ("symbol", "orchd"): 2,
    ("symbol", "orch-cuda"): 2,
    ("symbol", "orch_grammar"): 2,
}
# where libevent may be included in orchd: the HTTP edge (supervisor/orchd itself, with
# main.c) and leaf/loop.c (the timers and watches the layers below take through loop.h)
LIBEVENT_OK = {"leaf/loop.c"}
# the orchd unit tests that drive a real evhttp (the edge's own); the others build without it
LIBEVENT_TESTS = {"sse_test.c"}
# orchd's folders, lowest first ("": supervisor/orchd itself, the HTTP edge and main.c)
ORCHD_LAYERS = ["leaf", "core", "api", ""]
INCLUDE = re.compile(r'\s*#\s*include\s+"([^"]+)"')


def components(graph):
    """Tarjan's strongly connected components of {node: set(node)}."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def sources(folder):
    """{module: [paths]} of the .c and .h files under @folder (its subfolders too)."""
    out = {}
    for top, _, names in os.walk(folder):
        for f in names:
            if f.endswith((".c", ".h")):
                out.setdefault(f.rsplit(".", 1)[0], []).append(os.path.join(top, f))
    return out


def include_graph(folder):
    files = sources(folder)
    graph = {m: set() for m in files}
    for m, paths in files.items():
        for path in paths:
            with open(path, encoding="utf-8") as fh:
                for line in fh:
                    r = INCLUDE.match(line)
                    if r and "/" not in r.group(1):
                        t = r.group(1).rsplit(".", 1)[0]
                        if t in files and t != m:
                            graph[m].add(t)
    return graph


def layers_ok(src):
    """orchd's folders are its layers: a file includes headers of its own layer or lower."""
    orchd = os.path.join(src, "supervisor/orchd")
    files = sources(orchd)
    rank = {}
    for m, paths in files.items():
        rel = os.path.relpath(os.path.dirname(paths[0]), orchd)
        rank[m] = ORCHD_LAYERS.index(rel if rel != "." else "")
    graph, ok = include_graph(orchd), True
    for m in sorted(graph):
        for t in sorted(graph[m]):
            if rank[t] > rank[m]:
                print("FAIL: %s (%s/) includes %s.h of a higher layer (%s/)" %
                      (m, ORCHD_LAYERS[rank[m]] or "orchd", t, ORCHD_LAYERS[rank[t]] or "orchd"))
                ok = False
    print("orchd's layers (%s): %s" % (" < ".join(x or "orchd/" for x in ORCHD_LAYERS),
                                        "each includes only its own or lower" if ok else "FAILED"))
    return ok


def symbol_graph(objects):
    defs, uses = {}, {}
    for o in objects:
        name = os.path.basename(o).split(".")[0]
        out = subprocess.run(["nm", "-P", o], capture_output=True, text=True, check=True).stdout
        d, u = set(), set()
        for line in out.splitlines():
            p = line.split()
            if len(p) >= 2:
                if p[1] in "TDBRC":
                    d.add(p[0])
                elif p[1] == "U":
                    u.add(p[0])
        defs[name], uses[name] = d, u
    owner = {s: n for n, d in defs.items() for s in d}
    return {n: {owner[s] for s in u if s in owner and owner[s] != n} for n, u in uses.items()}


def objects_of(build, targets):
    out = []
    for t in targets:
        for top, _, names in os.walk(build):
            if top.endswith("/" + t + ".dir") or ("/" + t + ".dir/") in top + "/":
                out += [os.path.join(top, n) for n in names if n.endswith((".c.o", ".cu.o"))]
    return sorted(set(out))


def report(graph_name, what, graph):
    worst = 1
    for comp in components(graph):
        worst = max(worst, len(comp))
        if len(comp) > 2:
            print("%s circle in %s (%d): %s" % (graph_name, what, len(comp), " ".join(comp)))
            for v in comp:
                print("    %s -> %s" % (v, " ".join(sorted(w for w in graph[v] if w in comp))))
    limit = LIMITS[(graph_name, what)]
    print("%s graph of %s: largest circle %d (limit %d, goal 2)" % (graph_name, what, worst, limit))
    if worst > limit:
        print("FAIL: %s's %s circle grew past %d" % (what, graph_name, limit))
        return False
    if worst < limit and limit > 2:
        print("note: %s's %s circle is down to %d: lower LIMITS to hold it there" % (what, graph_name, worst))
    return True


def main():
    src, build = sys.argv[1], sys.argv[2]
    ok = True
    for what in ("supervisor/orchd", "cuda", "common/grammar"):
        ok &= report("include", what, include_graph(os.path.join(src, what)))
    ok &= layers_ok(src)
    for what, targets in (("orchd", ["orchd_leaf", "orchd_core", "orchd_api", "orchd_http"]),
                          ("orch-cuda", ["orch-cuda"]), ("orch_grammar", ["orch_grammar"])):
        objs = objects_of(build, targets)
        if not objs:
            print("symbol graph of %s: not built here (%s): left out" % (what, ", ".join(targets)))
            continue
        ok &= report("symbol", what, symbol_graph(objs))
    root = os.path.join(src, "supervisor/orchd")
    n = 0
    for paths in sources(root).values():
        for path in paths:
            rel = os.path.relpath(path, root)
            with open(path, encoding="utf-8") as fh:
                if not re.search(r'#\s*include\s+<event2/', fh.read()):
                    continue
            n += 1
            if os.path.dirname(rel) and rel not in LIBEVENT_OK:
                print("FAIL: %s includes libevent: below the HTTP edge only loop.h's timers "
                      "and watches may use the loop" % rel)
                ok = False
    print("libevent in orchd: %d files, the HTTP edge's and leaf/loop.c" % n)
    tests = os.path.join(src, "tests/unit/supervisor")
    for f in sorted(os.listdir(tests)):
        if f.endswith(".c") and f not in LIBEVENT_TESTS:
            with open(os.path.join(tests, f), encoding="utf-8") as fh:
                if re.search(r'#\s*include\s+<event2/', fh.read()):
                    print("FAIL: tests/unit/supervisor/%s includes libevent: the core's and "
                          "the API's tests build without it (leaf/loop.h turns the loop)" % f)
                    ok = False
    print("arch_check: %s" % ("ok" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
