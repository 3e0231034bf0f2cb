#!/usr/bin/env python3
"""orchd_http_edge_test - what a new client meets on orchd's public API
(issue 18), against a real orchd serving the repository's own model
(models/stories260K.gguf on the cpu device), through raw sockets where the
exact bytes matter:

- routes: an unknown path is 404 NOT_FOUND and a known path with another
  method 405 METHOD_NOT_ALLOWED with Allow; every GET route answers HEAD with
  the same head and no body (the next response on the connection parses);
  OPTIONS is 204 with Allow; a method orchd does not know is 501 and an
  Expect it does not take 417; every error body, UNAUTHORIZED and
  JOB_NOT_FOUND included, has the documented members and no HTML page is
  ever sent;
- CORS: off by default (no Access-Control-* field anywhere); with
  cors_origins a listed origin's preflight is 204 with the allowed origin,
  methods, headers and max age (no key needed), its answers (errors and
  streams too) carry Access-Control-Allow-Origin and Vary: Origin, an
  origin not listed gets none; "*" lets any origin in;
- the access log: one http_access line per request, refused heads, 404s,
  a stream (when it ends, with its job's correlation id) and one cut by its
  client (end=closed) or a deadline (end=deadline) included, with the
  method, the path without its query, the status, the bytes sent and the
  duration; never the query, the prompt or a job's id;
- GET /v1/models/{id}: the OpenAI model object with the state, context
  lengths, file size, quant kind and architecture (before a model is
  loaded too), 404 MODEL_NOT_FOUND for an unknown model and for one the
  caller's key may not use, HEAD like GET;
- the chat page: /, /chat.js, /chat.css, /favicon.svg without a key, with their types,
  ETag and 304, no-cache, nosniff and a self-only Content-Security-Policy;
  404 with chat_page = no (the browser test is tests/interop/chat_page_test)."""
import json
import os
import socket
import sys
import time

BIN = os.environ["ORCH_BIN"]
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
MODEL = os.path.join(ROOT, "models", "stories260K.gguf")
KEY = "edge-key-0123456789abcdef"
KEY_B = "edge-key-b-0123456789abcdef"  # limited to model b
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import orchd_lib  # noqa: E402
from orchd_lib import check  # noqa: E402

ERROR_MEMBERS = ("code", "message", "param", "type", "retriable")


def Orchd(conf="", seed=0, models=True):
    """One orchd on a free port: [server] keys @conf with the two API keys, models a
    (preloaded) and b unless not @models."""
    def more(tmp):
        keys = os.path.join(tmp, "keys")
        with open(keys, "w") as f:
            f.write("%s\n%s models=b\n" % (KEY, KEY_B))
        os.chmod(keys, 0o600)
        text = "api_keys_file = %s\n" % keys
        if models:
            text += ("[model \"a\"]\npath = %s\ndevice = cpu\nslots = 2\nthreads = 1\n"
                     "[model \"b\"]\npath = %s\ndevice = cpu\npreload = no\n" % (MODEL, MODEL))
        return text
    return orchd_lib.OrchdProc(BIN, conf, 1000 + seed, None, 60, more)


def request(method, path, body=b"", headers=None, key=True):
    """A request's bytes: Host, the key (unless @key is false) and, for a body, its type and length."""
    return orchd_lib.request(method, path, body, headers, KEY if key else None)


def raw(port, data, timeout=5.0):
    return orchd_lib.raw(port, data, timeout)


responses = orchd_lib.responses


def one(port, data, heads=()):
    """The one response to @data sent with Connection: close."""
    r = responses(raw(port, data), heads)
    return r[0] if len(r) == 1 else (0, {}, b"%r" % r)


def error_ok(body, code):
    """@body is the documented error object of @code."""
    try:
        e = json.loads(body)["error"]
    except (ValueError, KeyError, TypeError):
        return False
    return e.get("code") == code and all(k in e for k in ERROR_MEMBERS) and \
        isinstance(e["message"], str) and e["type"] in ("invalid_request_error", "rate_limit_error", "server_error") \
        and isinstance(e["retriable"], bool)


