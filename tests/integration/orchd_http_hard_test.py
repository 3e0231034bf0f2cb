#!/usr/bin/env python3
"""orchd_http_hard_test - orchd's HTTP edge under hostile clients (issue 16),
each case against a real orchd (no models: every case is answered before a
job would start) through raw sockets, so the bytes on the wire are exactly
the ones written here:

- a JSON body with bytes after its object is refused (400), whitespace is not;
- request smuggling (item 6): two Content-Length fields, "Transfer-Encoding :",
  Transfer-Encoding with Content-Length, a GET with a body, folded lines and
  bare LF line ends are refused (400) before any handler runs, and the
  connection is closed, so nothing after them is read as a request; chunked
  alone is 411, a body over max_body_bytes 413 (before it is sent), a head
  over max_header_bytes 431; good requests pipelined on one connection are
  all answered;
- browsers (item 10): a POST body that is not application/json is 415
  (charset parameters are fine), a Host orchd does not call its own is 421,
  and allowed_hosts replaces the default list;
- connections (item 1): with the descriptor limit below what the clients
  open, orchd keeps answering on a connection it had, stays near idle (its
  CPU time over seconds), logs a bounded number of lines, counts the refused
  connections, and takes new ones once descriptors are free again;
  max_connections and max_connections_per_client refuse (503) and count; a
  head sent a byte every 100 ms is cut at header_timeout_s (no byte resets
  it), a body likewise at body_timeout_s, an idle connection at
  keepalive_timeout_s."""
import json
import os
import resource
import socket
import sys
import time

BIN = os.environ["ORCH_BIN"]
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import orchd_lib  # noqa: E402
from orchd_lib import check, get  # noqa: E402


def Orchd(conf="", preexec=None, seed=0):
    """One orchd on a free port with [server] keys @conf; @preexec runs in the child."""
    return orchd_lib.OrchdProc(BIN, conf, seed, preexec)


def raw(port, data, timeout=3.0):
    return orchd_lib.raw(port, data, timeout)


responses = orchd_lib.responses


request = orchd_lib.request  # Host, and for a body Content-Type and Content-Length


