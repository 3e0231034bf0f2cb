#!/usr/bin/env python3
"""realmeta_test - models with exactly the metadata llama.cpp's converter
writes, against llama.cpp.

1. Every vocabulary file in ../shared/testdata/vocab is real converter
   output. For each one whose architecture orch runs, orch-synth
   --metadata-from builds a tiny model with that file's key set; the worker
   loads it and generates, and so does orchd (completions and, where the file
   has a template, chat). A vocabulary of another architecture is refused by
   name, by orch-synth and by the worker.
2. The qwen2 and phi3 goldens (SOURCE-realmeta.md): each model is rebuilt
   with orch-synth and must be byte-identical to the file llama.cpp ran
   (sha256); the prompt tokens must be llama.cpp's, the logits of steps 0 and
   1 within the bound derived from llama.cpp's own spread (docs/engine.md,
   "Agreement with llama.cpp"), and the greedy tokens equal up to a step
   whose reference top-1 margin is within twice the error measured on the
   gaps between its top-5 logits (at such a near tie either choice is right,
   and what follows depends on it).

The models are written to a temporary directory one at a time and removed
(the largest is 1.7 GB).

With ORCH_REALMETA_DEVICE=cuda:N only part 2 runs, on that device (exit 77
where it has no CUDA device): the same bounds hold, the device computing the
CPU backend's arithmetic. ORCH_REALMETA_FILES (comma-separated names, e.g.
qwen2-realmeta-q4_k_m), ORCH_REALMETA_CASES (the goldens' case indices, e.g.
1) and ORCH_REALMETA_TOKENS (greedy tokens compared, at most the goldens' 16)
narrow it, for the simulated device where a step of
these files takes a second."""
import hashlib
import http.client
import json
import math
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

BIN = os.environ["ORCH_BIN"]
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import orchd_lib  # noqa: E402
from orchd_lib import check, post, get, admin  # noqa: E402
DATA = orchd_lib.testdata("models/stories260K.gguf", "vocab/ggml-vocab-qwen2.gguf",
                          "vocab/ggml-vocab-phi-3.gguf")
# a clone alone (tests/data): the vocabularies make deps fetches, not gpt-oss's, and no goldens;
# what is left out is named below, the rest runs
LOCAL = DATA == os.path.abspath(orchd_lib.LOCAL_DATA)

PRESETS = {"llama": "tiny-llama", "qwen2": "tiny-qwen2", "phi3": "tiny-phi3", "gpt-oss": "tiny-gpt-oss"}

# (file, preset, quant, seed, sha256 of the file llama.cpp ran, bound on the
# relative L2 error of the logits). Each bound is 1.5 x the largest relative
# L2 distance between llama.cpp's flash and non-flash attention paths on that
# file (steps 0 and 1 of both prompts), measured with llama.cpp de3ff815 on
# the same CPU that wrote the goldens' settings; docs/engine.md has the table.
GOLDENS = [
    ("qwen2-realmeta-f32", "qwen2.5-0.5b", "F32", 1,
     "9cf0809e4a7491959ed83eabd18a31bbd46ebd17a018c98414248f1206aa4e10", 3.0e-3),
    ("qwen2-realmeta-q8_0", "qwen2.5-0.5b", "Q8_0", 1,
     "34471c4896e5226cf01d4af5f98d3df5311df14045e9922eb79fa57ce48798f5", 1.9e-2),
    ("qwen2-realmeta-q4_k_m", "qwen2.5-0.5b", "Q4_K_M", 1,
     "05dba5e3644a1cf557f2d157b5ea51cbe9f62bf936b46c5f2dc1282f2f2a3252", 2.2e-2),
    ("phi3-realmeta-f32", "phi3-mini-4k", "F32", 2,
     "baf04ce92dcd430e745977b846a4d63b1539115d9200bd5c7ed81850e4da85e2", 3.4e-3),
    ("phi3-realmeta-q8_0", "phi3-mini-4k", "Q8_0", 2,
     "6d7435b233c1b6b7b5f38fde4635f3ab6118373a718608150b9241283d3dcfa9", 1.9e-2),
    ("phi3-realmeta-q4_k_m", "phi3-mini-4k", "Q4_K_M", 3,
     "0a115725d9e416bf47bf705dd3dffff36018efa3af86e2db2a752e42b7678826", 2.6e-2),
]
VOCAB_OF = {"qwen2": "ggml-vocab-qwen2.gguf", "phi3": "ggml-vocab-phi-3.gguf"}


