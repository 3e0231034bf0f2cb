#!/usr/bin/env python3
"""Independent numpy forward pass (float64) of a qwen3moe GGUF compared with a golden's step-0
and step-1 logits, rounding what llama.cpp's CPU path rounds (as gen-qwen3/ref_forward.py: Q, K,
V and the softmax weights to f16 in attention; activations to Q8_0 before a Q8_0 product).
It also prints the routing's smallest margin: over every token of every case and layer, the
gap between the last chosen expert's probability and the best unchosen one's, relative to the
former (a router near-tie there could route another implementation differently).
Wrong variants, to show the goldens see them: --no-norm (chosen probabilities not
renormalized), --top-k K (another expert count), --no-qk-norm.
usage: ref_forward.py MODEL.gguf GOLDEN.json [--no-norm] [--top-k K] [--no-qk-norm]"""
import argparse, json
import numpy as np
import gguf

ap = argparse.ArgumentParser()
ap.add_argument("model"); ap.add_argument("golden")
ap.add_argument("--no-norm", action="store_true", help="keep the chosen probabilities as they are")
ap.add_argument("--top-k", type=int, help="use K experts instead of expert_used_count")
ap.add_argument("--no-qk-norm", action="store_true", help="skip the per-head q/k RMSNorm")
a = ap.parse_args()

r = gguf.GGUFReader(a.model)
kv = {f.name: f.contents() for f in r.fields.values()}
W = {t.name: gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float64).reshape([int(x) for x in reversed(t.shape)]) for t in r.tensors}
QT = {t.name: t.tensor_type for t in r.tensors}
P = "qwen3moe."
L, H, HKV = kv[P + "block_count"], kv[P + "attention.head_count"], kv[P + "attention.head_count_kv"]
D, eps, base = kv[P + "attention.key_length"], kv[P + "attention.layer_norm_rms_epsilon"], kv[P + "rope.freq_base"]
NE, K = kv[P + "expert_count"], a.top_k or kv[P + "expert_used_count"]
margins = []

def q8(x, name):  # ggml's Q8_0 products quantize the activations first
    if QT[name] != gguf.GGMLQuantizationType.Q8_0:
        return x
    return gguf.quants.dequantize(gguf.quants.quantize(x.astype(np.float32), gguf.GGMLQuantizationType.Q8_0), gguf.GGMLQuantizationType.Q8_0).astype(np.float64)

def mm(x, name, e=None):
    w = W[name] if e is None else W[name][e]
    return q8(x, name) @ w.T

def h16(x): return x.astype(np.float16).astype(np.float64)

def rms(x, w): return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w

def rope(x, pos):  # NEOX: pairs (i, i + D/2), theta_i = pos * base^(-2i/D)
    ang = pos[:, None] * (base ** (-np.arange(0, D, 2) / D))[None, :]
    c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    x0, x1 = x[..., :D // 2], x[..., D // 2:]
    return np.concatenate([x0 * c - x1 * s, x0 * s + x1 * c], axis=-1)

def moe(h, p):  # softmax over all experts, top K, renormalized, SwiGLU experts summed
    lg = mm(h, p + "ffn_gate_inp.weight")                   # [T, NE]
    pr = np.exp(lg - lg.max(-1, keepdims=True)); pr /= pr.sum(-1, keepdims=True)
    out = np.zeros_like(h)
    for t in range(h.shape[0]):
        order = np.argsort(-pr[t], kind="stable")
        sel = order[:K]
        if K < NE:
            margins.append((pr[t, order[K - 1]] - pr[t, order[K]]) / pr[t, order[K - 1]])
        w = pr[t, sel] / (1.0 if a.no_norm else pr[t, sel].sum())
        for e, we in zip(sel, w):
            g = mm(h[t:t + 1], p + "ffn_gate_exps.weight", e)
            u = mm(h[t:t + 1], p + "ffn_up_exps.weight", e)
            out[t] += we * mm(g / (1 + np.exp(-g)) * u, p + "ffn_down_exps.weight", e)[0]
    return out

def logits(tokens):
    T = len(tokens); pos = np.arange(T, dtype=np.float64)
    x = W["token_embd.weight"][tokens]
    for i in range(L):
        p = f"blk.{i}."
        h = rms(x, W[p + "attn_norm.weight"])
        q = mm(h, p + "attn_q.weight").reshape(T, H, D)
        k = mm(h, p + "attn_k.weight").reshape(T, HKV, D)
        v = mm(h, p + "attn_v.weight").reshape(T, HKV, D)
        if not a.no_qk_norm:
            q, k = rms(q, W[p + "attn_q_norm.weight"]), rms(k, W[p + "attn_k_norm.weight"])
        q, k, v = h16(rope(q, pos)), h16(rope(k, pos)), h16(v)
        o = np.empty((T, H, D))
        for hh in range(H):
            kh = hh // (H // HKV)
            sc = q[:, hh] @ k[:, kh].T / np.sqrt(D)
            sc = np.where(np.tril(np.ones((T, T))) > 0, sc, -np.inf)
            pr = np.exp(sc - sc.max(-1, keepdims=True)); pr /= pr.sum(-1, keepdims=True)
            o[:, hh] = h16(pr) @ v[:, kh]
        x = x + mm(o.reshape(T, H * D), p + "attn_output.weight")
        x = x + moe(rms(x, W[p + "ffn_norm.weight"]), p)
    out = "output.weight" if "output.weight" in W else "token_embd.weight"
    return mm(rms(x[-1:], W["output_norm.weight"]), out)[0]

g = json.load(open(a.golden))
for c in g["cases"]:
    toks = list(c["prompt_tokens"])
    for s in (0, 1):
        margins.clear()
        ref = logits(toks + c["generated_tokens"][:s])
        gl = np.array(c["steps"][s]["logits"])
        print(f"{c['prompt'][:24]!r:28} step {s}: max|ref-llama.cpp| = {np.abs(ref - gl).max():.3g}  "
              f"(logit scale {np.abs(gl).max():.3g}), argmax ref {int(ref.argmax())} llama.cpp {c['steps'][s]['token']}"
              + (f", routing margin {min(margins):.3g}" if margins else ""))
    margins.clear()
    logits(toks + c["generated_tokens"][:-1])  # every token the golden's steps saw
    print(f"{c['prompt'][:24]!r:28} all {len(toks) + len(c['generated_tokens']) - 1} tokens: smallest routing margin {min(margins):.3g}")