def routes(o):
    """404 and 405, HEAD, OPTIONS, 501, 417; complete error bodies, never HTML."""
    close = {"Connection": "close"}
    for path in ("/chat", "/v1/embeddings", "/v1/models/a/b", "/jobs/x", "/index.html?q=1"):
        st, h, body = one(o.port, request("GET", path, headers=close))
        check(st == 404 and error_ok(body, "NOT_FOUND") and b"?q" not in body,
              "GET %s is 404 NOT_FOUND: %s %s" % (path, st, body[:200]))
    cases = [("DELETE", "/v1/models", "GET, HEAD, OPTIONS"), ("GET", "/execute", "POST, OPTIONS"),
             ("PUT", "/v1/chat/completions", "POST, OPTIONS"), ("POST", "/health", "GET, HEAD, OPTIONS"),
             ("PATCH", "/metrics", "GET, HEAD, OPTIONS"), ("POST", "/jobs/abc/events", "GET, HEAD, OPTIONS")]
    for method, path, allow in cases:
        body = b"{}" if method == "POST" else b""
        st, h, b = one(o.port, request(method, path, body, headers=close))
        check(st == 405 and h.get("allow") == allow and error_ok(b, "METHOD_NOT_ALLOWED"),
              "%s %s is 405 with Allow %s: %s %r %s" % (method, path, allow, st, h.get("allow"), b[:200]))
    # a path that needs a key says 401 before 405 to a caller without one
    st, h, b = one(o.port, request("DELETE", "/v1/models", headers=close, key=False))
    check(st == 401 and error_ok(b, "UNAUTHORIZED") and h.get("www-authenticate") == "Bearer",
          "no key: 401 UNAUTHORIZED with every member and WWW-Authenticate: %s %s" % (st, b[:200]))
    st, h, b = one(o.port, request("GET", "/v1/models", headers=dict(close, Authorization="Bearer nope")))
    check(st == 401 and error_ok(b, "UNAUTHORIZED"), "a wrong key: 401 with every member: %s" % b[:200])
    st, h, b = one(o.port, request("GET", "/jobs/0123456789abcdef0123456789abcdef/events", headers=close))
    check(st == 404 and error_ok(b, "JOB_NOT_FOUND"), "JOB_NOT_FOUND with every member: %s" % b[:200])
    st, h, b = one(o.port, request("POST", "/cancel", b'{"job_id":"nope"}', headers=close))
    check(st == 404 and error_ok(b, "JOB_NOT_FOUND") and json.loads(b)["error"]["param"] == "job_id",
          "/cancel of an unknown job: JOB_NOT_FOUND naming job_id: %s" % b[:200])
    # HEAD of every GET route: GET's head, no body; the GET after it on the connection parses
    for path in ("/health", "/ready", "/metrics", "/v1/models", "/v1/models/a", "/nope"):
        data = raw(o.port, request("HEAD", path) + request("GET", path, headers=close))
        r = responses(data, heads=(0,))
        ok = len(r) == 2 and r[0][0] == r[1][0] and r[0][2] == b"" and \
            r[0][1].get("content-type") == r[1][1].get("content-type") and "content-length" in r[0][1]
        check(ok, "HEAD %s: GET's status and type, no body: %r" % (path, data[:600]))
        if ok and path not in ("/health", "/metrics", "/nope"):  # bodies the same for both
            check(int(r[0][1]["content-length"]) == len(r[1][2]), "HEAD %s: GET's Content-Length" % path)
    st, h, b = one(o.port, request("HEAD", "/jobs/0123456789abcdef0123456789abcdef/events", headers=close),
                   heads=(0,))
    check(st == 404 and b == b"", "HEAD of an unknown job's events: 404, no body: %s %r" % (st, b))
    # OPTIONS: 204 with Allow, no key needed, no CORS fields when cors_origins is not set
    for path, allow in (("/v1/chat/completions", "POST, OPTIONS"), ("/v1/models", "GET, HEAD, OPTIONS"),
                        ("/jobs/abc/events", "GET, HEAD, OPTIONS"), ("/health", "GET, HEAD, OPTIONS")):
        st, h, b = one(o.port, request("OPTIONS", path, headers=dict(close, Origin="http://page.invalid"),
                                       key=False))
        check(st == 204 and h.get("allow") == allow and b == b"" and "content-length" not in h
              and not any(k.startswith("access-control-") for k in h),
              "OPTIONS %s: 204, Allow %s, no CORS: %s %r" % (path, allow, st, h))
    st, h, b = one(o.port, request("OPTIONS", "/nope", headers=close))
    check(st == 404 and error_ok(b, "NOT_FOUND"), "OPTIONS of no route: 404: %s" % b[:200])
    # what evhttp would answer with an HTML page
    st, h, b = one(o.port, request("PROPFIND", "/v1/models", headers=close))
    check(st == 501 and error_ok(b, "NOT_IMPLEMENTED"), "an unknown method: 501 JSON: %s %s" % (st, b[:200]))
    st, h, b = one(o.port, request("POST", "/cancel", b'{"job_id":"x"}', headers=dict(close, Expect="x-y")))
    check(st == 417 and error_ok(b, "EXPECTATION_FAILED"), "Expect x-y: 417 JSON: %s %s" % (st, b[:200]))
    # a pipelined HEAD, OPTIONS and GET: each answered in order
    r = responses(raw(o.port, request("HEAD", "/v1/models") + request("OPTIONS", "/v1/models")
                      + request("GET", "/v1/models", headers=close)), heads=(0,))
    check([x[0] for x in r] == [200, 204, 200] and json.loads(r[2][2])["object"] == "list",
          "HEAD, OPTIONS, GET pipelined: %r" % r)


