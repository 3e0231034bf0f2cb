#!/usr/bin/env python3
"""Write a tiny random-weight qwen3moe GGUF with llama.cpp's gguf-py, keys in the order
llama.cpp's convert_hf_to_gguf.py (Qwen3MoeModel -> Qwen2MoeModel -> TextModel) writes them
for a Qwen3MoeForCausalLM checkpoint. The vocabulary is qwen3-tiny's (gen-qwen3/).
usage: make_qwen3moe_tiny.py OUT.gguf [--seed N] [--q8_0] [--top-k K]"""
import argparse, sys
from pathlib import Path
import numpy as np
import gguf

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "gen-qwen3"))
from make_qwen3_tiny import SPECIALS, N_MERGES, TEXT, bytes_to_unicode, learn_merges  # noqa: E402

N_LAYER, N_EMBD, N_HEAD, N_HEAD_KV, HEAD_DIM = 2, 64, 4, 2, 32
N_FF = 128                    # intermediate_size: written, unused by a qwen3moe loader
N_EXPERT, N_EXPERT_USED, N_FF_EXP = 8, 2, 32
N_CTX, ROPE_BASE, EPS = 4096, 1e6, 1e-6
# weight std: token_embd G[0]; linear layers G[i]/sqrt(fan_in) for q, k, v, o, router, gate+up, down
G = (0.5, 2.0, 2.0, 2.0, 4.0, 3.0, 2.0, 4.0)

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--chat-template", default=str(Path(gguf.__file__).resolve().parents[2] / "models/templates/Qwen-Qwen3-0.6B.jinja"))
    ap.add_argument("--q8_0", action="store_true")
    ap.add_argument("--top-k", type=int, default=N_EXPERT_USED, help="expert_used_count (check files only)")
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
    lin = lambda rows, cols, gain, *lead: f32(rng.normal(0.0, gain / np.sqrt(cols), size=(*lead, rows, cols)))  # numpy (out, in)
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
        T[p + "ffn_gate_inp.weight"] = lin(N_EXPERT, N_EMBD, G[5])             # the router
        T[p + "ffn_gate_exps.weight"] = lin(N_FF_EXP, N_EMBD, G[6], N_EXPERT)  # numpy (expert, out, in)
        T[p + "ffn_up_exps.weight"] = lin(N_FF_EXP, N_EMBD, G[6], N_EXPERT)
        T[p + "ffn_down_exps.weight"] = lin(N_EMBD, N_FF_EXP, G[7], N_EXPERT)
    T["output_norm.weight"] = norm(N_EMBD)

    ftype = gguf.LlamaFileType.MOSTLY_Q8_0 if a.q8_0 else gguf.LlamaFileType.ALL_F32
    w = gguf.GGUFWriter(a.out, "qwen3moe")                   # general.architecture
    for name, t in T.items():                                # tensor infos first (as the converter)
        # converter --outtype q8_0: 2-D and 3-D weights Q8_0, except the router (ffn_gate_inp,
        # kept F32 as the converter keeps it) and the 1-D norms
        if a.q8_0 and t.ndim >= 2 and "ffn_gate_inp" not in name:
            w.add_tensor(name, gguf.quants.quantize(t, gguf.GGMLQuantizationType.Q8_0), raw_dtype=gguf.GGMLQuantizationType.Q8_0)
        else:
            w.add_tensor(name, t)
    total, shared, expert, n_exp = w.get_total_parameter_count()
    # prepare_metadata: set_type, Metadata.set_gguf_meta_model (the size label as the converter
    # computes it from the tensors: experts x (shared + one expert's))
    w.add_type(gguf.GGUFType.MODEL)
    w.add_name("Qwen3moe Tiny Test")
    w.add_size_label(gguf.size_label(total, shared, expert, n_exp))
    # TextModel.set_gguf_parameters, then Qwen2MoeModel's expert_feed_forward_length
    w.add_block_count(N_LAYER)
    w.add_context_length(N_CTX)
    w.add_embedding_length(N_EMBD)
    w.add_feed_forward_length(N_FF)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_HEAD_KV)
    w.add_rope_freq_base(ROPE_BASE)
    w.add_layer_norm_rms_eps(EPS)
    w.add_expert_count(N_EXPERT)
    w.add_expert_used_count(a.top_k)
    w.add_key_length(HEAD_DIM)     # config.json has an explicit head_dim
    w.add_value_length(HEAD_DIM)
    w.add_file_type(ftype)
    w.add_expert_feed_forward_length(N_FF_EXP)
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    # _set_vocab_gpt2 + SpecialVocab.add_to_gguf, as qwen3-tiny
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
