#!/usr/bin/env python3
"""Write a tiny random-weight mistral3 GGUF with llama.cpp's gguf-py, keys in the order
llama.cpp's convert_hf_to_gguf.py writes them (conversion/mistral3.py Ministral3Model, a
LlamaModel) for a Ministral 3 checkpoint (--ministral: YaRN with rope_parameters' yarn keys,
yarn_log_multiplier from mscale_all_dim, attention.temperature_scale from llama_4_scaling_beta;
tied) or a Mistral Small 3.x one (plain RoPE; untied). A tekken-style byte-level BPE vocabulary.
usage: make_mistral3_tiny.py OUT.gguf [--seed N] [--ministral] [--untied SEED] [--q8_0]"""
import argparse, re, sys
from pathlib import Path
from collections import Counter
import numpy as np
import gguf

N_LAYER, N_EMBD, N_HEAD, N_HEAD_KV, HEAD_DIM, N_FF = 3, 64, 4, 2, 32, 128
EPS, N_MERGES = 1e-5, 300
# Ministral 3 (its rope_parameters, small): YaRN by 4 over 16 positions, betas 32 / 1,
# mscale_all_dim 1, llama_4_scaling_beta 0.1; context_length = factor * original
YARN_FACTOR, YARN_ORIG, BETA_FAST, BETA_SLOW, LOG_MUL, TEMP_SCALE = 4.0, 16, 32.0, 1.0, 1.0, 0.1
# weight std: token_embd (and output) G[0]; linear layers G[i]/sqrt(fan_in) for q, k, v, o, gate+up, down
G = (0.5, 2.0, 2.0, 2.0, 4.0, 2.0, 4.0)
# tekken's first ids (Ministral 3's tokenizer.json order), all CONTROL
SPECIALS = ["<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
            "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[TOOL_CALLS]", "[IMG]", "<pad>", "[IMG_BREAK]",
            "[IMG_END]", "[PREFIX]", "[MIDDLE]", "[SUFFIX]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]",
            "[TOOL_CONTENT]"]