def model_get(o, name, key=KEY):
    st, h, b = one(o.port, request("GET", "/v1/models/" + name, headers={
        "Connection": "close", "Authorization": "Bearer " + key}))
    try:
        return st, json.loads(b)
    except ValueError:
        return st, b


def model_retrieve(o):
    """GET /v1/models/{id}: the object, before and after a load; 404s; keys' model limits."""
    size = os.path.getsize(MODEL)
    st, m = model_get(o, "a")
    check(st == 200 and m.get("id") == "a" and m.get("object") == "model" and m.get("owned_by") == "orch"
          and isinstance(m.get("created"), int) and m.get("state") == "ready", "a: the model object: %r" % m)
    if st == 200:
        check(m["context_length"] and m["context_length"] > 0 and m["max_context_length"] >= m["context_length"]
              and m["file_size_bytes"] == size and m["quant_kind"] == "F32" and m["architecture"] == "llama",
              "a: context lengths, file size, quant kind, architecture: %r" % m)
    st, lst = 0, {}
    end = time.time() + 10
    while time.time() < end:  # b's file is read off the loop when orchd starts
        st, b_ = model_get(o, "b")
        if st != 200 or b_.get("file_size_bytes"):
            break
        time.sleep(0.05)
    check(st == 200 and b_.get("state") == "stopped" and b_.get("context_length") is None
          and b_.get("file_size_bytes") == size and b_.get("architecture") == "llama"
          and b_.get("max_context_length") == m.get("max_context_length"),
          "b, never started: what its file says, no loaded context: %r" % b_)
    for name in ("no-such-model", "a%2Fb", "A"):
        st, e = model_get(o, name)
        check(st == 404 and error_ok(json.dumps(e), "MODEL_NOT_FOUND") and e["error"]["param"] == "model",
              "%s: 404 MODEL_NOT_FOUND: %s %r" % (name, st, e))
    st, e = model_get(o, "a", key=KEY_B)
    check(st == 404 and error_ok(json.dumps(e), "MODEL_NOT_FOUND"), "a key limited to b: a is not found: %r" % e)
    st, b_ = model_get(o, "b", key=KEY_B)
    check(st == 200 and b_.get("id") == "b", "a key limited to b: b is there")
    st, h, body = one(o.port, request("GET", "/v1/models", headers={"Connection": "close",
                                                                   "Authorization": "Bearer " + KEY_B}))
    ids = [x["id"] for x in json.loads(body)["data"]] if st == 200 else []
    check(ids == ["b"], "the list of a key limited to b: %r" % ids)
    st, h, body = one(o.port, request("GET", "/v1/models", headers={"Connection": "close"}))
    lst = {x["id"]: x for x in json.loads(body)["data"]} if st == 200 else {}
    check(lst.get("a") == m, "the list has the same objects: %r" % lst.get("a"))


