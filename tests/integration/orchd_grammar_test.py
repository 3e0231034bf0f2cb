#!/usr/bin/env python3
"""orchd_grammar_test - constrained output through orchd (issue 20), against
real workers on the cpu device serving random-weight models written by
orch-synth (the model knows nothing: a valid output is the grammar's doing):

- tests/interop/structured_client.mjs: the official openai npm client with
  response_format json_schema (strict) for three schemas, GENS generations
  each, every completed one validated by ajv; streamed; json_object; a model
  with Qwen2's real vocabulary;
- tests/interop/schema_fuzz.mjs: FUZZ random schemas from a seeded
  generator over the documented keyword subset, 5 generations each (and an
  eighth as many on the real-vocabulary model), every completed output
  validated by ajv, none of the schemas refused;
- the native /execute and /v1/completions "grammar" (GBNF): the output is a
  sentence of it, and a one-sentence grammar gives exactly that sentence
  with finish_reason "stop";
- what is refused, with a 400 naming the parameter: an unsupported schema
  keyword (naming it and where), a grammar that does not compile (line and
  column), both a grammar and a JSON response_format, an unknown
  response_format type, a json_schema without a name, a grammar with more
  parses alive at once than the matcher keeps, "!<...>";
- a harmony model (gpt-oss tiny, from $ORCH_TESTDATA when it is there): a
  raw prompt's grammar with token terminals (<|channel|>) is the whole
  output; a chat's grammar or schema shapes the final channel after an
  optional analysis (structured_client.mjs too); a token terminal the
  vocabulary lacks is a clear 400."""
import json
import re
import os
import subprocess
import sys

BIN = os.environ["ORCH_BIN"]
DATA = os.environ.get("ORCH_TESTDATA", "/nonexistent")
HERE = os.path.dirname(os.path.abspath(__file__))
INTEROP = os.path.join(HERE, "..", "interop")
QWEN_VOCAB = os.path.join(DATA, "vocab", "ggml-vocab-qwen2.gguf")
GENS = int(os.environ.get("ORCH_GRAMMAR_GENS", "200"))
FUZZ = int(os.environ.get("ORCH_SCHEMA_FUZZ", "120"))  # random schemas (an eighth as many on qv)
sys.path.insert(0, HERE)
import orchd_lib  # noqa: E402
from orchd_lib import OrchdProc, check, post, sse_events  # noqa: E402
OSS = orchd_lib.gpt_oss_tiny() or "gpt-oss-tiny-mxfp4.gguf (or gpt-oss's vocabulary)"


def models(tmp):
    subprocess.run([BIN + "/orch-synth", "--preset", "tiny-qwen2", "--quant", "Q8_0", "--seed", "9",
                    "-o", os.path.join(tmp, "tiny.gguf")], check=True)
    conf = ('[model "tiny"]\npath = %s\ndevice = cpu\nslots = 8\nthreads = 1\ncontext = 1024\n'
            % os.path.join(tmp, "tiny.gguf"))
    if os.path.isfile(QWEN_VOCAB):
        subprocess.run([BIN + "/orch-synth", "--preset", "tiny-qwen2", "--quant", "Q8_0", "--seed", "4",
                        "--vocab", QWEN_VOCAB, "-o", os.path.join(tmp, "qv.gguf")], check=True)
        conf += ('[model "qv"]\npath = %s\ndevice = cpu\nslots = 4\nthreads = 1\ncontext = 1024\n'
                 % os.path.join(tmp, "qv.gguf"))
    if os.path.isfile(OSS):
        conf += '[model "oss"]\npath = %s\ndevice = cpu\nslots = 2\nthreads = 1\ncontext = 2048\n' % OSS
    return conf


def refused(path, body, param, *words):
    st, _, text = post(path, body)
    try:
        err = json.loads(text)["error"]
    except (ValueError, KeyError):
        err = {}
    ok = st == 400 and err.get("param") == param and all(w in err.get("message", "") for w in words)
    check(ok, "%s refused naming %s %s: %d %s" % (path, param, words, st, text[:300]))


