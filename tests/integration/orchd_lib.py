"""orchd_lib - what the orchd integration tests share: pass/fail counting,
plain HTTP to the public API on 127.0.0.1:PORT, SSE parsing, and the admin
API on the unix socket ADMIN. A test sets PORT and ADMIN first."""
import atexit
import http.client
import json
import os
import socket
import shutil
import subprocess
import sys
import tempfile

PORT = 0
ADMIN = ""
JSON_CT = {"Content-Type": "application/json"}  # POST bodies must say so (issue 16)
passed = failed = 0


SKIP = 77  # ctest's SKIP_RETURN_CODE for every test (tests/CMakeLists.txt)


LOCAL_DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data")


def testdata(*need):
    """The test data's root: $ORCH_TESTDATA (../shared/testdata) when it is there;
    else, as in a clone with nothing beside it, the repository's tests/data (what
    it carries and what make deps fetches: tests/data/SOURCE.md) when it has every
    file of @need (paths under the root); else the test is skipped, with a line
    naming what it lacks."""
    root = os.environ["ORCH_TESTDATA"]
    if os.path.isdir(root):
        return root
    missing = [n for n in need if not os.path.exists(os.path.join(LOCAL_DATA, n))]
    if not need or missing:
        print("skipped: needs %s of the shared test data: %s is missing, and tests/data "
              "(tests/data/SOURCE.md) does not have it" % (", ".join(missing) or "files", root),
              flush=True)
        sys.exit(SKIP)
    return os.path.abspath(LOCAL_DATA)


def gpt_oss_tiny(tmp=None):
    """A tiny gpt-oss model for checks that do not depend on its weights (harmony,
    tokens, KV sizes, grammars, scripted output): the shared data's
    gpt-oss-tiny-mxfp4.gguf; in a clone alone, orch-synth's tiny-gpt-oss-narrow (the
    same shape) on gpt-oss's real vocabulary, which make deps makes in tests/data,
    written into @tmp (a directory removed at exit when None); None when neither
    is there."""
    root = os.environ.get("ORCH_TESTDATA", "/nonexistent")
    if not os.path.isdir(root):
        root = LOCAL_DATA
    shared = os.path.join(root, "models", "gpt-oss-tiny-mxfp4.gguf")
    if os.path.isfile(shared):
        return shared
    vocab = os.path.join(root, "vocab", "ggml-vocab-gpt-oss.gguf")
    if not os.path.isfile(vocab):
        return None
    if tmp is None:
        tmp = tempfile.mkdtemp()
        atexit.register(shutil.rmtree, tmp, True)
    out = os.path.join(tmp, "gpt-oss-tiny.gguf")
    subprocess.run([os.environ["ORCH_BIN"] + "/orch-synth", "--preset", "tiny-gpt-oss-narrow", "--vocab",
                    vocab, "--seed", "5", "-o", out], check=True, capture_output=True)
    return out


def free_port(seed):
    """A TCP port on 127.0.0.1 that nothing listens on, below Linux's ephemeral
    range (32768-60999), so no client connection of this machine holds it either."""
    for k in range(12000):
        port = 20000 + (seed + k) % 12000
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", port))
            return port
        except OSError:
            pass
        finally:
            s.close()
    raise RuntimeError("no free port in 20000-31999")


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL:", what, file=sys.stderr, flush=True)


# Seconds a request may take: more under the sanitizers, where a constrained request on a
# 152k vocabulary walks its token trie ten times slower (tests/CMakeLists.txt sets it).
HTTP_TIMEOUT = float(os.environ.get("ORCH_TEST_HTTP_TIMEOUT", "30"))


def conn(timeout=None):
    return http.client.HTTPConnection("127.0.0.1", PORT, timeout=timeout or HTTP_TIMEOUT)


def post(path, body, headers=None):
    """POST @body (JSON-encoded unless bytes or str) with Content-Type
    application/json unless @headers names another."""
    c = conn()
    data = body if isinstance(body, (bytes, str)) else json.dumps(body)
    h = dict(JSON_CT)
    h.update(headers or {})
    c.request("POST", path, data, h)
    r = c.getresponse()
    text = r.read().decode()
    c.close()
    return r.status, dict(r.getheaders()), text


def get(path, headers=None):
    c = conn()
    c.request("GET", path, headers=headers or {})
    r = c.getresponse()
    text = r.read().decode()
    c.close()
    return r.status, dict(r.getheaders()), text


def sse_events(text):
    """[(id, event, data)] of an SSE body."""
    out = []
    for block in text.split("\n\n"):
        ev = {"id": None, "event": "message", "data": None}
        for line in block.split("\n"):
            if line.startswith("id: "):
                ev["id"] = int(line[4:])
            elif line.startswith("event: "):
                ev["event"] = line[7:]
            elif line.startswith("data: "):
                ev["data"] = line[6:]
        if ev["data"] is not None:
            out.append(ev)
    return out


