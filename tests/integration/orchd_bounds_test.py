#!/usr/bin/env python3
"""orchd_bounds_test - no request stalls orchd's loop (issue 52, A1), on the
repository's own model (a clone alone runs it).

What a request costs orchd to check is bounded and linear: a body whose objects
nest deeper than 128 levels, or one object of more than 16,384 keys, is a 400
naming the limit and the field; 16,384 chat_template_kwargs, a schema of 16,384
properties (all required), an enum of 50,000 values and 60 choices of one
schema are taken without holding the loop. While each is sent, /health is asked
again and again on another connection: its slowest answer is the loop's stall.
Before: 300k kwargs held it 272 s, 40k properties 43 s, 40 choices of a large
schema 2 s (the body parsed again per choice). The bound asserted (1.5 s) is far
above what they take now (under 0.1 s here) so that a slow machine passes.
Bodies of 16 KiB and more are parsed, and their grammar compiled, on a helper
thread (api.h): eight 3.5 MiB bodies at once leave /health answering, each is
answered as it would be on the loop (200 or a 400 naming the field), and a
client that closes while its body is parsed loses nothing of orchd's.
SIGHUP with the config file replaced by a FIFO: the files are read off the loop,
regular files only: refused with a line that says so, /health answers meanwhile,
and the next SIGHUP reloads (before, the loop blocked on the FIFO's open)."""
import http.client
import json
import os
import signal
import sys
import threading
import time

BIN = os.environ["ORCH_BIN"]
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import orchd_lib  # noqa: E402
from orchd_lib import check  # noqa: E402
MODEL = os.path.join(HERE, "..", "..", "models", "stories260K.gguf")
# the loop's longest stall allowed (tests/CMakeLists.txt: more under the sanitizers)
STALL_S = float(os.environ.get("ORCH_STALL_S", "1.5"))


def chat(schema=None, **more):
    b = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1}
    if schema is not None:
        b["response_format"] = {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}
    b.update(more)
    return json.dumps(b).encode()


def send(body):
    """POST @body to /v1/chat/completions while /health is polled: (status, text, worst s)."""
    out = {}

    def req():
        c = orchd_lib.conn(timeout=120)
        c.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
        r = c.getresponse()
        out["r"] = (r.status, r.read().decode())
        c.close()
    t = threading.Thread(target=req)
    c = http.client.HTTPConnection("127.0.0.1", orchd_lib.PORT, timeout=120)
    worst = 0.0
    t.start()
    while t.is_alive():
        a = time.time()
        c.request("GET", "/health")
        c.getresponse().read()
        worst = max(worst, time.time() - a)
    c.close()
    st, text = out.get("r", (0, ""))
    return st, text, worst


def error_of(text):
    try:
        return json.loads(text)["error"]
    except (ValueError, KeyError, TypeError):
        return {}


o = orchd_lib.OrchdProc(BIN, "max_queue = 128\nmax_prompt_chars = 4000000\n", seed=29,
                        more=lambda tmp: '[model "m"]\npath = %s\nslots = 4\ncontext = 128\nthreads = 1\n' % MODEL)

# the limits: refused at once, naming them
deep = []
for _ in range(200):
    deep = [deep]
st, text, worst = send(chat(chat_template_kwargs={"x": deep}))
e = error_of(text)
check(st == 400 and e.get("param") == "chat_template_kwargs" and "128 levels" in e.get("message", ""),
      "nesting past 128 levels: 400 naming the field and the limit: %d %s" % (st, text[:300]))
st, text, worst = send(chat(chat_template_kwargs={"k%d" % i: i for i in range(200000)}))
e = error_of(text)
check(st == 400 and e.get("param") == "chat_template_kwargs" and "16384" in e.get("message", ""),
      "200,000 keys in one object: 400 naming the limit: %d %s" % (st, text[:300]))
check(worst < STALL_S, "200,000 keys hold the loop %.3f s" % worst)
st, text, worst = send(chat({"type": "object", "properties": {"p%d" % i: {"type": "integer"} for i in range(40000)}}))
check(st == 400 and "16384" in error_of(text).get("message", ""), "a schema of 40,000 properties: 400: %d %s"
      % (st, text[:300]))
check(worst < STALL_S, "40,000 properties hold the loop %.3f s" % worst)

# within them: taken, the loop free
cases = [
    ("16,384 chat_template_kwargs", chat(chat_template_kwargs={"k%d" % i: i for i in range(16384)})),
    ("16,384 required properties", chat({"type": "object",
                                         "properties": {"p%d" % i: {"type": "integer"} for i in range(16384)},
                                         "required": ["p%d" % i for i in range(16384)]})),
    ("an enum of 50,000", chat({"type": "array", "items": {"enum": ["v%d" % i for i in range(50000)]}})),
    ("60 choices of a 50,000-value enum", chat({"enum": ["value-%d" % i for i in range(50000)]}, n=60)),
]
for what, body in cases:
    st, text, worst = send(body)
    print("%s: %d, the loop held at most %.3f s" % (what, st, worst))
    check(st in (200, 400), "%s: answered: %d %s" % (what, st, text[:200]))
    check(worst < STALL_S, "%s: the loop held %.3f s (at most %.1f)" % (what, worst, STALL_S))