def code_of(body):
    try:
        return json.loads(body)["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return None


def trailing_bytes(o):
    """Bytes after the JSON object of a body are refused; whitespace after it is not."""
    cases = [("/execute", b'{"job_id":"t1","model":"m","prompt":"hi"} {"job_id":"t2"}'),
             ("/v1/completions", b'{"model":"m","prompt":"x"}\r\nGET / HTTP/1.1'),
             ("/cancel", b'{"job_id":"zz"}x')]
    for path, body in cases:
        r = responses(raw(o.port, request("POST", path, body, {"Connection": "close"})))
        check(len(r) == 1 and r[0][0] == 400 and code_of(r[0][2]) == "INVALID_REQUEST"
              and b"not valid JSON" in r[0][2], "trailing bytes on %s refused: %r" % (path, r))
    r = responses(raw(o.port, request("POST", "/cancel", b'{"job_id":"zz"} \r\n', {"Connection": "close"})))
    check(len(r) == 1 and r[0][0] == 404 and code_of(r[0][2]) == "JOB_NOT_FOUND",
          "whitespace after the object is fine: %r" % r)


def one(o, data, what, status, code, closed=True):
    """@data on a new connection gets exactly one response, @status with @code, then the close."""
    r = responses(raw(o.port, data))
    ok = len(r) == 1 and r[0][0] == status and code_of(r[0][2]) == code
    if ok and closed:
        ok = r[0][1].get("connection") == "close"
    check(ok, "%s: want one %d %s%s, got %r" % (what, status, code, " and a close" if closed else "", r))
    return r


J = b'{"job_id":"smuggle"}'
HIDDEN = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


def head(lines, body=b""):
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


def smuggling(o):
    post = [b"POST /cancel HTTP/1.1", b"Host: 127.0.0.1", b"Content-Type: application/json"]
    one(o, head(post + [b"Content-Length: 5", b"Content-Length: %d" % len(J)], J + HIDDEN),
        "two Content-Length fields (first small)", 400, "INVALID_REQUEST")
    one(o, head(post + [b"Content-Length: %d" % len(J), b"Content-Length: 5"], J + HIDDEN),
        "two Content-Length fields (first right)", 400, "INVALID_REQUEST")
    one(o, head(post + [b"Content-Length: %d, %d" % (len(J), len(J))], J),
        "a Content-Length list", 400, "INVALID_REQUEST")
    one(o, head(post + [b"Content-Length: +%d" % len(J)], J), "a signed Content-Length", 400, "INVALID_REQUEST")
    chunked = b"%x\r\n" % len(J) + J + b"\r\n0\r\n\r\n"
    one(o, head(post + [b"Transfer-Encoding : chunked", b"Content-Length: %d" % len(chunked)], chunked + HIDDEN),
        "'Transfer-Encoding :' with Content-Length", 400, "INVALID_REQUEST")
    one(o, head(post + [b"Transfer-Encoding : chunked"], chunked + HIDDEN),
        "'Transfer-Encoding :' alone", 400, "INVALID_REQUEST")
    one(o, head(post + [b"Transfer-Encoding: chunked", b"Content-Length: 3"], chunked),
        "Transfer-Encoding with Content-Length", 400, "INVALID_REQUEST")
    one(o, head(post + [b"Transfer-Encoding: chunked"], chunked), "chunked alone", 411, "LENGTH_REQUIRED")
    one(o, head(post), "a POST without Content-Length", 411, "LENGTH_REQUIRED")
    one(o, head([b"GET /health HTTP/1.1", b"Host: 127.0.0.1", b"Content-Length: %d" % len(HIDDEN)], HIDDEN),
        "a GET with a body", 400, "INVALID_REQUEST")
    one(o, head(post + [b"X-A: b", b" Transfer-Encoding: chunked", b"Content-Length: %d" % len(J)], J),
        "a folded line", 400, "INVALID_REQUEST")
    one(o, b"POST /cancel HTTP/1.1\nHost: 127.0.0.1\nContent-Type: application/json\nContent-Length: %d\n\n"
        % len(J) + J, "bare LF line ends", 400, "INVALID_REQUEST")
    one(o, head(post + [b"Content-Length: 5000000"]), "a body over max_body_bytes, not sent", 413,
        "PAYLOAD_TOO_LARGE")
    one(o, head([b"GET /health HTTP/1.1", b"Host: 127.0.0.1", b"X-Big: " + b"a" * 20000]),
        "a head over max_header_bytes", 431, "HEADERS_TOO_LARGE")
    # good requests pipelined on one connection: each answered, in order; a bad one after
    # them is answered and closes the connection
    good = request("GET", "/health") + request("POST", "/cancel", J) + request("GET", "/ready")
    r = responses(raw(o.port, good + head([b"GET /ready HTTP/1.1", b"Host: 127.0.0.1", b"Content-Length: 1"], b"x"),
                      timeout=5))
    check([x[0] for x in r] == [200, 404, 200, 400] and code_of(r[1][2]) == "JOB_NOT_FOUND"
          and r[3][1].get("connection") == "close", "pipelined: %r" % [(x[0], x[2][:60]) for x in r])
    st, _, text = get("/metrics")
    check(st == 200 and 'orch_http_responses_total{class="4xx"}' in text, "metrics after the smuggling cases")


def browsers(o):
    for ct in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
               "application/jsonx"):
        r = one(o, request("POST", "/execute", b'{"job_id":"b","model":"m","prompt":"hi"}', {"Content-Type": ct}),
                "Content-Type %s" % ct, 415, "UNSUPPORTED_MEDIA_TYPE")
        check(len(r) == 1 and b"-H 'Content-Type: application/json'" in r[0][2],
              "415 says how to send JSON with curl: %r" % r)
    for ct in ("application/json", "Application/JSON; charset=utf-8"):
        one(o, request("POST", "/execute", b'{"job_id":"b","model":"m","prompt":"hi"}', {"Content-Type": ct,
                                                                                           "Connection": "close"}),
            "Content-Type %s passes the edge" % ct, 404, "MODEL_NOT_FOUND")
    for host in ("rebind.invalid", "rebind.invalid:%d" % o.port, "10.1.2.3"):
        one(o, request("GET", "/health", headers={"Host": host}), "Host %s" % host, 421, "MISDIRECTED_REQUEST")
    for host in ("127.0.0.1", "localhost:%d" % o.port, "[::1]:%d" % o.port):
        r = responses(raw(o.port, request("GET", "/health", headers={"Host": host, "Connection": "close"})))
        check(len(r) == 1 and r[0][0] == 200, "Host %s is ours: %r" % (host, r))
    one(o, b"GET /health HTTP/1.1\r\n\r\n", "HTTP/1.1 without Host", 400, "INVALID_REQUEST")


def cpu_ticks(pid):
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])  # utime + stime


def metric(conn_, name, labels):
    """A sample of /metrics read over @conn_ (an open keep-alive connection)."""
    conn_.request("GET", "/metrics")
    text = conn_.getresponse().read().decode()
    for line in text.splitlines():
        if line.startswith(name + "{" + labels + "}"):
            return float(line.split()[-1])
    return None