def gguf_keys(path, strings=None):
    """[(key, value type)] of a GGUF file's metadata, in file order; the string
    values go into the dict @strings when given."""
    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
    with open(path, "rb") as f:
        magic, _, _, n_kv = struct.unpack("<4sIQQ", f.read(24))
        assert magic == b"GGUF", path

        def string():
            (n,) = struct.unpack("<Q", f.read(8))
            return f.read(n)

        def skip(t):
            if t == 8:
                string()
            elif t == 9:
                et, n = struct.unpack("<IQ", f.read(12))
                if et == 8:
                    for _ in range(n):
                        string()
                else:
                    f.seek(n * sizes[et], 1)
            else:
                f.seek(sizes[t], 1)

        out = []
        for _ in range(n_kv):
            key = string().decode()
            (t,) = struct.unpack("<I", f.read(4))
            if t == 8 and strings is not None:
                strings[key] = string().decode(errors="replace")
            else:
                skip(t)
            out.append((key, t))
        return out


def run(*args, timeout=600):
    return subprocess.run(list(args), capture_output=True, text=True, timeout=timeout)


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def rel_l2(got, want):
    num = math.sqrt(sum((a - b) ** 2 for a, b in zip(got, want)))
    return num / math.sqrt(sum(b * b for b in want))


DEVICE = os.environ.get("ORCH_REALMETA_DEVICE", "cpu")
FILES = [f for f in os.environ.get("ORCH_REALMETA_FILES", "").split(",") if f]
TOKENS = int(os.environ.get("ORCH_REALMETA_TOKENS", "16"))
CASES = [int(c) for c in os.environ.get("ORCH_REALMETA_CASES", "").split(",") if c]
if FILES:
    GOLDENS = [g for g in GOLDENS if g[0] in FILES]
    if len(GOLDENS) != len(FILES):
        print("ORCH_REALMETA_FILES names a file with no golden: %s" % FILES)
        sys.exit(1)

tmp = tempfile.mkdtemp()
if DEVICE != "cpu":
    r = run(BIN + "/orch-worker", "run", "--model", os.path.join(DATA, "models", "stories260K.gguf"),
            "--device", DEVICE, "--prompt", "x", "-n", "1")
    if r.returncode != 0 and "no CUDA device" in r.stderr:
        print("SKIP: %s: %s" % (DEVICE, r.stderr.strip().splitlines()[-1]))
        sys.exit(77)

# ---- 1. every real vocabulary's metadata ----
models = {}
for name in sorted(os.listdir(os.path.join(DATA, "vocab")) if DEVICE == "cpu" else []):
    if not name.endswith(".gguf"):
        continue
    vocab = os.path.join(DATA, "vocab", name)
    strings = {}
    keys = gguf_keys(vocab, strings)
    arch = strings["general.architecture"]
    label = name[len("ggml-vocab-"):-len(".gguf")]
    out = os.path.join(tmp, label + ".gguf")
    if arch not in PRESETS:
        # gpt2: no preset of that architecture, and the worker refuses it by name
        r = run(BIN + "/orch-synth", "--preset", "tiny-llama", "--quant", "Q8_0",
                "--metadata-from", vocab, "-o", out)
        check(r.returncode == 1 and "general.architecture is" in r.stderr,
              "%s: orch-synth refuses another architecture: %s" % (name, r.stderr.strip()))
        r = run(BIN + "/orch-worker", "run", "--model", vocab, "--prompt", "x", "-n", "1")
        check(r.returncode == 1 and
              "is not supported (supported: llama, qwen2, qwen3, qwen3moe, gemma3, mistral3, phi3, gpt-oss)" in r.stderr,
              "%s: the worker refuses its architecture by name: %s" % (name, r.stderr.strip()))
        continue
    r = run(BIN + "/orch-synth", "--preset", PRESETS[arch], "--quant", "Q8_0", "--seed", "4",
            "--metadata-from", vocab, "-o", out)
    check(r.returncode == 0, "%s: orch-synth --metadata-from: %s" % (name, r.stderr.strip()))
    if r.returncode != 0:
        continue
    got = gguf_keys(out)
    check(got == keys, "%s: the model has the real file's keys, order and types (%d vs %d keys)"
          % (name, len(got), len(keys)))
    check(not any(k.startswith("orch.") for k, _ in got), "%s: no orch.* keys" % name)
    r = run(BIN + "/orch-worker", "run", "--model", out, "--prompt", "Hello world", "-n", "4",
            "--temperature", "0", "--format", "jsonl", "--context", "128")
    lines = r.stdout.strip().splitlines()
    end = json.loads(lines[-1]) if r.returncode == 0 and lines else {}
    check(end.get("tokens_out") == 4, "%s (%s): the worker generates: %s" % (name, arch, r.stderr[-300:]))
    models[label] = (out, any(k == "tokenizer.chat_template" for k, _ in keys))