def test_refusals():
    chat = {"model": "tiny", "messages": [{"role": "user", "content": "x"}], "max_tokens": 4}
    schema = {"type": "object", "properties": {"a": {"type": "array", "contains": {}, "maxContains": 1}}}
    refused("/v1/chat/completions", dict(chat, response_format={
        "type": "json_schema", "json_schema": {"name": "s", "schema": schema}}),
        "response_format", "maxContains", "/properties/a")
    refused("/v1/chat/completions", dict(chat, response_format={
        "type": "json_schema", "json_schema": {"schema": {"type": "object"}}}), "name")
    refused("/v1/chat/completions", dict(chat, response_format={"type": "xml"}), "response_format", "xml")
    refused("/v1/chat/completions", dict(chat, response_format={"type": "json_schema", "schema": {}}),
            "response_format", "has no 'schema'", '"json_schema": {"name"')
    refused("/v1/chat/completions", dict(chat, grammar='root ::= "a" x'), "grammar",
            "line 1, column 14", "undefined rule 'x'")
    refused("/v1/chat/completions", dict(chat, grammar='root ::= "a"', response_format={"type": "json_object"}),
            "grammar", "not both")
    refused("/execute", {"job_id": "g1", "model": "tiny", "prompt": "x", "grammar": "root ::= ("},
            "grammar", "expected ')'")
    refused("/v1/completions", {"model": "tiny", "prompt": "x", "grammar": ""}, "grammar", "1-")
    refused("/v1/chat/completions", dict(chat, stop=["}"], response_format={"type": "json_object"}),
            "stop", "middle of a sentence")


def test_grammar_field():
    gr = 'root ::= "yes" | "no" | "maybe " [0-9]'
    for i in range(6):
        st, _, text = post("/v1/completions", {"model": "tiny", "prompt": "Answer:", "max_tokens": 20,
                                               "temperature": 1, "seed": i, "grammar": gr})
        r = json.loads(text)
        out = r["choices"][0]["text"] if st == 200 else text
        check(st == 200 and (out in ("yes", "no") or (out.startswith("maybe ") and len(out) == 7 and out[6].isdigit()))
              and r["choices"][0]["finish_reason"] == "stop", "completions grammar: %r" % out)
    st, _, text = post("/execute", {"job_id": "gx", "model": "tiny", "prompt": "Say it", "max_tokens": 50,
                                    "temperature": 1, "grammar": 'root ::= "Hello, world!"'})
    ev = [(e["event"], json.loads(e["data"])) for e in sse_events(text)]
    toks = "".join(e[1].get("t", "") for e in ev if e[0] == "token")
    end = [e[1] for e in ev if e[0] == "end"]
    check(st == 200 and toks == "Hello, world!" and end and end[0].get("finish_reason") == "eos",
          "native grammar: exactly its one sentence, finish eos: %r %s" % (toks, end))
    # a random model may wander inside a string past max_tokens: such a cut must say
    # "length"; among a few seeds, the ones that finish are JSON objects
    done = 0
    for seed in range(1, 6):
        st, _, text = post("/execute", {"job_id": "gy%d" % seed, "model": "tiny", "prompt": "Say it",
                                        "max_tokens": 1000, "temperature": 1, "seed": seed,
                                        "response_format": {"type": "json_object"}})
        ev = [(e["event"], json.loads(e["data"])) for e in sse_events(text)]
        toks = "".join(e[1].get("t", "") for e in ev if e[0] == "token")
        end = [e[1] for e in ev if e[0] == "end"]
        reason = end[0].get("finish_reason") if end else None
        if st == 200 and reason == "length":
            continue
        try:
            ok = isinstance(json.loads(toks), dict)
        except ValueError:
            ok = False
        check(st == 200 and ok, "native response_format json_object (seed %d, %s): %r" % (seed, reason, toks[:200]))
        done += 1
    check(done >= 1, "native response_format json_object: some of five seeds finish")


def test_too_ambiguous():
    # 70,000 alternatives alive at the start: more parses than the matcher keeps
    gr = "root ::= " + " | ".join(['"a"'] * 70000)
    st, _, text = post("/v1/chat/completions", {"model": "tiny", "messages": [{"role": "user", "content": "x"}],
                                                "max_tokens": 4, "grammar": gr})
    check(st == 400 and "too ambiguous" in text and "65536" in text,
          "a grammar with too many live parses is a clear 400: %d %s" % (st, text[:300]))
    st, _, text = post("/v1/chat/completions", {"model": "tiny", "messages": [{"role": "user", "content": "x"}],
                                                "max_tokens": 4, "grammar": 'root ::= "ok"'})
    check(st == 200 and json.loads(text)["choices"][0]["message"]["content"] == "ok",
          "the worker serves on after it: %d %s" % (st, text[:200]))