# small bodies whose schema's grammar is not small (issue 52's repeated attack: 17 $defs,
# each two $refs to the next, 1.8 KB, compile past 1 MiB: 150-300 ms each; 40 at once held
# the loop 6.3 s): whatever may compile a grammar is parsed off the loop, its threads below
# the loop's priority
defs = {"d%d" % i: {"anyOf": [{"$ref": "#/$defs/d%d" % (i + 1)},
                              {"allOf": [{"$ref": "#/$defs/d%d" % (i + 1)}, {"type": "integer"}]}]}
        for i in range(17)}
defs["d17"] = {"type": "integer"}
small = chat({"$defs": defs, "$ref": "#/$defs/d0"})
# the same with its key escaped ("response_form\u0061t" is response_format to the parser)
small_escaped = small.replace(b'"response_format"', b'"response_form\\u0061t"')
check(small_escaped != small, "the escaped copy differs")
check(len(small) < 4096, "the schema's body is small: %d bytes" % len(small))
got_s = [None] * 20


def one_small(k):
    c = orchd_lib.conn(timeout=120)
    c.request("POST", "/v1/chat/completions", small if k % 2 else small_escaped,
              {"Content-Type": "application/json"})
    r = c.getresponse()
    got_s[k] = (r.status, r.read().decode())
    c.close()


ts = [threading.Thread(target=one_small, args=(k,)) for k in range(20)]
hc = http.client.HTTPConnection("127.0.0.1", orchd_lib.PORT, timeout=120)
worst = 0.0
for t in ts:
    t.start()
while any(t.is_alive() for t in ts):
    a = time.time()
    hc.request("GET", "/health")
    hc.getresponse().read()
    worst = max(worst, time.time() - a)
hc.close()
print("20 small schemas that compile past 1 MiB, at once: the loop held at most %.3f s" % worst)
check(all(g is not None and g[0] in (400, 503) for g in got_s),
      "each answered (400: the grammar is too large; 503: busy): %r" % sorted({g[0] for g in got_s if g}))
check(worst < STALL_S, "20 small costly schemas: the loop held %.3f s (at most %.1f; 40 held it 6.3 s before)"
      % (worst, STALL_S))

# large bodies, several at once: parsed off the loop, each answered as on it
big = "once upon a time " * 200000  # 3.4 MB of prompt
bodies = [chat(), chat(messages=[{"role": "user", "content": big}]),
          chat(chat_template_kwargs={"k%d" % i: "v" * 200 for i in range(16384)}),
          chat(messages=[{"role": "user", "content": big}], temperature=-1)]
bodies[0] = chat(messages=[{"role": "user", "content": "hi"}], metadata={"pad": "x" * 20000})
got = [None] * 8


def one(k):
    c = orchd_lib.conn(timeout=120)
    c.request("POST", "/v1/chat/completions", bodies[k % 4], {"Content-Type": "application/json"})
    r = c.getresponse()
    got[k] = (r.status, r.read().decode())
    c.close()


ts = [threading.Thread(target=one, args=(k,)) for k in range(8)]
c = http.client.HTTPConnection("127.0.0.1", orchd_lib.PORT, timeout=120)
worst = 0.0
for t in ts:
    t.start()
while any(t.is_alive() for t in ts):
    a = time.time()
    c.request("GET", "/health")
    c.getresponse().read()
    worst = max(worst, time.time() - a)
c.close()
print("eight large bodies at once (%s bytes): the loop held at most %.3f s"
      % ("/".join(str(len(b)) for b in bodies), worst))
check(worst < STALL_S, "eight large bodies: the loop held %.3f s" % worst)
for k in range(8):
    st, text = got[k] or (0, "")
    if k % 4 == 3:
        check(st == 400 and error_of(text).get("param") == "temperature",
              "a large body's refusal names its field: %d %s" % (st, text[:200]))
    elif k % 4 == 1:  # 3.4 MB of prompt in a 128-token context
        check(st == 400 and error_of(text).get("code") == "CONTEXT_LENGTH_EXCEEDED",
              "a large prompt past the context: 400: %d %s" % (st, text[:200]))
    else:
        check(st == 200 and json.loads(text)["choices"][0]["finish_reason"] == "length",
              "a body of %d bytes is answered: %d %s" % (len(bodies[k % 4]), st, text[:200]))

# /tokenize and /detokenize of large bodies: parsed off the loop too
st, _, text = orchd_lib.post("/tokenize", {"content": "once upon a time " * 2000})
check(st == 200 and len(json.loads(text)["tokens"]) > 2000, "/tokenize of 34 KB: %d %s" % (st, text[:200]))
st, _, text = orchd_lib.post("/tokenize", {"content": big, "bogus": 1})
check(st == 400 and error_of(text).get("param") == "bogus", "/tokenize of 3.4 MB with an unknown field: 400 "
      "naming it: %d %s" % (st, text[:200]))
