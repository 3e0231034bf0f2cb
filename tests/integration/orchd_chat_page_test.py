#!/usr/bin/env python3
"""orchd_chat_page_test - the chat page (issue 18) in a real browser: Debian's
chromium, headless, driven by playwright-core (tests/interop/chat_page.mjs),
against an orchd serving the repository's own models/stories260K.gguf and,
when the shared test data has it, the tiny gpt-oss whose output the worker's
test hook ORCH_FAULT_SCRIPT sets (so its reasoning shows through the page).

Skips (77) when chromium is not installed (ORCH_CHROMIUM, default
/usr/bin/chromium); fails when playwright-core is not ('make deps' installs
both). Screenshots go to ORCH_ARTIFACTS (default: a temporary directory);
their paths are printed."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
INTEROP = os.path.join(HERE, "..", "interop")
BIN = os.environ["ORCH_BIN"]
MODEL = os.path.join(HERE, "..", "..", "models", "stories260K.gguf")
CHROMIUM = os.environ.get("ORCH_CHROMIUM", "/usr/bin/chromium")
SCRIPT = {"Say hello": "<|channel|>analysis<|message|>The user wants a greeting. 👋<|end|>"
                       "<|start|>assistant<|channel|>final<|message|>Hello, world!<|return|>"}
sys.path.insert(0, HERE)
import orchd_lib  # noqa: E402
from orchd_lib import check  # noqa: E402
OSS = orchd_lib.gpt_oss_tiny() or "gpt-oss-tiny-mxfp4.gguf (or gpt-oss's vocabulary)"

if not os.access(CHROMIUM, os.X_OK):
    print("SKIP: no chromium at %s (Debian's chromium package; ORCH_CHROMIUM names another)" % CHROMIUM)
    sys.exit(77)
if not os.path.isdir(os.path.join(INTEROP, "node_modules", "playwright-core")):
    print("orchd_chat_page_test: playwright-core is not installed in tests/interop: run 'make deps'",
          file=sys.stderr)
    sys.exit(1)
oss = os.path.exists(OSS)
if not oss:
    print("orchd_chat_page_test: no %s: gpt-oss's reasoning through orchd is not checked "
          "(the canned stream still is)" % OSS)
out = os.environ.get("ORCH_ARTIFACTS") or tempfile.mkdtemp()
os.makedirs(out, exist_ok=True)


def models(tmp):
    text = "[model \"stories\"]\npath = %s\ndevice = cpu\nslots = 2\nthreads = 1\n" % MODEL
    # the same model with a short context: the page fits a conversation to it
    text += "[model \"small\"]\npath = %s\ndevice = cpu\nslots = 1\nthreads = 1\ncontext = 256\n" % MODEL
    if oss:
        text += "[model \"oss\"]\npath = %s\ndevice = cpu\nslots = 1\n" % OSS
    return text


os.environ["ORCH_FAULT_SCRIPT"] = json.dumps(SCRIPT)  # the workers inherit it (test builds)
o = orchd_lib.OrchdProc(BIN, "", 1800, None, 90, models)
try:
    url = "http://127.0.0.1:%d/" % o.port
    r = subprocess.run(["node", os.path.join(INTEROP, "chat_page.mjs"), CHROMIUM, url, out]
                       + (["oss"] if oss else []), timeout=240)
    check(r.returncode == 0, "chat_page.mjs passed (rc %d)" % r.returncode)
    log = o.log_text()
    check("event=http_access" in log and "path=/chat.js" in log, "the page's requests are in the access log")
finally:
    o.stop()

print("orchd_chat_page_test: %d passed, %d failed" % (orchd_lib.passed, orchd_lib.failed))
sys.exit(1 if orchd_lib.failed else 0)