def test_harmony():
    if not os.path.isfile(OSS):
        print("skipped: constrained output on harmony (no gpt-oss tiny in ORCH_TESTDATA)")
        return
    st, _, text = post("/tokenize", {"model": "oss", "content": "<|end|>"})
    bias = {str(json.loads(text)["tokens"][0]): 12}  # a random model's analysis ends soon
    # a raw prompt: the grammar is the whole output, control tokens by name
    st, _, text = post("/v1/completions", {
        "model": "oss", "prompt": "<|start|>user<|message|>hi<|end|><|start|>assistant", "max_tokens": 40,
        "grammar": 'root ::= <|channel|> "final" <|message|> ("yes" | "no")'})
    c = json.loads(text)["choices"][0] if st == 200 else {}
    check(st == 200 and c.get("text") in ("<|channel|>final<|message|>yes", "<|channel|>final<|message|>no")
          and c.get("finish_reason") == "stop", "harmony, raw prompt: token terminals: %d %s" % (st, text[:300]))
    # a chat: the grammar is the answer (the final channel), after an optional analysis
    outs = set()
    for seed in range(6):
        st, _, text = post("/v1/chat/completions", {
            "model": "oss", "messages": [{"role": "user", "content": "yes or no?"}], "max_tokens": 200,
            "temperature": 1, "seed": seed, "logit_bias": bias, "grammar": 'root ::= "yes" | "no"'})
        m = json.loads(text)["choices"][0]["message"] if st == 200 else {}
        outs.add((st, m.get("content"), bool(m.get("reasoning_content"))))
    check(all(o[0] == 200 and o[1] in ("yes", "no") for o in outs) and any(o[2] for o in outs),
          "harmony chat: the grammar shapes the final channel, after an analysis or not: %s" % outs)
    # a grammar whose last rule goes on past its end (a trailing '|') does not swallow the wrapper
    st, _, text = post("/v1/chat/completions", {
        "model": "oss", "messages": [{"role": "user", "content": "yes?"}], "max_tokens": 200, "seed": 1,
        "temperature": 1, "logit_bias": bias, "grammar": 'root ::= "yes" |'})
    m = json.loads(text)["choices"][0]["message"] if st == 200 else {}
    check(st == 200 and m.get("content") in ("yes", ""), "harmony: a trailing '|': %d %s" % (st, text[:300]))
    for gr, words in (('root ::= <|nope|> "x"', "<|nope|> is no token of this model's vocabulary"),
                      ('root ::= <[999999]>', "<[999999]> is outside this model's vocabulary (ids 0 to")):
        refused("/v1/chat/completions", {"model": "oss", "messages": [{"role": "user", "content": "x"}],
                                         "max_tokens": 4, "grammar": gr}, "grammar", words)
    refused("/v1/chat/completions", {"model": "oss", "messages": [{"role": "user", "content": "x"}],
                                     "grammar": "root ::= !<[3]>"}, "grammar", "any token but one")
    # an answer's grammar stays in its message: no <|end|> <|start|> ... to write a tool call
    refused("/v1/chat/completions", {"model": "oss", "messages": [{"role": "user", "content": "x"}],
                                     "max_tokens": 8, "grammar": 'root ::= "x" <|end|> <|start|> "a"'},
            "grammar", "may not name <|end|>")
    refused("/v1/chat/completions", {"model": "oss", "messages": [{"role": "user", "content": "x"}],
                                     "grammar": 'root ::= x\norch-harmony-text ::= "y"\nx ::= "z"'},
            "grammar", "line 2", "reserved")
    refused("/v1/chat/completions", {"model": "oss", "messages": [{"role": "user", "content": "x"}],
                                     "grammar": "root ::= " + " | ".join("<[%d]>" % i for i in range(1025))},
            "grammar", "more than 1024 distinct token terminals")
    st, _, text = post("/v1/chat/completions", {
        "model": "oss", "messages": [{"role": "user", "content": "x"}], "max_tokens": 200, "seed": 1,
        "logit_bias": bias, "grammar": "root ::= " + " | ".join("<[%d]>" % i for i in range(1024))})
    check(st == 200, "1024 terminals on a harmony chat (the wrapper adds its own): %d %s" % (st, text[:200]))
    # logit_bias banning all the grammar allows: said so, not blamed on the grammar
    refused("/v1/completions", {"model": "tiny", "prompt": "hi", "max_tokens": 4, "grammar": "root ::= <[5]>",
                                "logit_bias": {"5": -100}}, "logit_bias", "no token is left")
    if os.path.isfile(QWEN_VOCAB):  # an end token named by a terminal where the grammar may end: counted once
        ids = [json.loads(post("/tokenize", {"model": "qv", "content": t})[2])["tokens"][0]
               for t in ("<|im_end|>", "<|endoftext|>")]
        refused("/v1/completions", {"model": "qv", "prompt": "hi", "max_tokens": 4, "grammar": "root ::= <|im_end|>?",
                                    "logit_bias": {str(i): -100 for i in ids}}, "logit_bias", "no token is left")
    refused("/v1/chat/completions", {"model": "tiny", "messages": [{"role": "user", "content": "x"}],
                                     "grammar": 'root ::= "a"\rorch-harmony-think ::= "x"'}, "grammar", "reserved")


