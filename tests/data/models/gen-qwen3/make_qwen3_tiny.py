#!/usr/bin/env python3
"""Write a tiny random-weight qwen3 GGUF with llama.cpp's gguf-py, keys in the order
llama.cpp's convert_hf_to_gguf.py (Qwen3Model) writes them for a Qwen3ForCausalLM checkpoint.
usage: make_qwen3_tiny.py OUT.gguf [--seed N] [--untied SEED] [--q8_0] [--qk-norm-ones]"""
import argparse, re, sys
from pathlib import Path
from collections import Counter
import numpy as np
import gguf

N_LAYER, N_EMBD, N_HEAD, N_HEAD_KV, HEAD_DIM, N_FF = 2, 64, 4, 2, 32, 128
N_CTX, ROPE_BASE, EPS, N_MERGES = 4096, 1e6, 1e-6, 341
# weight std: token_embd (and output) G[0]; linear layers G[i]/sqrt(fan_in) for q, k, v, o, gate+up, down
G = (0.5, 2.0, 2.0, 2.0, 4.0, 2.0, 4.0)
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]  # ids 597, 598, 599

# merges are learned from this text (BPE, most frequent pair first, ties: first seen)
TEXT = """Once upon a time there was a little girl who lived in a village near the forest.
Every morning she walked to the river with her mother to fetch water, and every evening
she sat by the fire and listened to the stories her grandfather told. The stories were
about kings and queens, about dragons that slept under the mountains, and about the
people who were brave enough to go where no one else would go. One day the girl asked
her grandfather whether the stories were true. He smiled and said that the best stories
are always a little bit true, and that the rest is up to the one who tells them.
The model is a small language model. It reads the text, one token at a time, and it
writes the next token. Hello, how are you? I am fine, thank you. What is the time?
It is ten o'clock in the morning, and the sun is shining on the water.
The old lighthouse keeper had lived on the island for almost forty years. Every night he climbed
the narrow stairs, cleaned the great lamp, and watched the ships pass far out on the dark water.
Most of the sailors never knew his name, but they trusted his light more than their own maps.
One stormy evening in late autumn, a small fishing boat lost its way in the fog, and the keeper
saw it drifting toward the rocks. He rang the bell, waved his lantern, and shouted until his
voice was gone. When the morning came, the boat was safe in the harbor, and the young captain
walked up the hill to thank him."""

def bytes_to_unicode():  # GPT-2's byte -> printable unicode map, in GPT-2's id order
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b); cs.append(256 + n); n += 1
    return list(zip(bs, map(chr, cs)))