def log_lines(o):
    return [l for l in o.log_text().splitlines() if l.strip()]


def fd_exhaustion():
    """Item 1: more connections than descriptors. Before issue 16, accept() failed in a busy
    loop (72 % CPU and 2.9 M log lines in 4 s with 64 descriptors and 200 clients)."""
    import http.client

    limit = 64
    o = Orchd(preexec=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit)), seed=1)
    flood = []
    try:
        ka = http.client.HTTPConnection("127.0.0.1", o.port, timeout=5)
        ka.request("GET", "/health")
        check(ka.getresponse().read() and True, "keep-alive connection up")
        lines0 = len(log_lines(o))
        for _ in range(3 * limit):
            try:
                flood.append(socket.create_connection(("127.0.0.1", o.port), timeout=2))
            except OSError:
                break
        time.sleep(0.3)  # orchd takes what it can, then meets the limit
        t0, c0 = time.time(), cpu_ticks(o.proc.pid)
        time.sleep(2.0)
        cpu = 100.0 * (cpu_ticks(o.proc.pid) - c0) / os.sysconf("SC_CLK_TCK") / (time.time() - t0)
        t1 = time.time()
        ka.request("GET", "/health")
        resp = ka.getresponse()
        resp.read()
        st = resp.status
        took = time.time() - t1
        refused = metric(ka, "orch_http_connections_refused_total", 'reason="descriptors"')
        added = log_lines(o)[lines0:]
        print("fd exhaustion: %d clients, nofile %d: cpu %.1f%%, /health %.3f s, log +%d lines, refused %s"
              % (len(flood), limit, cpu, took, len(added), refused))
        check(len(flood) > limit, "more clients than descriptors: %d" % len(flood))
        check(st == 200 and took < 1.0, "an open connection is still served: %s in %.3f s" % (st, took))
        check(cpu < 20.0, "orchd near idle while out of descriptors: %.1f%% CPU" % cpu)
        check(len(added) <= 10 and any("event=accept_paused" in l for l in added),
              "the log says it once (%d lines): %r" % (len(added), added[:5]))
        check(refused is not None and refused > 0, "refused connections counted: %s" % refused)
        for s_ in flood:
            s_.close()
        flood = []
        time.sleep(0.5)  # orchd sees the closes
        r = responses(raw(o.port, request("GET", "/health", headers={"Connection": "close"})))
        check(len(r) == 1 and r[0][0] == 200, "new connections are taken again: %r" % r)
        check(any("event=accept_resumed" in l for l in log_lines(o)[lines0:]), "the log says when it ended")
        ka.close()
    finally:
        for s_ in flood:
            s_.close()
        o.stop()


def connect_from(port, src):
    s_ = socket.socket()
    s_.bind((src, 0))
    s_.settimeout(3)
    s_.connect(("127.0.0.1", port))
    return s_


def refused_503(s_):
    """Whether the server answered @s_ with a 503 OVERLOADED and closed it, unasked."""
    out = b""
    try:
        while True:
            b = s_.recv(4096)
            if not b:
                break
            out += b
    except (socket.timeout, ConnectionResetError):
        return False
    r = responses(out)
    return len(r) == 1 and r[0][0] == 503 and code_of(r[0][2]) == "OVERLOADED"


def limits(o):
    """max_connections = 6, max_connections_per_client = 4."""
    import http.client

    ka = http.client.HTTPConnection("127.0.0.1", o.port, timeout=5, source_address=("127.0.0.2", 0))
    ka.request("GET", "/health")  # one of the 6
    ka.getresponse().read()
    held = [connect_from(o.port, "127.0.0.1") for _ in range(4)]
    time.sleep(0.2)
    s5 = connect_from(o.port, "127.0.0.1")
    check(refused_503(s5), "a fifth connection from one address is refused (503)")
    held.append(connect_from(o.port, "127.0.0.3"))  # the sixth
    time.sleep(0.2)
    s7 = connect_from(o.port, "127.0.0.3")
    check(refused_503(s7), "a seventh connection is refused (503)")
    ka.request("GET", "/health")
    resp = ka.getresponse()
    resp.read()
    check(resp.status == 200, "the open ones are served")
    per = metric(ka, "orch_http_connections_refused_total", 'reason="max_connections_per_client"')
    tot = metric(ka, "orch_http_connections_refused_total", 'reason="max_connections"')
    check(per == 1 and tot == 1, "refusals counted by reason: %s %s" % (per, tot))
    for s_ in held + [s5, s7]:
        s_.close()
    ka.close()
    time.sleep(0.2)
    r = responses(raw(o.port, request("GET", "/health", headers={"Connection": "close"})))
    check(len(r) == 1 and r[0][0] == 200, "room again once they close: %r" % r)


