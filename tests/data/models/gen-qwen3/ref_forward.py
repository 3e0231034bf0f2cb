#!/usr/bin/env python3
"""Independent numpy forward pass of a qwen3 GGUF (float64) compared with a golden's step-0 and
step-1 logits. By default it rounds what llama.cpp's CPU attention (F16 KV cache, no flash
attention) rounds to f16: K and V (the cache), Q and the softmax probabilities (ggml converts
the second operand of an f16 mul_mat to f16); and for Q8_0 weights it quantizes the activations
to Q8_0 first, as ggml's CPU Q8_0 matmul does.
usage: ref_forward.py MODEL.gguf GOLDEN.json [--no-f16] [--no-qk-norm] [--rope-norm]"""
import argparse, json
import numpy as np
import gguf

ap = argparse.ArgumentParser()
ap.add_argument("model"); ap.add_argument("golden")
ap.add_argument("--no-f16", action="store_true", help="no f16 rounding in attention")
ap.add_argument("--no-qk-norm", action="store_true", help="skip the per-head q/k RMSNorm (a wrong model)")
ap.add_argument("--rope-norm", action="store_true", help="adjacent-pair RoPE instead of NEOX (a wrong model)")
a = ap.parse_args()

r = gguf.GGUFReader(a.model)
kv = {f.name: f.contents() for f in r.fields.values()}
W = {t.name: gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float64).reshape([int(x) for x in reversed(t.shape)]) for t in r.tensors}
L, H, HKV = kv["qwen3.block_count"], kv["qwen3.attention.head_count"], kv["qwen3.attention.head_count_kv"]
D, eps, base = kv["qwen3.attention.key_length"], kv["qwen3.attention.layer_norm_rms_epsilon"], kv["qwen3.rope.freq_base"]

QT = {t.name: t.tensor_type for t in r.tensors}

def mm(x, name):
    if QT[name] == gguf.GGMLQuantizationType.Q8_0:
        x = gguf.quants.dequantize(gguf.quants.quantize(x.astype(np.float32), gguf.GGMLQuantizationType.Q8_0), gguf.GGMLQuantizationType.Q8_0).astype(np.float64)
    return x @ W[name].T

def h16(x): return x if a.no_f16 else x.astype(np.float16).astype(np.float64)

def rms(x, w): return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w

def rope(x, pos):  # x [T, heads, D]
    inv = base ** (-np.arange(0, D, 2) / D)            # theta_i = pos * base^(-2i/D)
    ang = pos[:, None] * inv[None, :]                   # [T, D/2]
    c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    if a.rope_norm:                                     # pairs (2i, 2i+1)
        x0, x1 = x[..., 0::2], x[..., 1::2]; y = np.empty_like(x)
        y[..., 0::2], y[..., 1::2] = x0 * c - x1 * s, x0 * s + x1 * c; return y
    x0, x1 = x[..., :D // 2], x[..., D // 2:]           # NEOX: pairs (i, i + D/2)
    return np.concatenate([x0 * c - x1 * s, x0 * s + x1 * c], axis=-1)

def logits(tokens):
    T = len(tokens); pos = np.arange(T, dtype=np.float64)
    x = W["token_embd.weight"][tokens]
    for i in range(L):
        p = f"blk.{i}."
        h = rms(x, W[p + "attn_norm.weight"])
        q = (mm(h, p + "attn_q.weight")).reshape(T, H, D)
        k = (mm(h, p + "attn_k.weight")).reshape(T, HKV, D)
        v = (mm(h, p + "attn_v.weight")).reshape(T, HKV, D)
        if not a.no_qk_norm:                            # per-head RMSNorm over D, before RoPE, same eps
            q, k = rms(q, W[p + "attn_q_norm.weight"]), rms(k, W[p + "attn_k_norm.weight"])
        q, k = rope(q, pos), rope(k, pos)
        q, k, v = h16(q), h16(k), h16(v)
        o = np.empty((T, H, D))
        for hh in range(H):
            kh = hh // (H // HKV)                       # GQA: q head h uses kv head h // (H/HKV)
            sc = q[:, hh] @ k[:, kh].T / np.sqrt(D)
            sc = np.where(np.tril(np.ones((T, T))) > 0, sc, -np.inf)
            pr = np.exp(sc - sc.max(-1, keepdims=True)); pr /= pr.sum(-1, keepdims=True)
            o[:, hh] = h16(pr) @ v[:, kh]
        x = x + mm(o.reshape(T, H * D), p + "attn_output.weight")
        h = rms(x, W[p + "ffn_norm.weight"])
        g, u = mm(h, p + "ffn_gate.weight"), mm(h, p + "ffn_up.weight")
        x = x + mm(g / (1 + np.exp(-g)) * u, p + "ffn_down.weight")
    return mm(rms(x[-1:], W["output_norm.weight"]), "output.weight" if "output.weight" in W else "token_embd.weight")[0]

g = json.load(open(a.golden))
for c in g["cases"]:
    toks = list(c["prompt_tokens"])
    for s in (0, 1):
        ref = logits(toks + c["generated_tokens"][:s])
        gl = np.array(c["steps"][s]["logits"])
        print(f"{c['prompt'][:24]!r:28} step {s}: max|ref-llama.cpp| = {np.abs(ref - gl).max():.3g}  "
              f"(logit scale {np.abs(gl).max():.3g}), argmax ref {int(ref.argmax())} llama.cpp {c['steps'][s]['token']}")