def test_regex():
    """Issue 62, item 4: response_format {"type": "regex"}, vLLM's guided_regex and SGLang's
    regex: the output matches the pattern whole, through the grammar engine; a pattern
    outside the subset is refused by name."""
    pat = re.compile(r"(yes|no), [a-z]{3,8}\.")
    for extra in ({"response_format": {"type": "regex", "pattern": pat.pattern}},
                  {"guided_regex": pat.pattern}, {"regex": "^" + pat.pattern + "$"}):
        for path, body in (("/v1/completions", {"model": "tiny", "prompt": "x", "max_tokens": 40}),
                           ("/v1/chat/completions", {"model": "tiny", "max_tokens": 40,
                                                     "messages": [{"role": "user", "content": "x"}]})):
            st, _, t = post(path, dict(body, **extra))
            c = json.loads(t)["choices"][0] if st == 200 else {}
            text = c.get("text", (c.get("message") or {}).get("content", ""))
            check(st == 200 and pat.fullmatch(text or "") is not None and c.get("finish_reason") == "stop",
                  "%s %s: the output matches: %d %r" % (path, list(extra)[0], st, text))
    st, _, t = post("/execute", {"job_id": "rx1", "model": "tiny", "prompt": "x", "max_tokens": 20,
                                 "regex": "[0-9]{3}"})
    out = "".join(json.loads(e["data"]).get("t", "") for e in sse_events(t) if e["event"] == "token")
    check(st == 200 and re.fullmatch("[0-9]{3}", out), "/execute regex: %r" % out)
    refused("/v1/completions", {"model": "tiny", "prompt": "x", "regex": "(a)\\1"}, "regex", "backreferences")
    refused("/v1/completions", {"model": "tiny", "prompt": "x", "guided_regex": "(?=a)b"}, "guided_regex")
    refused("/v1/completions", {"model": "tiny", "prompt": "x", "response_format": {"type": "regex"}},
            "response_format", "pattern")
    # past the grammar compiler's limits: the client's 400, not orch's 500 "please report"
    refused("/v1/completions", {"model": "tiny", "prompt": "x", "regex": "(a{10000})" * 110}, "regex",
            "too large")


def main():
    o = OrchdProc(BIN, seed=30, ready_s=60, more=models)
    try:
        test_regex()
        test_refusals()
        test_grammar_field()
        test_too_ambiguous()
        test_harmony()
        if os.path.isdir(os.path.join(INTEROP, "node_modules", "ajv-formats")):
            r = subprocess.run(["node", os.path.join(INTEROP, "structured_client.mjs"),
                                "http://127.0.0.1:%d/v1" % o.port, "tiny",
                                "qv" if os.path.isfile(QWEN_VOCAB) else "", str(GENS)]
                               + (["oss"] if os.path.isfile(OSS) else []),
                               capture_output=True, text=True, timeout=900)
            print(r.stdout)
            check(r.returncode == 0 and "all passed" in r.stdout,
                  "structured output with the openai npm client and ajv: %s" % (r.stdout + r.stderr)[-3000:])
            for m, n in (("tiny", FUZZ), ("qv", max(FUZZ // 8, 3))):
                if m == "qv" and not os.path.isfile(QWEN_VOCAB):
                    continue
                r = subprocess.run(["node", os.path.join(INTEROP, "schema_fuzz.mjs"),
                                    "http://127.0.0.1:%d/v1" % o.port, m, str(n), "5"],
                                   capture_output=True, text=True, timeout=900)
                print(r.stdout[-3000:])
                check(r.returncode == 0 and "all passed" in r.stdout,
                      "random schemas on %s, validated by ajv: %s" % (m, (r.stdout + r.stderr)[-3000:]))
        else:
            check(False, "ajv-formats is not installed in tests/interop: run 'make deps'")
    finally:
        o.stop()
    print("orchd_grammar_test: %d passed, %d failed" % (orchd_lib.passed, orchd_lib.failed))
    return 1 if orchd_lib.failed else 0


if __name__ == "__main__":
    sys.exit(main())
