"""hf_fixture - a local stand-in for the Hugging Face endpoints a model
puller uses (issue 21), so that the tests never touch the network.

Two HTTP servers on 127.0.0.1, as the real service has two hosts:

- the hub (the API and `resolve`):
  GET /api/models/ORG/REPO/tree/REV[/DIR][?recursive=true]
      the repository's files: [{"type": "file", "oid", "size", "path",
      "lfs": {"oid": SHA256, "size", "pointerSize"}}] (lfs only for .gguf
      files, as an LFS-tracked repository has them); directories as
      {"type": "directory", "oid", "size": 0, "path"} without recursion;
  GET|HEAD /ORG/REPO/resolve/REV/PATH
      an LFS file: 302 to the content host, with X-Repo-Commit,
      X-Linked-Size and X-Linked-Etag ("SHA256"), as the real one sends;
      another file: 200 with its bytes;
  errors as the real service words them: 404 with X-Error-Code
  RepoNotFound, RevisionNotFound or EntryNotFound; a gated repository
  401 without a token ("Access to model ORG/REPO is restricted...") and 403
  with a token it does not accept (X-Error-Code GatedRepo);
- the content host: GET|HEAD /blobs/SHA256 with Range (206 and
  Content-Range, 416 past the end).

Faults, per file, for the cases a puller must survive: "cut_after" closes
the connection after that many body bytes (the first `cut_times` requests
only, so a resume can finish), "corrupt" serves other bytes than the
listing's sha256 (a checksum the puller must refuse), "slow" sleeps per
64 KiB, "extra" appends that many bytes to what is served (more than the
listing says), "no_range" answers a Range request with 200 and the whole
file. A repository's "listing_body" (bytes) replaces its tree listing (a
broken or hostile hub), its "commit" may be any string (X-Repo-Commit
as sent), and its "page" (a number) splits the listing into pages of that
many entries, each with a Link header to the next (the real API's cursor). Counters say what was asked (requests per path, Range headers
seen) so a test can check that a resume asked for the rest only.

Use: `with HfFixture({"org/repo": {"files": {"m-Q4_K_M.gguf": b"..."}}}) as
hf:` then hf.hub (the endpoint URL) and hf.cdn; or run it as a script with
a JSON manifest (files as paths) for a manual try."""
import hashlib
import http.server
import json
import socketserver
import threading
import time
import urllib.parse

CHUNK = 65536


def _git_oid(data):
    """The git blob id of @data (what the API's "oid" is for a non-LFS file)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        """A client that went away mid-transfer (a killed pull) is not the fixture's error."""
        import sys
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