def access_lines(o, since=0):
    """{fields} of the http_access lines of @o's log after its first @since bytes."""
    out = []
    for line in o.log_text()[since:].splitlines():
        if "event=http_access " in line:
            out.append(dict(f.split("=", 1) for f in line.split(" ")[1:] if "=" in f))
    return out


def wait_lines(o, since, n, timeout=10):
    end = time.time() + timeout
    while time.time() < end and len(access_lines(o, since)) < n:
        time.sleep(0.05)
    return access_lines(o, since)


def access_log(o):
    """One line per request, with what an operator needs and nothing a client sent in a body."""
    close = {"Connection": "close"}
    since = len(o.log_text())
    got = raw(o.port, request("GET", "/v1/models?secret=s3cr3t", headers=close))
    raw(o.port, request("GET", "/nowhere", headers=close))
    raw(o.port, request("PROPFIND", "/v1/models", headers=close))
    raw(o.port, b"POST /execute HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\n"
        b"Content-Length: 2\r\nConnection: close\r\n\r\nhi")
    raw(o.port, request("GET", "/v1/models", headers=close, key=False))
    body = json.dumps({"job_id": "acc1", "model": "a", "prompt": "zebra-quartz prompt", "max_tokens": 3})
    stream = raw(o.port, request("POST", "/execute", body.encode(), headers=close))
    uid = ""
    for line in stream.decode("latin-1").split("\r\n"):
        if line.lower().startswith("x-job-id:"):
            uid = line.split(":", 1)[1].strip()
    raw(o.port, request("GET", "/jobs/%s/events" % uid, headers=close))
    lines = wait_lines(o, since, 7)
    want = [("GET", "/v1/models", "200"), ("GET", "/nowhere", "404"), ("PROPFIND", "/v1/models", "501"),
            ("POST", "/execute", "415"), ("GET", "/v1/models", "401"), ("POST", "/execute", "200"),
            ("GET", "/jobs/{id}/events", "200")]
    check([(x.get("method"), x.get("path"), x.get("status")) for x in lines] == want,
          "one line per request, in order: %r" % lines)
    if len(lines) == 7:
        check(int(lines[0]["bytes"]) == len(got), "bytes: what was sent (%s, %d)" % (lines[0]["bytes"], len(got)))
        check(all(float(x["ms"]) >= 0 and "end" not in x for x in lines), "ms, no end=: %r" % lines)
        job = lines[5]["job"]
        check(len(job) == 16 and lines[6]["job"] == job and lines[0]["job"] == "-",
              "the stream's line and its resume's name the job's correlation id: %r" % lines[5:])
        check(("event=job_end job=%s" % job) in o.log_text(), "the same id as the job's own line")
    text = o.log_text()[since:]
    check("s3cr3t" not in text and "zebra" not in text and uid and uid not in text,
          "no query, no prompt, no job id in the log")
    # a stream its client leaves: logged when it ends, with the status that went out
    since = len(o.log_text())
    s_ = socket.create_connection(("127.0.0.1", o.port), timeout=5)
    body = json.dumps({"job_id": "acc2", "model": "a", "prompt": "Once", "max_tokens": 2000}).encode()
    s_.sendall(request("POST", "/execute", body))
    got = b""
    while b"event: token" not in got:
        got += s_.recv(65536)
    s_.close()
    lines = wait_lines(o, since, 1)
    check(len(lines) == 1 and lines[0].get("status") == "200" and lines[0].get("end") == "closed"
          and int(lines[0]["bytes"]) >= len(got), "a stream cut by its client: %r" % lines)
    # a head that never ends: cut at header_timeout_s
    since = len(o.log_text())
    s_ = socket.create_connection(("127.0.0.1", o.port), timeout=5)
    s_.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    lines = wait_lines(o, since, 1)
    s_.close()
    check(len(lines) == 1 and lines[0].get("status") == "0" and lines[0].get("end") == "deadline"
          and lines[0].get("path") == "/health", "a head cut at its deadline: %r" % lines)