def learn_merges(text, n):
    b2u = dict(bytes_to_unicode())
    # ASCII approximation of the qwen2 pre-tokenizer split
    words = re.findall(r"'(?:[sStTmMdD]|ll|ve|re)|[^\r\n\w]?[A-Za-z]+|\d| ?[^\s\w]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+", text)
    seqs = Counter(tuple(b2u[b] for b in w.encode()) for w in words)
    merges = []
    while len(merges) < n:
        pairs = Counter()
        for s, c in seqs.items():
            for p in zip(s, s[1:]):
                pairs[p] += c
        if not pairs:
            break
        best = max(pairs.items(), key=lambda kv: kv[1])[0]  # first max in insertion order
        merges.append(best)
        new = Counter()
        for s, c in seqs.items():
            out, i = [], 0
            while i < len(s):
                if i + 1 < len(s) and (s[i], s[i + 1]) == best:
                    out.append(s[i] + s[i + 1]); i += 2
                else:
                    out.append(s[i]); i += 1
            new[tuple(out)] += c
        seqs = new
    assert len(merges) == n, len(merges)
    return merges

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=2)
    ap.add_argument("--chat-template", default=str(Path(gguf.__file__).resolve().parents[2] / "models/templates/Qwen-Qwen3-0.6B.jinja"))
    ap.add_argument("--untied", type=int, metavar="SEED", help="add output.weight drawn from default_rng(SEED)")
    ap.add_argument("--q8_0", action="store_true")
    ap.add_argument("--qk-norm-ones", action="store_true", help="check only: q/k norm weights = 1")
    a = ap.parse_args()

    merges = learn_merges(TEXT, N_MERGES)
    tokens = [u for _, u in bytes_to_unicode()] + [x + y for x, y in merges] + SPECIALS
    assert len(set(tokens)) == len(tokens)
    toktypes = [gguf.TokenType.NORMAL] * (len(tokens) - len(SPECIALS)) + [gguf.TokenType.CONTROL] * len(SPECIALS)
    n_vocab = len(tokens)
    eot, im_end = tokens.index("<|endoftext|>"), tokens.index("<|im_end|>")

    # weights: numpy default_rng(seed), drawn in this order; stored as F32
    rng = np.random.default_rng(a.seed)
    f32 = lambda x: np.asarray(x, dtype=np.float32)
    lin = lambda rows, cols, gain: f32(rng.normal(0.0, gain / np.sqrt(cols), size=(rows, cols)))  # numpy (rows=out, cols=in)
    norm = lambda n: f32(rng.normal(1.0, 0.1, size=n))
    T = {}
    T["token_embd.weight"] = f32(rng.normal(0.0, G[0], size=(n_vocab, N_EMBD)))
    for i in range(N_LAYER):
        p = f"blk.{i}."
        T[p + "attn_norm.weight"] = norm(N_EMBD)
        T[p + "attn_q.weight"] = lin(N_HEAD * HEAD_DIM, N_EMBD, G[1])
        T[p + "attn_k.weight"] = lin(N_HEAD_KV * HEAD_DIM, N_EMBD, G[2])
        T[p + "attn_v.weight"] = lin(N_HEAD_KV * HEAD_DIM, N_EMBD, G[3])
        T[p + "attn_output.weight"] = lin(N_EMBD, N_HEAD * HEAD_DIM, G[4])
        T[p + "attn_q_norm.weight"] = norm(HEAD_DIM)
        T[p + "attn_k_norm.weight"] = norm(HEAD_DIM)
        T[p + "ffn_norm.weight"] = norm(N_EMBD)
        T[p + "ffn_gate.weight"] = lin(N_FF, N_EMBD, G[5])
        T[p + "ffn_up.weight"] = lin(N_FF, N_EMBD, G[5])
        T[p + "ffn_down.weight"] = lin(N_EMBD, N_FF, G[6])
    T["output_norm.weight"] = norm(N_EMBD)
    if a.untied is not None:  # own generator: the other tensors equal the tied file's
        T["output.weight"] = f32(np.random.default_rng(a.untied).normal(0.0, G[0], size=(n_vocab, N_EMBD)))
    if a.qk_norm_ones:
        for k in T:
            if k.endswith(("attn_q_norm.weight", "attn_k_norm.weight")):
                T[k] = np.ones_like(T[k])

    ftype = gguf.LlamaFileType.MOSTLY_Q8_0 if a.q8_0 else gguf.LlamaFileType.ALL_F32
    w = gguf.GGUFWriter(a.out, "qwen3")                      # general.architecture
    for name, t in T.items():                                # tensor infos first (as the converter)
        if a.q8_0 and t.ndim == 2:                           # converter --outtype q8_0: 2D -> Q8_0, 1D stays F32
            w.add_tensor(name, gguf.quants.quantize(t, gguf.GGMLQuantizationType.Q8_0), raw_dtype=gguf.GGMLQuantizationType.Q8_0)
        else:
            w.add_tensor(name, t)
    total = sum(t.size for t in T.values())
    # prepare_metadata: set_type, Metadata.set_gguf_meta_model
    w.add_type(gguf.GGUFType.MODEL)
    w.add_name("Qwen3 Tiny Test")
    w.add_size_label(gguf.size_label(total, 0, 0, 0))
    # TextModel.set_gguf_parameters (Qwen2Model/Qwen3Model add nothing for a plain LM)
    w.add_block_count(N_LAYER)
    w.add_context_length(N_CTX)
    w.add_embedding_length(N_EMBD)
    w.add_feed_forward_length(N_FF)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_HEAD_KV)
    w.add_rope_freq_base(ROPE_BASE)
    w.add_layer_norm_rms_eps(EPS)
    w.add_key_length(HEAD_DIM)     # config.json has an explicit head_dim
    w.add_value_length(HEAD_DIM)
    w.add_file_type(ftype)
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    # _set_vocab_gpt2 + SpecialVocab.add_to_gguf (Qwen3 tokenizer_config: eos <|im_end|>,
    # pad <|endoftext|>, bos null, add_bos_token false; config.json bos_token_id = <|endoftext|>)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2")
    w.add_token_list(tokens)
    w.add_token_types(toktypes)
    w.add_token_merges([x + " " + y for x, y in merges])
    w.add_eos_token_id(im_end)
    w.add_pad_token_id(eot)
    w.add_bos_token_id(eot)
    w.add_add_bos_token(False)
    with open(a.chat_template, encoding="utf-8") as f:
        w.add_chat_template(f.read())
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"{a.out}: n_vocab={n_vocab} params={total}", file=sys.stderr)

if __name__ == "__main__":
    main()
