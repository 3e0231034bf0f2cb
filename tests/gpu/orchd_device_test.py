#!/usr/bin/env python3
"""orchd_device_test.py - orchd serving stories260K on cuda:0, checked by
orchd_gpu.py (a stream, a cancel, the worker killed and restarted): in the
simulated build on the simulated device, NVML's inventory then coming from
the stand-in library (ORCH_FAKE_NVML names it; FAKE_NVML gives it the
simulated device's 4 GiB). Exits 77 where there is no CUDA device."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import orchd_lib  # noqa: E402

DATA = orchd_lib.testdata("models/stories260K.gguf")
BIN = os.environ["ORCH_BIN"]
MODEL = os.path.join(DATA, "models", "stories260K.gguf")

r = subprocess.run([BIN + "/orch-worker", "run", "--model", MODEL, "--device", "cuda:0", "--prompt", "x",
                    "-n", "1"], capture_output=True, text=True)
if r.returncode != 0 and "no CUDA device" in r.stderr:
    print("skipped:", r.stderr.strip().splitlines()[-1])
    sys.exit(orchd_lib.SKIP)

server = ""
fake = os.environ.get("ORCH_FAKE_NVML")
if fake:
    server = "nvml_library = %s\n" % fake
    os.environ["FAKE_NVML"] = "Simulated CUDA device:4096:4096"
o = orchd_lib.OrchdProc(BIN, server, more=lambda tmp: '[model "stories"]\npath = %s\ndevice = cuda:0\n'
                        % MODEL, ready_s=60)
rc = subprocess.run([sys.executable, os.path.join(HERE, "orchd_gpu.py"), str(o.port), o.tmp],
                    timeout=600).returncode
if rc != 0:
    print(o.log_text()[-4000:])
o.stop()
sys.exit(1 if rc != 0 else 0)