def cors_of(h):
    return {k: v for k, v in h.items() if k.startswith("access-control-")}


def cors(o):
    """cors_origins = http://localhost:5173, https://ui.invalid"""
    site = "http://localhost:5173"
    close = {"Connection": "close"}
    pre = dict(close, Origin=site, **{"Access-Control-Request-Method": "POST",
                                      "Access-Control-Request-Headers": "authorization, content-type"})
    st, h, b = one(o.port, request("OPTIONS", "/v1/chat/completions", headers=pre, key=False))
    check(st == 204 and b == b"" and h.get("access-control-allow-origin") == site
          and h.get("access-control-allow-methods") == "POST, OPTIONS"
          and h.get("access-control-allow-headers") == "Authorization, Content-Type, Last-Event-ID, X-Deadline"
          and h.get("access-control-max-age") == "600" and h.get("vary") == "Origin",
          "a listed origin's preflight: %s %r" % (st, h))
    st, h, b = one(o.port, request("OPTIONS", "/jobs/abc/events", key=False,
                                   headers=dict(pre, Origin="HTTPS://UI.invalid:443")))
    check(st == 204 and h.get("access-control-allow-origin") == "HTTPS://UI.invalid:443"
          and h.get("access-control-allow-methods") == "GET, HEAD, OPTIONS",
          "the other listed origin, another case and its default port: %r" % h)
    for other in ("http://localhost:5174", "null", "https://localhost:5173"):
        st, h, b = one(o.port, request("OPTIONS", "/v1/chat/completions", key=False,
                                       headers=dict(pre, Origin=other)))
        check(st == 204 and cors_of(h) == {} and h.get("vary") == "Origin",
              "an origin not listed (%s): no CORS fields: %r" % (other, h))
    for method, path, body, key, status in (("GET", "/v1/models", b"", True, 200),
                                            ("GET", "/v1/models", b"", False, 401),
                                            ("GET", "/nope", b"", True, 404),
                                            ("POST", "/cancel", b'{"job_id":"x"}', True, 404),
                                            ("GET", "/health", b"", False, 200)):
        st, h, b = one(o.port, request(method, path, body, key=key, headers=dict(close, Origin=site)))
        check(st == status and h.get("access-control-allow-origin") == site and h.get("vary") == "Origin"
              and "X-Job-Id" in h.get("access-control-expose-headers", ""),
              "%s %s from a listed origin: %s with CORS fields: %r" % (method, path, st, h))
        st, h, b = one(o.port, request(method, path, body, key=key,
                                       headers=dict(close, Origin="http://evil.invalid")))
        check(st == status and cors_of(h) == {}, "%s %s from another origin: no CORS: %r" % (method, path, h))
    body = json.dumps({"job_id": "c1", "model": "a", "prompt": "Once", "max_tokens": 2}).encode()
    data = raw(o.port, request("POST", "/execute", body, headers=dict(close, Origin=site)))
    check(data.startswith(b"HTTP/1.1 200") and b"Access-Control-Allow-Origin: " + site.encode() in data
          and b"event: end" in data, "a stream to a listed origin carries the field: %r" % data[:400])


