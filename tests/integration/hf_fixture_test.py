#!/usr/bin/env python3
"""hf_fixture_test - the Hugging Face stand-in the model-store tests use
(hf_fixture.py, issue 21) answers as the real endpoints do, checked with a
plain HTTP client: the repository listing (recursive or not, a directory,
LFS entries with their sha256 and size), resolve's 302 to the content host
with X-Linked-Size / X-Linked-Etag / X-Repo-Commit and a small file served
in place, Range requests (206, 416), a revision by branch or commit, the
errors (404 RepoNotFound / RevisionNotFound / EntryNotFound, a gated
repository's 401 and 403) and the faults (a transfer cut mid-file the first
time only, corrupt bytes)."""
import hashlib
import http.client
import json
import os
import sys
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import orchd_lib  # noqa: E402
from hf_fixture import HfFixture  # noqa: E402
from orchd_lib import check  # noqa: E402

BIG = bytes(range(256)) * 1024  # 256 KiB: several chunks


def get(base, path, headers=None, method="GET"):
    u = urllib.parse.urlsplit(base)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
    c.request(method, path, headers=headers or {})
    r = c.getresponse()
    try:
        body = r.read()
    except http.client.IncompleteRead as e:
        body = e.partial
    c.close()
    return r.status, {k.lower(): v for k, v in r.getheaders()}, body


def main():
    repos = {
        "org/m-GGUF": {"files": {"m-Q4_K_M.gguf": BIG, "m-Q8_0.gguf": b"q8" * 100, "README.md": b"# m\n",
                                 "split/m-00001-of-00002.gguf": b"a" * 10, "split/m-00002-of-00002.gguf": b"b" * 7},
                       "faults": {"m-Q4_K_M.gguf": {"cut_after": 100000}, "m-Q8_0.gguf": {"corrupt": True}}},
        "org/gated": {"files": {"g.gguf": b"g" * 10}, "gated": "hf_secret"},
    }
    sha = hashlib.sha256(BIG).hexdigest()
    with HfFixture(repos) as hf:
        st, _, body = get(hf.hub, "/api/models/org/m-GGUF/tree/main")
        top = json.loads(body) if st == 200 else []
        paths = sorted(e["path"] for e in top)
        check(st == 200 and paths == ["README.md", "m-Q4_K_M.gguf", "m-Q8_0.gguf", "split"],
              "listing, not recursive: files and a directory: %s" % paths)
        q4 = [e for e in top if e["path"] == "m-Q4_K_M.gguf"]
        check(q4 and q4[0]["lfs"] == {"oid": sha, "size": len(BIG), "pointerSize": 134} and q4[0]["size"] == len(BIG),
              "an LFS entry carries the file's sha256 and size: %s" % q4)
        readme = [e for e in top if e["path"] == "README.md"]
        check(readme and "lfs" not in readme[0] and len(readme[0]["oid"]) == 40, "a small file has a git oid only")
        st, _, body = get(hf.hub, "/api/models/org/m-GGUF/tree/main?recursive=true")
        check(st == 200 and len(json.loads(body)) == 5, "recursive: every file, no directory entries")
        st, _, body = get(hf.hub, "/api/models/org/m-GGUF/tree/main/split")
        check(st == 200 and [e["path"] for e in json.loads(body)] ==
              ["split/m-00001-of-00002.gguf", "split/m-00002-of-00002.gguf"], "a directory's listing")
        commit = hashlib.sha1(b"org/m-GGUF").hexdigest()
        st, _, _ = get(hf.hub, "/api/models/org/m-GGUF/tree/%s" % commit)
        check(st == 200, "a revision by its commit")

        st, h, body = get(hf.hub, "/org/m-GGUF/resolve/main/m-Q4_K_M.gguf")
        check(st == 302 and h.get("x-linked-size") == str(len(BIG)) and h.get("x-linked-etag") == '"%s"' % sha
              and h.get("x-repo-commit") == commit and h.get("location", "").startswith(hf.cdn + "/blobs/" + sha),
              "resolve: 302 to the content host with size, sha256 and commit: %d %s" % (st, h))
        loc = urllib.parse.urlsplit(h.get("location", ""))
        blob = loc.path + "?" + loc.query
        st, h, body = get(hf.hub, "/org/m-GGUF/resolve/main/README.md")
        check(st == 200 and body == b"# m\n", "resolve of a small file: its bytes in place")
        st, h, body = get(hf.cdn, blob)
        check(st == 200 and 0 < len(body) < len(BIG), "the first transfer is cut mid-file: %d of %d" % (len(body), len(BIG)))
        st, h, rest = get(hf.cdn, blob, {"Range": "bytes=%d-" % len(body)})
        check(st == 206 and body + rest == BIG and h.get("content-range") ==
              "bytes %d-%d/%d" % (len(body), len(BIG) - 1, len(BIG)), "resumed with a Range: the rest, 206")
        check(hf.ranges[-1] == "bytes=%d-" % len(body), "the Range asked is recorded: %s" % hf.ranges)
        st, h, _ = get(hf.cdn, blob, {"Range": "bytes=%d-" % len(BIG)})
        check(st == 416 and h.get("content-range") == "bytes */%d" % len(BIG), "a Range past the end: 416")
        st, h, body = get(hf.cdn, blob, method="HEAD")
        check(st == 200 and h.get("content-length") == str(len(BIG)) and body == b"", "HEAD: the size, no body")
        st, h, _ = get(hf.hub, "/org/m-GGUF/resolve/main/m-Q8_0.gguf")
        loc = urllib.parse.urlsplit(h.get("location", ""))
        st, _, body = get(hf.cdn, loc.path)
        check(st == 200 and hashlib.sha256(body).hexdigest() != hashlib.sha256(b"q8" * 100).hexdigest(),
              "a corrupt file's bytes do not match its listed sha256")

        for path, code, xcode in (("/api/models/org/nope/tree/main", 404, "RepoNotFound"),
                                  ("/api/models/org/m-GGUF/tree/v9", 404, "RevisionNotFound"),
                                  ("/org/m-GGUF/resolve/main/none.gguf", 404, "EntryNotFound"),
                                  ("/org/gated/resolve/main/g.gguf", 401, "GatedRepo")):
            st, h, body = get(hf.hub, path)
            check(st == code and h.get("x-error-code") == xcode, "%s: %d %s: %d %s" % (path, code, xcode, st, h))
        st, _, body = get(hf.hub, "/org/gated/resolve/main/g.gguf", {"Authorization": "Bearer wrong"})
        check(st == 403 and b"not in the authorized list" in body, "a token the gate does not take: 403")
        st, _, _ = get(hf.hub, "/org/gated/resolve/main/g.gguf", {"Authorization": "Bearer hf_secret"})
        check(st == 302, "the gate's token: the file")
    print("hf_fixture_test: %d passed, %d failed" % (orchd_lib.passed, orchd_lib.failed))
    return 1 if orchd_lib.failed else 0


if __name__ == "__main__":
    sys.exit(main())
