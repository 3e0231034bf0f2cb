#!/usr/bin/env python3
"""Write a tiny random-weight gemma3 GGUF with llama.cpp's gguf-py, keys in the order
llama.cpp's convert_hf_to_gguf.py (conversion/gemma.py Gemma3Model -> TextModel) writes them
for a Gemma3ForCausalLM checkpoint with a SentencePiece tokenizer.model.
usage: make_gemma3_tiny.py OUT.gguf [--seed N] [--q8_0] [--rope-linear FACTOR]"""
import argparse, re, sys
from pathlib import Path
from collections import Counter
import numpy as np
import gguf

# 6 layers: the default pattern (6) makes layers 0-4 local (sliding window) and 5 global
N_LAYER, N_EMBD, N_HEAD, N_HEAD_KV, HEAD_DIM, N_FF = 6, 64, 2, 1, 48, 32
N_CTX, ROPE_BASE, ROPE_BASE_SWA, EPS, WINDOW = 32768, 1e6, 1e4, 1e-6, 16
N_VOCAB = 400
# weight std: token_embd G[0]; linear layers G[i]/sqrt(fan_in) for q, k, v, o, gate+up, down
G = (0.25, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0)
POST = 2.0  # post-norm weights around POST: the layers' outputs outweigh the scaled embedding
SP = "\u2581"  # SentencePiece's space
# ids 0-5, then the 256 byte tokens, then the pieces (Gemma 3's tokenizer has the same
# kinds: <pad> <eos> <bos> <unk>, control tokens for turns, <0xXX> bytes, pieces)
SPECIALS = [("<pad>", gguf.TokenType.CONTROL), ("<eos>", gguf.TokenType.CONTROL),
            ("<bos>", gguf.TokenType.CONTROL), ("<unk>", gguf.TokenType.UNKNOWN),
            ("<start_of_turn>", gguf.TokenType.CONTROL), ("<end_of_turn>", gguf.TokenType.CONTROL)]

# pieces are learned from this text (BPE-style merges on words that start with SP, most
# frequent pair first, ties: first seen); each merged piece scores -(its rank)
TEXT = """Once upon a time there was a little girl who lived in a village near the forest.
Every morning she walked to the river with her mother to fetch water, and every evening
she sat by the fire and listened to the stories her grandfather told. The stories were
about kings and queens, about dragons that slept under the mountains, and about the
people who were brave enough to go where no one else would go.
The model is a small language model. The user asks and the model answers. Hello, how are you?
The old lighthouse keeper had lived on the island for almost forty years. Every night he climbed
the narrow stairs, cleaned the great lamp, and watched the ships pass far out on the dark water.
Most of the sailors never knew his name, but they trusted his light more than their own maps.
One stormy evening in late autumn, a small fishing boat lost its way in the fog, and the keeper
saw it drifting toward the rocks. He rang the bell, waved his lantern, and shouted until his
voice was gone."""


def words(text):
    """SentencePiece's view: spaces become SP and start the next word; newlines stand alone."""
    out = []
    for line_no, line in enumerate(text.split("\n")):
        if line_no:
            out.append("\n")
        for i, w in enumerate(line.split(" ")):
            out.append((SP if i else "") + w)
    return [w for w in out if w]