def admin(method, path, body=None):
    s = socket.socket(socket.AF_UNIX)
    s.connect(ADMIN)
    c = http.client.HTTPConnection("localhost")
    c.sock = s
    c.request(method, path, json.dumps(body) if body is not None else None)
    r = c.getresponse()
    t = r.read().decode()
    c.close()
    return r.status, t


def start_orchd(bin_dir, tmp, conf, env=None, ready_s=20, args=()):
    """Write @conf to TMP/orchd.conf, start orchd on it (its output in TMP/orchd.log,
    @env for its environment, @args more flags) and wait up to @ready_s for /ready;
    (process, log file)."""
    import os
    import subprocess
    import time
    path = os.path.join(tmp, "orchd.conf")
    with open(path, "w") as f:
        f.write(conf)
    log = open(os.path.join(tmp, "orchd.log"), "w")
    p = subprocess.Popen([bin_dir + "/orchd", "--config", path] + list(args), stdout=log,
                         stderr=subprocess.STDOUT, env=env)
    end = time.time() + ready_s
    while time.time() < end:
        try:
            if get("/ready")[0] == 200:
                break
        except OSError:
            pass
        time.sleep(0.05)
    check(get("/ready")[0] == 200, "ready")
    return p, log


def metric(name, labels):
    """The value of the /metrics sample @name whose labels include @labels; 0 if none."""
    _, _, text = get("/metrics")
    for line in text.splitlines():
        if line.startswith(name + "{") and all('%s="%s"' % kv in line for kv in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def stop_orchd(p, log, tmp):
    """Kill orchd if it still runs, print the end of its log when a check failed, remove @tmp."""
    import os
    import shutil
    if p.poll() is None:
        p.kill()
        p.wait()
    log.close()
    if failed:
        sys.stderr.write("".join(l for l in open(os.path.join(tmp, "orchd.log")) if "load_progress" not in l)[-8000:])
    shutil.rmtree(tmp, ignore_errors=True)


class OrchdProc:
    """One orchd on a free port (from @seed) with its own temporary directory: a
    [server] section with listen, admin_socket and runtime_dir, then @conf, then
    what @more(tmp) returns (key files it writes there, model sections); @preexec
    runs in the child. Waits up to @ready_s for /ready and points PORT at it."""

    def __init__(self, bin_dir, conf="", seed=0, preexec=None, ready_s=20, more=None):
        import os
        import subprocess
        import tempfile
        global PORT
        self.tmp = tempfile.mkdtemp()
        self.port = free_port(os.getpid() * 7 + seed)
        self.log_path = os.path.join(self.tmp, "orchd.log")
        path = os.path.join(self.tmp, "orchd.conf")
        with open(path, "w") as f:
            f.write("[server]\nlisten = 127.0.0.1:%d\nadmin_socket = %s\nruntime_dir = %s\n%s\n%s"
                    % (self.port, os.path.join(self.tmp, "orchd.sock"), self.tmp, conf,
                       more(self.tmp) if more else ""))
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen([bin_dir + "/orchd", "--config", path], stdout=self.log,
                                     stderr=subprocess.STDOUT, preexec_fn=preexec)
        PORT = self.port
        self._wait_ready(ready_s)

    def _wait_ready(self, ready_s):
        import time
        end = time.time() + ready_s
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

    def stop(self, wait_s=15):
        import shutil
        import subprocess
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(wait_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        if failed:
            sys.stderr.write(self.log_text()[-6000:])
        shutil.rmtree(self.tmp, ignore_errors=True)


def request(method, path, body=b"", headers=None, key=None):
    """A request's bytes: Host, Authorization when @key is given, and for a body its
    Content-Type and Content-Length, unless @headers says otherwise."""
    h = {"Host": "127.0.0.1"}
    if key:
        h["Authorization"] = "Bearer " + key
    if body:
        h["Content-Type"] = "application/json"
        h["Content-Length"] = str(len(body))
    h.update(headers or {})
    head = "%s %s HTTP/1.1\r\n" % (method, path) + "".join("%s: %s\r\n" % kv for kv in h.items())
    return head.encode() + b"\r\n" + body


def raw(port, data, timeout=3.0):
    """Send @data on a new connection to @port and read until the peer closes or @timeout:
    the bytes."""
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


def responses(data, heads=()):
    """[(status, headers, body)] of the HTTP/1.1 responses in @data, Content-Length framed;
    those at the indexes in @heads answer a HEAD: no body, whatever Content-Length says."""
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
        n = 0 if len(out) in heads else int(hdr.get("content-length", "0"))
        out.append((int(lines[0].split(" ")[1]), hdr, rest[:n]))
        data = rest[n:]
    return out