def closed_after(s_, limit_s):
    """Seconds until the peer closes @s_ (None: not within @limit_s)."""
    t0 = time.time()
    s_.settimeout(0.05)
    while time.time() - t0 < limit_s:
        try:
            if s_.recv(4096) == b"":
                return time.time() - t0
        except socket.timeout:
            pass
        except ConnectionResetError:
            return time.time() - t0
    return None


def drip(port, data, every_s, limit_s):
    """Send @data a byte every @every_s; seconds until orchd closes the connection."""
    s_ = socket.create_connection(("127.0.0.1", port), timeout=3)
    t0 = time.time()
    try:
        for b in data:
            s_.sendall(bytes([b]))
            if closed_after(s_, every_s) is not None:
                return time.time() - t0
            if time.time() - t0 > limit_s:
                return None
        rest = closed_after(s_, limit_s)
        return None if rest is None else time.time() - t0
    except (BrokenPipeError, ConnectionResetError):
        return time.time() - t0
    finally:
        s_.close()


def deadlines(o):
    """header_timeout_s = body_timeout_s = keepalive_timeout_s = 1."""
    import http.client

    ka = http.client.HTTPConnection("127.0.0.1", o.port, timeout=5)
    slow = request("GET", "/health") * 4  # 120 bytes: 12 s a byte every 100 ms
    t = drip(o.port, slow, 0.1, 5)
    check(t is not None and 0.8 < t < 3.0, "a head a byte every 100 ms is cut at 1 s: %s" % t)
    body = b'{"job_id":"' + b"x" * 100 + b'"}'
    s_ = socket.create_connection(("127.0.0.1", o.port), timeout=3)
    whole = request("POST", "/cancel", body)
    s_.sendall(whole[:len(whole) - len(body)])
    t0 = time.time()
    for b in body[:30]:
        try:
            s_.sendall(bytes([b]))
        except OSError:
            break
        if closed_after(s_, 0.1) is not None:
            break
    t = time.time() - t0
    s_.close()
    check(0.8 < t < 3.0, "a body a byte every 100 ms is cut at 1 s: %.2f" % t)
    s_ = socket.create_connection(("127.0.0.1", o.port), timeout=3)
    t = closed_after(s_, 4)
    s_.close()
    check(t is not None and 0.8 < t < 3.0, "a connection that sends nothing is closed at 1 s: %s" % t)
    s_ = socket.create_connection(("127.0.0.1", o.port), timeout=3)
    s_.sendall(request("GET", "/health"))
    got = b""
    while b"\r\n\r\n" not in got:
        got += s_.recv(4096)
    t = closed_after(s_, 4)  # from the response on
    s_.close()
    check(t is not None and 0.8 < t < 3.0, "an idle keep-alive connection is closed at 1 s: %s" % t)
    ka.request("GET", "/metrics")
    text = ka.getresponse().read().decode()
    got = {p: 0.0 for p in ("head", "body", "idle")}
    for line in text.splitlines():
        for p in got:
            if line.startswith('orch_http_deadline_closes_total{phase="%s"}' % p):
                got[p] = float(line.split()[-1])
    check(got["head"] >= 2 and got["body"] >= 1 and got["idle"] >= 1, "deadlines counted: %r" % got)
    ka.close()


def allowed_hosts(o):
    """allowed_hosts = api.internal, 127.0.0.1: a list replaces the defaults."""
    r = responses(raw(o.port, request("GET", "/health", headers={"Host": "API.internal:443",
                                                                  "Connection": "close"})))
    check(len(r) == 1 and r[0][0] == 200, "a listed name: %r" % r)
    one(o, request("GET", "/health", headers={"Host": "localhost"}), "localhost, not listed", 421,
        "MISDIRECTED_REQUEST")


o = Orchd()
try:
    trailing_bytes(o)
    smuggling(o)
    browsers(o)
finally:
    o.stop()

fd_exhaustion()

o = Orchd("max_connections = 6\nmax_connections_per_client = 4\nheader_timeout_s = 1\nbody_timeout_s = 1\n"
          "keepalive_timeout_s = 1\nallowed_hosts = api.internal, 127.0.0.1\n", seed=2)
try:
    limits(o)
    deadlines(o)
    allowed_hosts(o)
finally:
    o.stop()

print("orchd_http_hard_test: %d passed, %d failed" % (orchd_lib.passed, orchd_lib.failed))
sys.exit(1 if orchd_lib.failed else 0)