def learn_pieces(text, n):
    seqs = Counter(tuple(w) for w in words(text))
    chars = []
    for w in words(text):
        for c in w:
            if c not in chars:
                chars.append(c)
    merges = []
    while len(merges) < n:
        pairs = Counter()
        for s, c in seqs.items():
            for p in zip(s, s[1:]):
                pairs[p] += c
        if not pairs:
            break
        best = max(pairs.items(), key=lambda kv: kv[1])[0]
        merged = best[0] + best[1]
        new = Counter()
        for s, c in seqs.items():
            out, i = [], 0
            while i < len(s):
                if i + 1 < len(s) and (s[i], s[i + 1]) == best:
                    out.append(merged); i += 2
                else:
                    out.append(s[i]); i += 1
            new[tuple(out)] += c
        seqs = new
        if merged not in merges and merged not in chars:
            merges.append(merged)
    assert len(merges) == n, len(merges)
    return chars, merges


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--chat-template", default=str(Path(gguf.__file__).resolve().parents[2] / "models/templates/google-gemma-2-2b-it.jinja"))
    ap.add_argument("--q8_0", action="store_true")
    ap.add_argument("--rope-linear", type=float, help="rope_scaling {rope_type: linear, factor} (Gemma 3 4B and up: 8)")
    a = ap.parse_args()

    n_fixed = len(SPECIALS) + 256
    chars, _ = learn_pieces(TEXT, 0)
    chars, merges = learn_pieces(TEXT, N_VOCAB - n_fixed - len(chars))
    tokens = [t for t, _ in SPECIALS] + [f"<0x{b:02X}>" for b in range(256)] + chars + merges
    scores = [0.0] * n_fixed + [-1000.0 - i for i in range(len(chars))] + [-float(i) for i in range(len(merges))]
    toktypes = [ty for _, ty in SPECIALS] + [gguf.TokenType.BYTE] * 256 + [gguf.TokenType.NORMAL] * (len(chars) + len(merges))
    assert len(set(tokens)) == len(tokens) == N_VOCAB

    # weights: numpy default_rng(seed), drawn in this order; stored as F32. Norm weights are
    # what the converter writes: Gemma's w + 1 (here drawn around 1 directly)
    rng = np.random.default_rng(a.seed)
    f32 = lambda x: np.asarray(x, dtype=np.float32)
    lin = lambda rows, cols, gain: f32(rng.normal(0.0, gain / np.sqrt(cols), size=(rows, cols)))  # numpy (rows=out, cols=in)
    norm = lambda n, mean=1.0: f32(rng.normal(mean, 0.1 * mean, size=n))
    T = {}
    T["token_embd.weight"] = f32(rng.normal(0.0, G[0], size=(N_VOCAB, N_EMBD)))
    for i in range(N_LAYER):
        p = f"blk.{i}."
        T[p + "attn_norm.weight"] = norm(N_EMBD)
        T[p + "attn_q.weight"] = lin(N_HEAD * HEAD_DIM, N_EMBD, G[1])
        T[p + "attn_k.weight"] = lin(N_HEAD_KV * HEAD_DIM, N_EMBD, G[2])
        T[p + "attn_v.weight"] = lin(N_HEAD_KV * HEAD_DIM, N_EMBD, G[3])
        T[p + "attn_q_norm.weight"] = norm(HEAD_DIM)
        T[p + "attn_k_norm.weight"] = norm(HEAD_DIM)
        T[p + "attn_output.weight"] = lin(N_EMBD, N_HEAD * HEAD_DIM, G[4])
        T[p + "post_attention_norm.weight"] = norm(N_EMBD, POST)
        T[p + "ffn_norm.weight"] = norm(N_EMBD)
        T[p + "ffn_gate.weight"] = lin(N_FF, N_EMBD, G[5])
        T[p + "ffn_up.weight"] = lin(N_FF, N_EMBD, G[5])
        T[p + "ffn_down.weight"] = lin(N_EMBD, N_FF, G[6])
        T[p + "post_ffw_norm.weight"] = norm(N_EMBD, POST)
    T["output_norm.weight"] = norm(N_EMBD)

    ftype = gguf.LlamaFileType.MOSTLY_Q8_0 if a.q8_0 else gguf.LlamaFileType.ALL_F32
    w = gguf.GGUFWriter(a.out, "gemma3")                     # general.architecture
    for name, t in T.items():                                # tensor infos first (as the converter)
        if a.q8_0 and t.ndim == 2:                           # converter --outtype q8_0: 2D -> Q8_0, 1D stays F32
            w.add_tensor(name, gguf.quants.quantize(t, gguf.GGMLQuantizationType.Q8_0), raw_dtype=gguf.GGMLQuantizationType.Q8_0)
        else:
            w.add_tensor(name, t)
    total = sum(t.size for t in T.values())
    # prepare_metadata: set_type, Metadata.set_gguf_meta_model
    w.add_type(gguf.GGUFType.MODEL)
    w.add_name("Gemma3 Tiny Test")
    w.add_size_label(gguf.size_label(total, 0, 0, 0))
    # TextModel.set_gguf_parameters (config.json: rope_theta, rope_local_base_freq, head_dim;
    # rope_scaling only for --rope-linear)
    w.add_block_count(N_LAYER)
    w.add_context_length(N_CTX)
    w.add_embedding_length(N_EMBD)
    w.add_feed_forward_length(N_FF)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_HEAD_KV)
    if a.rope_linear:
        w.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
        w.add_rope_scaling_factor(a.rope_linear)
    w.add_rope_freq_base(ROPE_BASE)
    w.add_rope_freq_base_swa(ROPE_BASE_SWA)
    w.add_layer_norm_rms_eps(EPS)
    w.add_key_length(HEAD_DIM)
    w.add_value_length(HEAD_DIM)
    w.add_file_type(ftype)
    # Gemma3Model.set_gguf_parameters: context_length, head_count, rms eps, key/value length,
    # rope.freq_base and head_count_kv again (gguf-py keeps the first place), then the window
    # (sliding_window_pattern != 1); no final_logit_softcapping (null in Gemma 3's configs)
    w.add_sliding_window(WINDOW)
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    # Gemma3Model.set_vocab: _set_vocab_sentencepiece + SpecialVocab.add_to_gguf
    # (tokenizer_config: bos <bos>, eos <eos>, unk <unk>, pad <pad>, add_bos_token true,
    # add_eos_token false), then add_space_prefix false
    w.add_tokenizer_model("llama")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(toktypes)
    w.add_bos_token_id(tokens.index("<bos>"))
    w.add_eos_token_id(tokens.index("<eos>"))
    w.add_unk_token_id(tokens.index("<unk>"))
    w.add_pad_token_id(tokens.index("<pad>"))
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    with open(a.chat_template, encoding="utf-8") as f:
        w.add_chat_template(f.read())
    w.add_add_space_prefix(False)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"{a.out}: n_vocab={N_VOCAB} params={total} pieces={len(chars)}+{len(merges)}", file=sys.stderr)


if __name__ == "__main__":
    main()
