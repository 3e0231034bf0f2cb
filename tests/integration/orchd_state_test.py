#!/usr/bin/env python3
"""orchd_state_test - what orchctl load keeps across restarts (issue 52, A7), on
the repository's own model (a clone alone runs it):

- a model loaded with orchctl that fails before it was ever ready (here a real
  file whose architecture was renamed: the worker refuses it) is kept, not
  loaded: the next orchd does not start it again, and /ready is 200;
- one that fails and is then fixed and loaded again by name is saved loaded and
  comes back after a restart;
- a load whose state file cannot be written (state_dir names a file) is served,
  and orchctl says it will not come back after a restart (an unload or rm, that a restart
  undoes them) instead of a plain
  "ready"."""
import json
import os
import subprocess
import sys
import tempfile
import time

BIN = os.environ["ORCH_BIN"]
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import orchd_lib  # noqa: E402
from orchd_lib import check, get  # noqa: E402
MODEL = os.path.abspath(os.path.join(HERE, "..", "..", "models", "stories260K.gguf"))
tmp = tempfile.mkdtemp()
MODEL_SECTION = '[model "m"]\npath = %s\nslots = 1\ncontext = 128\nthreads = 1\n' % MODEL


def orchctl(sock, *args):
    return subprocess.run([BIN + "/orchctl", "--socket", sock] + list(args), capture_output=True, text=True,
                          timeout=60)


def ready_within(s):
    end = time.time() + s
    while time.time() < end:
        if get("/ready")[0] == 200:
            return True
        time.sleep(0.05)
    return False


# a real model whose architecture no worker knows (general.architecture's value renamed)
bad = os.path.join(tmp, "unknown-arch.gguf")
data = open(MODEL, "rb").read()
at = data.index(b"\x05\x00\x00\x00\x00\x00\x00\x00llama")
open(bad, "wb").write(data[:at + 8] + b"llamz" + data[at + 13:])

state = os.path.join(tmp, "state")
conf = "state_dir = %s\n" % state
o = orchd_lib.OrchdProc(BIN, conf, seed=37, more=lambda t: MODEL_SECTION)
sock = os.path.join(o.tmp, "orchd.sock")
r = orchctl(sock, "load", "bad", bad)
check(r.returncode == 1, "orchctl load of a model the worker refuses fails: %d %r" % (r.returncode, r.stderr[-300:]))
saved = json.load(open(os.path.join(state, "models.json")))
entry = next((x for x in saved["models"] if x.get("name") == "bad"), {})
check(entry.get("loaded") is False, "it is kept, not loaded, in models.json: %r" % entry)
# another that fails, then is fixed and loaded again by name: saved loaded, back after a restart
fixme = os.path.join(tmp, "fixme.gguf")
open(fixme, "wb").write(open(bad, "rb").read())
check(orchctl(sock, "load", "fixme", fixme).returncode == 1, "fixme fails first")
open(fixme, "wb").write(data)
r = orchctl(sock, "load", "fixme")
check(r.returncode == 0, "fixme loads by name once its file is right: %r" % r.stderr[-300:])
saved = json.load(open(os.path.join(state, "models.json")))
entry = next((x for x in saved["models"] if x.get("name") == "fixme"), {})
check(entry.get("loaded") is True, "the retried model is saved loaded: %r" % entry)
o.stop()

# the next orchd on the same state: the failed model stays down, /ready is 200
o = orchd_lib.OrchdProc(BIN, conf, seed=41, more=lambda t: MODEL_SECTION)
sock = os.path.join(o.tmp, "orchd.sock")
check(ready_within(10), "the restarted orchd is ready: %r" % (get("/ready"),))
st = json.loads(orchctl(sock, "status", "--json").stdout)
bad_m = next((x for x in st["models"] if x.get("name") == "bad"), {})
check(bad_m.get("state") == "stopped", "the failed model is known and not started: %r" % bad_m.get("state"))
fix_m = next((x for x in st["models"] if x.get("name") == "fixme"), {})
check(fix_m.get("state") in ("loading", "ready"), "the retried one comes back: %r" % fix_m.get("state"))
o.stop()

# a state file that cannot be written: served, and said
blocker = os.path.join(tmp, "afile")
open(blocker, "w").write("not a directory\n")
o = orchd_lib.OrchdProc(BIN, "state_dir = %s\n" % blocker, seed=43, more=lambda t: MODEL_SECTION)
sock = os.path.join(o.tmp, "orchd.sock")
r = orchctl(sock, "load", "extra", MODEL, "--slots", "1", "--context", "128")
check(r.returncode == 0 and "will not come back after a restart" in r.stderr,
      "a load the state file cannot keep says so: %d %r" % (r.returncode, r.stderr[-300:]))
# ... and so do an unload and a removal (the attack run: both said nothing, and a restart
# undid them)
r = orchctl(sock, "unload", "extra")
check(r.returncode == 0 and "a restart loads it again" in r.stderr,
      "an unload the state file cannot keep says so: %d %r" % (r.returncode, r.stderr[-300:]))
r = orchctl(sock, "rm", "extra")
check(r.returncode == 0 and "a restart brings it back" in r.stderr,
      "a removal the state file cannot keep says so: %d %r" % (r.returncode, r.stderr[-300:]))
o.stop()

# a state file that is a FIFO (the attack run: orchd blocked on its open for ever, deaf to
# SIGTERM): refused as not a regular file, and orchd serves
fifo_dir = os.path.join(tmp, "fifo-state")
os.mkdir(fifo_dir)
os.mkfifo(os.path.join(fifo_dir, "models.json"))
o = orchd_lib.OrchdProc(BIN, "state_dir = %s\n" % fifo_dir, seed=47, more=lambda t: MODEL_SECTION)
check("event=state_read_failed" in o.log_text() and "not a regular file" in o.log_text(),
      "a FIFO for the state file: refused, said: %s" % o.log_text()[-400:])
o.stop()
print("orchd_state_test: %d passed, %d failed" % (orchd_lib.passed, orchd_lib.failed))
sys.exit(1 if orchd_lib.failed else 0)