def _handler(serve):
    """A request handler class whose GET and HEAD call @serve(handler, head)."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_HEAD(self):
            serve(self, head=True)

        def do_GET(self):
            serve(self, head=False)

    return Handler


class HfFixture:
    """The two servers over @repos: {"ORG/REPO": {"files": {PATH: bytes},
    "revision": "main", "commit": 40 hex, "gated": TOKEN or None,
    "faults": {PATH: {"cut_after": N, "cut_times": 1, "corrupt": True,
    "slow": SECONDS}}}}."""

    def __init__(self, repos):
        self.repos = {}
        self.blobs = {}
        self.requests = {}
        self.ranges = []
        self.lock = threading.Lock()
        for name, r in repos.items():
            files = {p: (d if isinstance(d, bytes) else open(d, "rb").read()) for p, d in r["files"].items()}
            entry = dict(r, files=files, sha={p: hashlib.sha256(d).hexdigest() for p, d in files.items()})
            entry.setdefault("revision", "main")
            entry.setdefault("commit", hashlib.sha1(name.encode()).hexdigest())
            entry.setdefault("faults", {})
            self.repos[name] = entry
            for p, d in files.items():
                self.blobs[entry["sha"][p]] = (name, p, d)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def start(self):
        self._hub_srv = _Server(("127.0.0.1", 0), _handler(self._hub))
        self._cdn_srv = _Server(("127.0.0.1", 0), _handler(self._cdn))
        for s in (self._hub_srv, self._cdn_srv):
            threading.Thread(target=s.serve_forever, daemon=True).start()
        self.hub = "http://127.0.0.1:%d" % self._hub_srv.server_address[1]
        self.cdn = "http://127.0.0.1:%d" % self._cdn_srv.server_address[1]

    def stop(self):
        for s in (self._hub_srv, self._cdn_srv):
            s.shutdown()
            s.server_close()

    def _count(self, path):
        with self.lock:
            self.requests[path] = self.requests.get(path, 0) + 1
            return self.requests[path]

    @staticmethod
    def _send(h, code, body=b"", ctype="application/json", headers=None, head=False):
        h.send_response(code)
        h.send_header("Content-Type", ctype)
        h.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.end_headers()
        if not head:
            h.wfile.write(body)

    def _error(self, h, code, xcode, msg, head):
        self._send(h, code, json.dumps({"error": msg}).encode(), headers={"X-Error-Code": xcode}, head=head)

    def _repo(self, h, name, rev, head):
        """The repository @name at @rev, or None with the error sent (gating included)."""
        r = self.repos.get(name)
        if r is None:
            self._error(h, 404, "RepoNotFound", "Repository not found", head)
            return None
        if r.get("gated"):
            auth = h.headers.get("Authorization", "")
            if not auth:
                self._error(h, 401, "GatedRepo", "Access to model %s is restricted. You must have access "
                            "to it and be authenticated to access it. Please log in." % name, head)
                return None
            if auth != "Bearer " + r["gated"]:
                self._error(h, 403, "GatedRepo", "Access to model %s is restricted and you are not in the "
                            "authorized list." % name, head)
                return None
        if rev not in (r["revision"], r["commit"]):
            self._error(h, 404, "RevisionNotFound", "Invalid rev id: %s" % rev, head)
            return None
        return r

    def _hub(self, h, head):
        url = urllib.parse.urlsplit(h.path)
        parts = [urllib.parse.unquote(p) for p in url.path.split("/")]
        self._count(url.path)
        if len(parts) >= 7 and parts[1:3] == ["api", "models"] and parts[5] == "tree":
            return self._tree(h, parts[3] + "/" + parts[4], parts[6], "/".join(parts[7:]),
                              urllib.parse.parse_qs(url.query), head)
        if len(parts) >= 6 and parts[3] == "resolve":
            return self._resolve(h, parts[1] + "/" + parts[2], parts[4], "/".join(parts[5:]), head)
        self._error(h, 404, "EntryNotFound", "Not found", head)

    def _tree(self, h, name, rev, under, query, head):
        r = self._repo(h, name, rev, head)
        if r is None:
            return
        if r.get("listing_body") is not None:
            return self._send(h, 200, r["listing_body"], head=head)
        recursive = query.get("recursive", ["false"])[0].lower() in ("1", "true")
        prefix = under + "/" if under else ""
        out, dirs = [], set()
        for p, d in sorted(r["files"].items()):
            if not p.startswith(prefix):
                continue
            rest = p[len(prefix):]
            if "/" in rest and not recursive:
                dirs.add(prefix + rest.split("/")[0])
                continue
            e = {"type": "file", "oid": _git_oid(d), "size": len(d), "path": p}
            if p.endswith(".gguf"):
                e["lfs"] = {"oid": r["sha"][p], "size": len(d), "pointerSize": 134}
                e["oid"] = _git_oid(b"version https://git-lfs.github.com/spec/v1\noid sha256:%s\nsize %d\n"
                                    % (r["sha"][p].encode(), len(d)))
            out.append(e)
        out += [{"type": "directory", "oid": _git_oid(d.encode()), "size": 0, "path": d} for d in sorted(dirs)]
        if under and not out:
            return self._error(h, 404, "EntryNotFound", "%s does not exist on \"%s\"" % (under, rev), head)
        links = {}
        if r.get("page"):  # the real API's pagination: a cursor, and a Link header to the next page
            at = int(query.get("cursor", ["0"])[0] or 0)
            if at + r["page"] < len(out):
                q = dict((k, v[0]) for k, v in query.items())
                q["cursor"] = str(at + r["page"])
                links["Link"] = '<%s%s?%s>; rel="next"' % (self.hub, urllib.parse.urlsplit(h.path).path,
                                                          urllib.parse.urlencode(q))
            out = out[at:at + r["page"]]
        self._send(h, 200, json.dumps(out).encode(), headers=links, head=head)

    def _resolve(self, h, name, rev, path, head):
        r = self._repo(h, name, rev, head)
        if r is None:
            return
        if path not in r["files"]:
            return self._error(h, 404, "EntryNotFound", "Entry not found", head)
        d, sha = r["files"][path], r["sha"][path]
        common = {"X-Repo-Commit": r["commit"], "ETag": '"%s"' % sha}
        if not path.endswith(".gguf"):
            return self._send(h, 200, d, "application/octet-stream", common, head)
        common.update({"Location": "%s/blobs/%s?name=%s" % (self.cdn, sha, urllib.parse.quote(path)),
                       "X-Linked-Size": str(len(d)), "X-Linked-Etag": '"%s"' % sha})
        self._send(h, 302, b"", "text/plain", common, head)

    def _cdn(self, h, head):
        url = urllib.parse.urlsplit(h.path)
        sha = url.path.rsplit("/", 1)[-1]
        if not url.path.startswith("/blobs/") or sha not in self.blobs:
            return self._send(h, 404, b"not found", "text/plain", head=head)
        name, path, data = self.blobs[sha]
        fault = self.repos[name]["faults"].get(path, {})
        n = self._count("/blobs/" + sha)
        if fault.get("corrupt"):
            data = bytes(b ^ 0x55 for b in data)
        if fault.get("extra"):
            data = data + b"\0" * fault["extra"]
        start, end, code = 0, len(data), 200
        rng = None if fault.get("no_range") else h.headers.get("Range")
        if rng:
            with self.lock:
                self.ranges.append(rng)
            unit, _, spec = rng.partition("=")
            try:
                a, b = spec.split("-", 1)
                start, end = int(a), (int(b) + 1 if b.strip() else len(data))
                ok = unit.strip() == "bytes" and 0 <= start < len(data) and end > start
            except ValueError:
                ok = False
            if not ok:
                return self._send(h, 416, b"", "text/plain", {"Content-Range": "bytes */%d" % len(data)}, head)
            end, code = min(end, len(data)), 206
        h.send_response(code)
        h.send_header("Content-Type", "application/octet-stream")
        h.send_header("Content-Length", str(end - start))
        h.send_header("Accept-Ranges", "bytes")
        h.send_header("ETag", '"%s"' % sha)
        if code == 206:
            h.send_header("Content-Range", "bytes %d-%d/%d" % (start, end - 1, len(data)))
        h.end_headers()
        if head:
            return
        cut = fault.get("cut_after") if n <= fault.get("cut_times", 1) else None
        sent, pos = 0, start
        while pos < end:
            k = min(CHUNK, end - pos)
            if cut is not None and sent + k > cut:
                h.wfile.write(data[pos:pos + cut - sent])
                h.wfile.flush()
                h.close_connection = True
                h.connection.shutdown(2)  # mid-transfer: the client sees a short body
                return
            h.wfile.write(data[pos:pos + k])
            sent += k
            pos += k
            if fault.get("slow"):
                time.sleep(fault["slow"])


if __name__ == "__main__":
    import sys
    manifest = json.load(open(sys.argv[1]))
    fx = HfFixture(manifest)
    fx.start()
    print("hub %s cdn %s" % (fx.hub, fx.cdn), flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        fx.stop()
