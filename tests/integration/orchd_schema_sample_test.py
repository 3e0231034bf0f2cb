#!/usr/bin/env python3
"""orchd_schema_sample_test - structured output under real-world schemas (issue 56):
the sample of tests/data/schemas (SOURCE.md there) through orchd, on stories260K and on a
random-weight tiny-qwen2 (neither knows JSON: a valid output is the grammar's doing).

A deterministic subset of the schemas orchd accepts, spread over the splits (every
accepted api schema; evenly spaced ones of the others, PER_SPLIT each), each asked
for GENS outputs with response_format json_schema; every finished output (finish_reason
"stop"; one that hit max_tokens is not finished and is only counted) is validated by
two validators that are not orch's:

- ajv with ajv-formats (tests/interop/schema_validate.mjs), its class by the schema's
  $schema, strict mode on; a schema that is not strict-clean (keywords ajv does not
  know, as real schemas have) is validated with strict off, and the test prints which;
  a schema ajv cannot compile at all for a reason of its own (AJV_CANNOT, named with it)
  is left to python-jsonschema;
- python-jsonschema (Debian's python3-jsonschema), the validator class by $schema, with
  its format checker.

Any invalid output fails the test, printing the schema, the output and the errors."""
import json
import os
import subprocess
import sys
import tempfile
import threading

BIN = os.environ["ORCH_BIN"]
HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLE = os.path.join(HERE, "..", "data", "schemas")
STORIES = os.path.join(HERE, "..", "..", "models", "stories260K.gguf")
# each schema is asked of both: stories260K (the repository's model: context 2048, a
# 512-token vocabulary, so long payloads do not finish) and a synthesized tiny-qwen2 at
# context 16384 (Qwen2's vocabulary: most of them finish)
MODELS = ("stories", "tiny")
INTEROP = os.path.join(HERE, "..", "interop")
PER_SPLIT = int(os.environ.get("ORCH_SAMPLE_PER_SPLIT", "28"))
GENS = int(os.environ.get("ORCH_SAMPLE_GENS", "1"))
MAX_TOKENS = int(os.environ.get("ORCH_SAMPLE_MAX_TOKENS", "4000"))
ROOM = {"stories": 1900, "tiny": MAX_TOKENS}  # max_tokens: within each one's context
sys.path.insert(0, HERE)
import orchd_lib  # noqa: E402
from orchd_lib import OrchdProc, check, post  # noqa: E402

try:
    import jsonschema
except ImportError:  # a Python of its own (pyenv) beside Debian's package
    sys.path.append("/usr/lib/python3/dist-packages")
    import jsonschema


def models(tmp):
    subprocess.run([BIN + "/orch-synth", "--preset", "tiny-qwen2", "--quant", "Q8_0", "--seed", "9",
                    "-o", os.path.join(tmp, "tiny.gguf")], check=True)
    return ('[model "tiny"]\npath = %s\ndevice = cpu\nslots = 4\nthreads = 1\ncontext = 16384\n\n'
            '[model "stories"]\npath = %s\ndevice = cpu\nslots = 4\nthreads = 1\ncontext = 2048\n'
            % (os.path.join(tmp, "tiny.gguf"), STORIES))


def ask(schema, name, seed, model):
    body = {"model": model, "messages": [{"role": "user", "content": "x"}], "max_tokens": ROOM[model],
            "seed": seed, "response_format": {"type": "json_schema",
                                              "json_schema": {"name": "s", "schema": schema}}}
    st, _, text = post("/v1/chat/completions", body)
    if st == 400 and model == "tiny":
        return None
    check(st == 200, "%s: status %d %s" % (name, st, text[:300]))
    if st != 200:
        return None
    ch = json.loads(text)["choices"][0]
    return ch["message"]["content"], ch["finish_reason"], model


def spread(names, k):
    """@k of @names evenly spaced (all when fewer), the same every run."""
    if len(names) <= k:
        return names
    return [names[i * len(names) // k] for i in range(k)]


def pick():
    """The schemas to ask for: (split/name, schema) of the accepted ones, spread."""
    out = []
    for split in ("tooling", "github", "api"):
        names = sorted(n for n in os.listdir(os.path.join(SAMPLE, split)) if n.endswith(".json"))
        taken = []
        for n in names:
            with open(os.path.join(SAMPLE, split, n)) as f:
                schema = json.load(f)
            st, _, _ = post("/v1/chat/completions", {
                "model": "tiny", "messages": [{"role": "user", "content": "x"}], "max_tokens": 1,
                "response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema": schema}}})
            if st == 200:
                taken.append(("%s/%s" % (split, n), schema))
        chosen = taken if split == "api" else spread(taken, PER_SPLIT)
        print("%s: %d of %d accepted, %d asked" % (split, len(taken), len(names), len(chosen)))
        out += chosen
    return out


