#!/usr/bin/env python3
"""orchd_http_hard_test - orchd's HTTP edge under hostile clients (issue 16),
each case against a real orchd (no models: every case is answered before a
job would start) through raw sockets, so the bytes on the wire are exactly
the ones written here:

- a JSON body with bytes after its object is refused (400), whitespace is not."""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

BIN = os.environ["ORCH_BIN"]
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import orchd_lib  # noqa: E402
from orchd_lib import check, get  # noqa: E402


class Orchd:
    """One orchd on a free port with [server] keys @conf; @preexec runs in the child."""

    def __init__(self, conf="", preexec=None, seed=0):
        self.tmp = tempfile.mkdtemp()
        self.port = orchd_lib.free_port(os.getpid() * 7 + seed)
        self.log_path = os.path.join(self.tmp, "orchd.log")
        with open(os.path.join(self.tmp, "orchd.conf"), "w") as f:
            f.write("[server]\nlisten = 127.0.0.1:%d\nadmin_socket = %s\nruntime_dir = %s\n%s"
                    % (self.port, os.path.join(self.tmp, "orchd.sock"), self.tmp, conf))
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen([BIN + "/orchd", "--config", os.path.join(self.tmp, "orchd.conf")],
                                     stdout=self.log, stderr=subprocess.STDOUT, preexec_fn=preexec)
        orchd_lib.PORT = self.port
        end = time.time() + 20
        while time.time() < end:
            try:
                if get("/ready")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        check(False, "orchd ready on %d" % self.port)

    def log_text(self):
        if not self.log.closed:
            self.log.flush()
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        if orchd_lib.failed:
            sys.stderr.write(self.log_text()[-4000:])
        shutil.rmtree(self.tmp, ignore_errors=True)


def raw(port, data, timeout=3.0):
    """Send @data on a new connection and read until the peer closes or @timeout: the bytes."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    out = b""
    try:
        s.sendall(data)
        while True:
            b = s.recv(65536)
            if not b:
                break
            out += b
    except (socket.timeout, ConnectionResetError):
        pass
    finally:
        s.close()
    return out


def responses(data):
    """[(status, headers, body)] of the HTTP/1.1 responses in @data (Content-Length framed)."""
    out = []
    while data:
        head, sep, rest = data.partition(b"\r\n\r\n")
        if not sep:
            break
        lines = head.decode("latin-1").split("\r\n")
        hdr = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            hdr[k.strip().lower()] = v.strip()
        n = int(hdr.get("content-length", "0"))
        out.append((int(lines[0].split(" ")[1]), hdr, rest[:n]))
        data = rest[n:]
    return out


def request(method, path, body=b"", headers=None):
    """A request's bytes: Host and (for a body) Content-Type and Content-Length unless given."""
    h = {"Host": "127.0.0.1"}
    if body:
        h["Content-Type"] = "application/json"
        h["Content-Length"] = str(len(body))
    h.update(headers or {})
    head = "%s %s HTTP/1.1\r\n" % (method, path) + "".join("%s: %s\r\n" % kv for kv in h.items())
    return head.encode() + b"\r\n" + body


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
              and b"after its JSON object" in r[0][2], "trailing bytes on %s refused: %r" % (path, r))
    r = responses(raw(o.port, request("POST", "/cancel", b'{"job_id":"zz"} \r\n', {"Connection": "close"})))
    check(len(r) == 1 and r[0][0] == 404 and code_of(r[0][2]) == "JOB_NOT_FOUND",
          "whitespace after the object is fine: %r" % r)


o = Orchd()
try:
    trailing_bytes(o)
finally:
    o.stop()

print("orchd_http_hard_test: %d passed, %d failed" % (orchd_lib.passed, orchd_lib.failed))
sys.exit(1 if orchd_lib.failed else 0)