# merges are learned from this text (BPE, most frequent pair first, ties: first seen)
TEXT = """Once upon a time there was a little girl who lived in a village near the forest.
Every morning she walked to the river with her mother to fetch water, and every evening
she sat by the fire and listened to the stories her grandfather told. The stories were
about kings and queens, about dragons that slept under the mountains, and about the
people who were brave enough to go where no one else would go. One day the girl asked
her grandfather whether the stories were true. He smiled and said that the best stories
are always a little bit true, and that the rest is up to the one who tells them.
You are a helpful assistant. Hello, how are you? I am fine, thank you. What is the time?
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
    # ASCII form of the tekken pre-tokenizer split (no contractions, single digits)
    words = re.findall(r"[^\r\n\w]?[A-Z]*[a-z]+|[^\r\n\w]?[A-Z]+[a-z]*|\d| ?[^\s\w]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+", text)
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

def weights(seed, n_vocab, untied):
    rng = np.random.default_rng(seed)  # drawn in this order; stored as F32
    f32 = lambda x: np.asarray(x, dtype=np.float32)
    lin = lambda rows, cols, gain: f32(rng.normal(0.0, gain / np.sqrt(cols), size=(rows, cols)))  # numpy (rows=out, cols=in)
    norm = lambda n: f32(rng.normal(1.0, 0.1, size=n))
    T = {"token_embd.weight": f32(rng.normal(0.0, G[0], size=(n_vocab, N_EMBD)))}
    for i in range(N_LAYER):
        p = f"blk.{i}."
        T[p + "attn_norm.weight"] = norm(N_EMBD)
        T[p + "attn_q.weight"] = lin(N_HEAD * HEAD_DIM, N_EMBD, G[1])
        T[p + "attn_k.weight"] = lin(N_HEAD_KV * HEAD_DIM, N_EMBD, G[2])
        T[p + "attn_v.weight"] = lin(N_HEAD_KV * HEAD_DIM, N_EMBD, G[3])
        T[p + "attn_output.weight"] = lin(N_EMBD, N_HEAD * HEAD_DIM, G[4])
        T[p + "ffn_norm.weight"] = norm(N_EMBD)
        T[p + "ffn_gate.weight"] = lin(N_FF, N_EMBD, G[5])
        T[p + "ffn_up.weight"] = lin(N_FF, N_EMBD, G[5])
        T[p + "ffn_down.weight"] = lin(N_EMBD, N_FF, G[6])
    T["output_norm.weight"] = norm(N_EMBD)
    if untied is not None:  # own generator: the other tensors equal the tied file's
        T["output.weight"] = f32(np.random.default_rng(untied).normal(0.0, G[0], size=(n_vocab, N_EMBD)))
    return T

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--ministral", action="store_true", help="Ministral 3: YaRN and the query temperature")
    ap.add_argument("--rope-base", type=float, default=1e6)
    ap.add_argument("--chat-template", default=None)
    ap.add_argument("--untied", type=int, metavar="SEED", help="add output.weight drawn from default_rng(SEED)")
    ap.add_argument("--q8_0", action="store_true")
    a = ap.parse_args()
    tmpl = a.chat_template or str(Path(gguf.__file__).resolve().parents[2] / "models/templates" /
                                  ("mistralai-Ministral-3-14B-Reasoning-2512.jinja" if a.ministral
                                   else "Mistral-Small-3.2-24B-Instruct-2506.jinja"))

    merges = learn_merges(TEXT, N_MERGES)
    tokens = SPECIALS + [u for _, u in bytes_to_unicode()] + [x + y for x, y in merges]
    assert len(set(tokens)) == len(tokens)
    toktypes = [gguf.TokenType.CONTROL] * len(SPECIALS) + [gguf.TokenType.NORMAL] * (len(tokens) - len(SPECIALS))
    n_vocab = len(tokens)
    T = weights(a.seed, n_vocab, a.untied)

    ftype = gguf.LlamaFileType.MOSTLY_Q8_0 if a.q8_0 else gguf.LlamaFileType.ALL_F32
    w = gguf.GGUFWriter(a.out, "mistral3")                   # general.architecture
    for name, t in T.items():                                # tensor infos first (as the converter)
        if a.q8_0 and t.ndim == 2:                           # converter --outtype q8_0: 2D -> Q8_0, 1D stays F32
            w.add_tensor(name, gguf.quants.quantize(t, gguf.GGMLQuantizationType.Q8_0), raw_dtype=gguf.GGMLQuantizationType.Q8_0)
        else:
            w.add_tensor(name, t)
    total = sum(t.size for t in T.values())
    # prepare_metadata: set_type, Metadata.set_gguf_meta_model
    w.add_type(gguf.GGUFType.MODEL)
    w.add_name("Mistral3 Tiny Test")
    w.add_size_label(gguf.size_label(total, 0, 0, 0))
    # TextModel.set_gguf_parameters
    w.add_block_count(N_LAYER)
    w.add_context_length(int(YARN_FACTOR) * YARN_ORIG if a.ministral else 4096)
    w.add_embedding_length(N_EMBD)
    w.add_feed_forward_length(N_FF)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_HEAD_KV)
    if a.ministral:  # rope_parameters.rope_type yarn
        w.add_rope_scaling_type(gguf.RopeScalingType.YARN)
        w.add_rope_scaling_factor(YARN_FACTOR)
        w.add_rope_scaling_orig_ctx_len(YARN_ORIG)
        w.add_rope_scaling_yarn_beta_fast(BETA_FAST)
        w.add_rope_scaling_yarn_beta_slow(BETA_SLOW)
    w.add_rope_freq_base(a.rope_base)
    w.add_layer_norm_rms_eps(EPS)
    w.add_key_length(HEAD_DIM)     # config.json has an explicit head_dim
    w.add_value_length(HEAD_DIM)
    w.add_file_type(ftype)
    # LlamaModel.set_gguf_parameters
    w.add_vocab_size(n_vocab)
    w.add_rope_dimension_count(HEAD_DIM)
    if a.ministral:  # Ministral3Model.set_gguf_parameters (model_type ministral3)
        w.add_rope_scaling_yarn_log_mul(LOG_MUL)
        w.add_attn_temperature_scale(TEMP_SCALE)
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    # _set_vocab_gpt2 (pre-tokenizer detected as tekken) + SpecialVocab.add_to_gguf
    # (tokenizer_config: bos <s>, eos </s>, unk <unk>, pad <pad>, add_bos_token true)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("tekken")
    w.add_token_list(tokens)
    w.add_token_types(toktypes)
    w.add_token_merges([x + " " + y for x, y in merges])
    w.add_bos_token_id(tokens.index("<s>"))
    w.add_eos_token_id(tokens.index("</s>"))
    w.add_unk_token_id(tokens.index("<unk>"))
    w.add_pad_token_id(tokens.index("<pad>"))
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    with open(tmpl, encoding="utf-8") as f:
        w.add_chat_template(f.read())
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"{a.out}: n_vocab={n_vocab} params={total}", file=sys.stderr)

if __name__ == "__main__":
    main()