def generate(chosen):
    """Every chosen schema's outputs, two requests at a time: {name: [(text, finish)]}."""
    got, lock, todo = {}, threading.Lock(), list(chosen)

    def work():
        while True:
            with lock:
                if not todo:
                    return
                name, schema = todo.pop(0)
            outs = [ask(schema, name, 1000 + g, m) for m in MODELS for g in range(GENS)]
            with lock:
                got[name] = [o for o in outs if o is not None]
    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return got


# Schemas of the sample that ajv 8 cannot compile at all, whatever the output: each
# reason is ajv's, not orch's (python-jsonschema still checks their outputs).
AJV_CANNOT = {
    # a draft-07 document that embeds the draft-04 meta-schema ("id", boolean
    # exclusiveMinimum): ajv compiles one draft a document
    "api/asyncapi-schemas-2.0.0-rc1-without--id.json": "draft-04 parts in a draft-07 document",
}


def py_invalid(schema, out):
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    v = cls(schema, format_checker=cls.FORMAT_CHECKER)
    return [e.message[:200] for e in v.iter_errors(json.loads(out))][:3]


def main():
    o = OrchdProc(BIN, "max_tokens = %d\n" % max(MAX_TOKENS, 2048), seed=56, ready_s=60, more=models)
    try:
        chosen = pick()
        check(len(chosen) >= 60 or PER_SPLIT < 27, "at least 60 schemas asked: %d" % len(chosen))
        got = generate(chosen)
    finally:
        o.stop()
    schemas = dict(chosen)
    items, cut, bad = [], 0, 0
    finished = {m: [0, 0] for m in MODELS}  # model: [finished, asked]
    for name, outs in sorted(got.items()):
        done = [t for t, fin, _ in outs if fin == "stop"]
        cut += len(outs) - len(done)
        for _, fin, m in outs:
            finished[m][0] += fin == "stop"
            finished[m][1] += 1
        for t in done:
            errs = py_invalid(schemas[name], t)
            if errs:
                bad += 1
                print("python-jsonschema: %s: invalid %s\n  %s" % (name, errs, t[:1500]))
        items.append({"name": name, "schema": schemas[name], "outputs": done})
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(items, f)
    r = subprocess.run(["node", os.path.join(INTEROP, "schema_validate.mjs"), f.name],
                       capture_output=True, text=True, timeout=300)
    os.unlink(f.name)
    check(r.returncode == 0, "schema_validate.mjs ran: %s" % r.stderr[-2000:])
    lax = []
    for line in r.stdout.splitlines():
        res = json.loads(line)
        if "error" in res and res["name"] in AJV_CANNOT:
            print("ajv cannot compile %s (%s): python-jsonschema alone checks its outputs"
                  % (res["name"], AJV_CANNOT[res["name"]]))
            continue
        check("error" not in res, "ajv compiles %s: %s" % (res["name"], res.get("error")))
        if not res.get("strict", True):
            lax.append(res["name"])
        for inv in res.get("invalid", []):
            bad += 1
            print("ajv: %s: invalid %s\n  %s" % (res["name"], json.dumps(inv["errors"])[:600],
                                                 inv["output"][:1500]))
    n = sum(len(i["outputs"]) for i in items)
    print("ajv strict off (the schema is not strict-clean) for %d of %d schemas: %s"
          % (len(lax), len(items), ", ".join(lax)))
    print("%d schemas, %d finished outputs checked by ajv and python-jsonschema, %d hit max_tokens, "
          "%d invalid" % (len(items), n, cut, bad))
    check(bad == 0, "every finished output valid under ajv and python-jsonschema")
    for m, (k, asked) in sorted(finished.items()):
        print("%s: %d of %d outputs finished" % (m, k, asked))
    # how many finish is the model's business, not the grammar's: enough to say something
    check(finished["tiny"][0] >= finished["tiny"][1] // 2, "most of tiny's outputs finished")
    check(finished["stories"][0] >= finished["stories"][1] // 4,
          "a quarter of stories260K's outputs finished")
    print("orchd_schema_sample_test: %d passed, %d failed" % (orchd_lib.passed, orchd_lib.failed))
    return 1 if orchd_lib.failed else 0


if __name__ == "__main__":
    sys.exit(main())