def chat_page(o):
    """The chat page (http_static.h): /, /chat.js, /chat.css, /favicon.svg without a key, each with its type,
    an ETag (304 to If-None-Match), no-cache, nosniff and a self-only CSP; HEAD; 405."""
    close = {"Connection": "close"}
    types = {"/": "text/html; charset=utf-8", "/chat.js": "text/javascript; charset=utf-8",
             "/chat.css": "text/css; charset=utf-8", "/favicon.svg": "image/svg+xml"}
    for path, t in types.items():
        st, h, b = one(o.port, request("GET", path, headers=close, key=False))
        csp = h.get("content-security-policy", "")
        check(st == 200 and h.get("content-type") == t and len(b) > 100
              and h.get("x-content-type-options") == "nosniff" and h.get("cache-control") == "no-cache"
              and "default-src 'none'" in csp and "connect-src 'self'" in csp and "http" not in csp,
              "GET %s: 200 %s with its fields: %s %r" % (path, t, st, h))
        etag = h.get("etag", "")
        check(len(etag) == 18 and etag[0] == etag[-1] == '"', "GET %s: a strong ETag: %r" % (path, etag))
        for inm in (etag, 'W/%s' % etag, '"other", %s' % etag, "*"):
            st, h2, b = one(o.port, request("GET", path, headers=dict(close, **{"If-None-Match": inm}), key=False))
            check(st == 304 and b == b"" and h2.get("etag") == etag and "content-length" not in h2,
                  "GET %s If-None-Match %s: 304, no body: %s %r" % (path, inm, st, h2))
        st, h2, b = one(o.port, request("GET", path, headers=dict(close, **{"If-None-Match": '"other"'}), key=False))
        check(st == 200 and len(b) > 100, "GET %s with another ETag: 200: %s" % (path, st))
        data = raw(o.port, request("HEAD", path, key=False) + request("GET", path, headers=close, key=False))
        r = responses(data, heads=(0,))
        check(len(r) == 2 and r[0][0] == 200 and r[0][2] == b"" and
              r[0][1].get("content-length") == str(len(r[1][2])), "HEAD %s: GET's head: %r" % (path, r[:1]))
    st, h, b = one(o.port, request("GET", "/", headers=close, key=False))
    check(b'src="/chat.js"' in b and b'href="/chat.css"' in b and b"http" not in b.lower().replace(b"http-equiv", b""),
          "index.html loads only its own files: %r" % b[:300])
    st, h, b = one(o.port, request("POST", "/", b"{}", headers=close, key=False))
    check(st == 405 and h.get("allow") == "GET, HEAD, OPTIONS" and error_ok(b, "METHOD_NOT_ALLOWED"),
          "POST /: 405 with Allow: %s %r" % (st, h.get("allow")))
    for path in ("/index.html", "/chat.js/", "/web/chat.js"):
        st, h, b = one(o.port, request("GET", path, headers=close))
        check(st == 404 and error_ok(b, "NOT_FOUND"), "GET %s is no file of the page: %s" % (path, st))


def cors_any():
    """cors_origins = *: any origin gets "*"; a request without Origin gets no CORS field.
    (access_log = no: no access line.)"""
    o = Orchd("cors_origins = *\naccess_log = no\nchat_page = no\n", seed=2, models=False)
    try:
        st, h, b = one(o.port, request("OPTIONS", "/v1/models", key=False,
                                       headers={"Connection": "close", "Origin": "https://any.invalid",
                                                "Access-Control-Request-Method": "GET"}))
        check(st == 204 and h.get("access-control-allow-origin") == "*"
              and h.get("access-control-allow-methods") == "GET, HEAD, OPTIONS", "*: preflight: %r" % h)
        st, h, b = one(o.port, request("GET", "/health", key=False, headers={"Connection": "close"}))
        check(st == 200 and cors_of(h) == {}, "*: no Origin, no CORS field: %r" % h)
        raw(o.port, request("GET", "/nowhere", headers={"Connection": "close"}))
        time.sleep(0.2)
        check(access_lines(o) == [], "access_log = no: no line: %r" % access_lines(o))
        for path in ("/", "/chat.js"):
            st, h, b = one(o.port, request("GET", path, headers={"Connection": "close"}))
            check(st == 404 and error_ok(b, "NOT_FOUND"), "chat_page = no: GET %s is 404: %s" % (path, st))
    finally:
        o.stop()


o = Orchd("header_timeout_s = 1\n")
try:
    routes(o)
    chat_page(o)
    model_retrieve(o)
    access_log(o)
finally:
    o.stop()

o = Orchd("cors_origins = http://localhost:5173, https://ui.invalid\n", seed=1)
try:
    cors(o)
finally:
    o.stop()
cors_any()

print("orchd_http_edge_test: %d passed, %d failed" % (orchd_lib.passed, orchd_lib.failed))
sys.exit(1 if orchd_lib.failed else 0)