WANT = ["gpt-oss", "llama-spm", "phi-3", "qwen2"]
if LOCAL:
    absent = [v for v in WANT if not os.path.exists(os.path.join(DATA, "vocab", "ggml-vocab-%s.gguf" % v))]
    if absent:
        print("left out: the vocabularies %s, which only the shared test data has" % absent, flush=True)
    WANT = [v for v in WANT if v not in absent]
check(DEVICE != "cpu" or sorted(models) == WANT, "models built: %s" % sorted(models))

# the qwen2 file lacks rope.dimension_count, which the loader derives (head size 64)
if "qwen2" in models:
    qkeys = [k for k, _ in gguf_keys(models["qwen2"][0])]
    check("qwen2.rope.dimension_count" not in qkeys and "qwen2.vocab_size" not in qkeys,
          "the qwen2 model has no rope.dimension_count or vocab_size, as the converter writes")

# ... and through orchd: completions for each, chat where the file has a template
def through_orchd():
    port = orchd_lib.free_port(os.getpid() + 7)
    orchd_lib.PORT = port
    orchd_lib.ADMIN = os.path.join(tmp, "orchd.sock")
    conf = os.path.join(tmp, "orchd.conf")
    with open(conf, "w") as f:
        f.write("[server]\nlisten = 127.0.0.1:%d\nadmin_socket = %s\nruntime_dir = %s\n\n"
                % (port, orchd_lib.ADMIN, tmp))
        for label, (path, _) in sorted(models.items()):
            f.write('[model "%s"]\npath = %s\nslots = 1\ncontext = 256\nthreads = 1\n\n' % (label, path))
    log = open(os.path.join(tmp, "orchd.log"), "w")
    orchd = subprocess.Popen([BIN + "/orchd", "--config", conf], stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 60
    ready = []
    while time.time() < deadline:
        try:
            ws = json.loads(admin("GET", "/admin/workers")[1])
            ready = [w["model"] for w in ws if w["state"] == "ready"]
            if len(ready) == len(models):
                break
        except (OSError, ValueError):
            pass
        time.sleep(0.1)
    check(sorted(ready) == sorted(models), "orchd: every worker ready: %s" % ready)
    st, _, text = get("/v1/models")
    check(st == 200 and all(m in text for m in models), "orchd: /v1/models lists them: %s" % text[:200])
    for label, (_, has_template) in sorted(models.items()):
        st, _, text = post("/v1/completions", {"model": label, "prompt": "Hello world",
                                               "max_tokens": 4, "temperature": 0})
        body = json.loads(text) if st == 200 else {}
        check(st == 200 and body.get("usage", {}).get("completion_tokens") == 4,
              "orchd: %s completes: %d %s" % (label, st, text[:200]))
        if has_template:
            st, _, text = post("/v1/chat/completions",
                               {"model": label, "messages": [{"role": "user", "content": "Hi"}],
                                "max_tokens": 3, "temperature": 0})
            body = json.loads(text) if st == 200 else {}
            check(st == 200 and body.get("usage", {}).get("completion_tokens", 0) >= 1,
                  "orchd: %s chats with its template: %d %s" % (label, st, text[:200]))
    orchd.terminate()
    check(orchd.wait(20) == 0, "orchd exits 0")
    for path, _ in models.values():
        os.unlink(path)


if DEVICE == "cpu":
    through_orchd()

# ---- 2. the qwen2 and phi3 goldens ----
for name, preset, quant, seed, want_sha, bound in GOLDENS:
    family = name.split("-")[0]
    model = os.path.join(tmp, name + ".gguf")
    r = run(BIN + "/orch-synth", "--preset", preset, "--layers", "2", "--quant", quant,
            "--seed", str(seed), "--metadata-from", os.path.join(DATA, "vocab", VOCAB_OF[family]),
            "-o", model)
    check(r.returncode == 0, "%s: orch-synth: %s" % (name, r.stderr.strip()))
    if r.returncode != 0:
        continue
    check(sha256(model) == want_sha, "%s: byte-identical to the file llama.cpp ran" % name)
    gpath = os.path.join(DATA, "models", "golden-%s.json" % name)
    if LOCAL and not os.path.exists(gpath):
        print("%s: logits and tokens left out: golden-%s.json is the shared test data's only"
              % (name, name), flush=True)
        os.unlink(model)
        continue
    golden = json.load(open(gpath))
    for ci, case in enumerate(golden["cases"]):
        if CASES and ci not in CASES:
            continue
        prompt = os.path.join(tmp, "prompt")
        with open(prompt, "w") as f:
            f.write(case["prompt"])
        logits = os.path.join(tmp, "logits.json")
        n_gen = min(TOKENS, len(case["generated_tokens"]))
        r = run(BIN + "/orch-worker", "run", "--model", model, "--device", DEVICE,
                "--prompt-file", prompt, "-n", str(n_gen), "--temperature", "0",
                "--format", "jsonl", "--dump-logits", "2", logits, timeout=1200)
        if r.returncode != 0:
            check(False, "%s case %d: run failed: %s" % (name, ci, r.stderr[-300:]))
            continue
        lines = [json.loads(x) for x in r.stdout.strip().splitlines()]
        ids = [x["id"] for x in lines[:-1]]
        check(lines[-1]["prompt_tokens"] == case["n_prompt_tokens"],
              "%s case %d: %d prompt tokens, llama.cpp %d" % (name, ci, lines[-1]["prompt_tokens"],
                                                            case["n_prompt_tokens"]))
        lg = json.load(open(logits))
        # errs: relative L2 per step; gap_err: how far the gap between two of the
        # reference's top 5 moved, the error that can swap a greedy choice
        errs, abs_err, gap_err = [], 0.0, 0.0
        for step in range(2):
            want = case["steps"][step]["logits"]
            errs.append(rel_l2(lg[step], want))
            abs_err = max(abs_err, max(abs(a - b) for a, b in zip(lg[step], want)))
            top = [t for t, _ in case["steps"][step]["top5"]]
            for a in top:
                for b in top:
                    gap_err = max(gap_err, abs((lg[step][a] - lg[step][b]) - (want[a] - want[b])))
        check(max(errs) < bound, "%s case %d: logits rel L2 %s within %.1e"
              % (name, ci, ["%.2e" % e for e in errs], bound))
        # Tokens agree step by step; one may differ only where the reference's
        # top-1 margin is within twice the gap error (a near tie either way),
        # and the steps after it depend on that choice.
        matched = 0
        for step, s in enumerate(case["steps"][:n_gen]):
            if step < len(ids) and ids[step] == s["token"]:
                matched += 1
                continue
            margin = s["top5"][0][1] - s["top5"][1][1]
            check(margin <= 2 * gap_err, "%s case %d: step %d token %s, llama.cpp %d (margin %.4f)"
                  % (name, ci, step, ids[step] if step < len(ids) else None, s["token"], margin))
            break
        print("%s case %d on %s: %d prompt tokens, logits rel L2 %.2e/%.2e (bound %.1e), max abs "
              "%.4f, top-5 gap error %.4f, %d/%d greedy tokens equal"
              % (name, ci, DEVICE, case["n_prompt_tokens"], errs[0], errs[1], bound, abs_err, gap_err,
                 matched, n_gen), flush=True)
    os.unlink(model)

shutil.rmtree(tmp, ignore_errors=True)
print("realmeta_test: %d passed, %d failed" % (orchd_lib.passed, orchd_lib.failed))
sys.exit(1 if orchd_lib.failed else 0)