st, _, text = orchd_lib.post("/detokenize", {"model": "m", "tokens": [30] * 20000})
check(st == 200 and len(json.loads(text)["content"]) > 0, "/detokenize of 20,000 ids: %d %s" % (st, text[:200]))
st, _, text = orchd_lib.post("/detokenize", {"model": "nope", "tokens": [30] * 20000})
check(st == 404 and error_of(text).get("code") == "MODEL_NOT_FOUND",
      "/detokenize of a large body for an unknown model: 404: %d %s" % (st, text[:200]))

# nested repetitions of what may be empty (the attack run: the worker's matcher grew 200 MB/s
# until it was killed, and two requests failed the model): refused at compile, naming why
for field, value in (("grammar", 'root ::= (("a"{0,100}){0,100}){0,100}'),
                     ("response_format", {"type": "regex", "pattern": "((a{0,100}){0,100}){0,100}"}),
                     ("response_format", {"type": "json_schema", "json_schema": {"name": "x", "schema": {
                         "type": "string", "pattern": "^((a{0,100}){0,100}){0,100}$"}}})):
    t0 = time.time()
    st, _, text = orchd_lib.post("/v1/completions", {"model": "m", "prompt": "hi", "max_tokens": 4, field: value})
    e = error_of(text)
    check(st == 400 and "100000" in e.get("message", "") and time.time() - t0 < 10,
          "%s of nested repetitions: 400 naming the limit: %d %s" % (field, st, text[:300]))
st, _, text = orchd_lib.post("/v1/completions", {"model": "m", "prompt": "hi", "max_tokens": 4})
check(st == 200, "the model serves on: %d" % st)

# a client that closes while its body is parsed: let go, nothing else touched
for _ in range(4):
    c = orchd_lib.conn(timeout=10)
    c.request("POST", "/v1/chat/completions", bodies[1], {"Content-Type": "application/json"})
    c.close()
time.sleep(1.0)
st = orchd_lib.get("/health")[0]
check(st == 200, "orchd serves after clients left during their parse: %d" % st)
check(o.proc.poll() is None, "orchd still runs")

# SIGHUP with the config file replaced by a FIFO: read off the loop, refused, the loop free
conf = os.path.join(o.tmp, "orchd.conf")
os.rename(conf, conf + ".real")
os.mkfifo(conf)
o.proc.send_signal(signal.SIGHUP)
t0 = time.time()
st = orchd_lib.get("/health")[0]
check(st == 200 and time.time() - t0 < STALL_S, "/health answers during a reload of a FIFO config")
end = time.time() + 10
while time.time() < end and "is not a regular file" not in o.log_text():
    time.sleep(0.05)
check("event=reload_failed" in o.log_text() and "is not a regular file" in o.log_text(),
      "the FIFO config is refused: %r" % [l for l in o.log_text().splitlines() if "reload" in l][-2:])
os.unlink(conf)
os.rename(conf + ".real", conf)
o.proc.send_signal(signal.SIGHUP)  # and a reload after it works
end = time.time() + 10
while time.time() < end and "event=reloaded" not in o.log_text():
    time.sleep(0.05)
check("event=reloaded" in o.log_text(), "the next SIGHUP reloads")

# api_keys_file on SIGHUP (the attack run: a new path was ignored, the old keys stayed):
# keys where there were none, another file, then none named (the keys in force stay)
def reload_with(keys_line):
    text = open(conf + ".base").read().replace("\nruntime_dir", "\n%sruntime_dir" % keys_line, 1)
    open(conf, "w").write(text)
    before = o.log_text().count("event=reloaded")
    o.proc.send_signal(signal.SIGHUP)
    end = time.time() + 10
    while time.time() < end and o.log_text().count("event=reloaded") == before:
        time.sleep(0.05)


def models_status(key):
    return orchd_lib.get("/v1/models", {"Authorization": "Bearer " + key} if key else None)[0]


open(conf + ".base", "w").write(open(conf).read())
k1, k2 = os.path.join(o.tmp, "k1.keys"), os.path.join(o.tmp, "k2.keys")
for path, key in ((k1, "reload-key-one-0123456789"), (k2, "reload-key-two-0123456789")):
    open(path, "w").write(key + "\n")
    os.chmod(path, 0o600)
check(models_status(None) == 200, "no keys at first")
reload_with("api_keys_file = %s\n" % k1)
check(models_status(None) == 401 and models_status("reload-key-one-0123456789") == 200,
      "a SIGHUP that names a keys file turns keys on")
reload_with("api_keys_file = %s\n" % k2)
check(models_status("reload-key-one-0123456789") == 401 and models_status("reload-key-two-0123456789") == 200,
      "a SIGHUP that names another keys file takes its keys")
reload_with("")
check(models_status(None) == 401 and models_status("reload-key-two-0123456789") == 200
      and "event=api_keys_file_removed" in o.log_text(),
      "a SIGHUP that names none keeps the keys in force, and says so")
o.stop()
print("orchd_bounds_test: %d passed, %d failed" % (orchd_lib.passed, orchd_lib.failed))
sys.exit(1 if orchd_lib.failed else 0)
