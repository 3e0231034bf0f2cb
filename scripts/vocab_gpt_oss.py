#!/usr/bin/env python3
"""vocab_gpt_oss.py RANKS TEMPLATE OUT - gpt-oss's vocabulary GGUF (vocab only, no
tensors) from the o200k_base ranks, for a clone without ../shared/testdata (issue 52).

RANKS is js-tiktoken's `dist/ranks/o200k_base.js` (an npm package the interop tests
already install: @langchain/openai depends on it); TEMPLATE is gpt-oss's chat template
(tests/data/templates/openai-gpt-oss-120b.jinja). The file written holds what llama.cpp's
converter writes for openai/gpt-oss-20b with `--vocab-only`, key for key and in its
order, as ../shared/testdata/models/SOURCE-gpt-oss.md describes it:

- tokens 0..199997: the ranks in GPT-2's byte-to-unicode form, type NORMAL;
- 199998..200018: gpt-oss's 21 added tokens (harmony's markers), type CONTROL;
- 200019..201087: "[PADn]", type UNUSED (the converter fills vocab_size so);
- merges: for every token of two or more bytes, every split whose halves are both
  tokens, ordered by the halves' ranks within a token and by the token's rank overall
  (transformers' tiktoken conversion).

scripts/testdata_fetch.sh runs it and checks the result against tests/data/fetched.sha256,
the sum of the shared data's copy (made by llama.cpp's own converter): the same bytes.
Standard library only.
"""
import base64
import json
import struct
import sys

N_VOCAB = 201088
ADDED = {  # id: text, from gpt-oss-20b's tokenizer_config.json
    199998: "<|startoftext|>", 199999: "<|endoftext|>", 200002: "<|return|>",
    200003: "<|constrain|>", 200005: "<|channel|>", 200006: "<|start|>", 200007: "<|end|>",
    200008: "<|message|>", 200012: "<|call|>", 200018: "<|endofprompt|>",
}
NORMAL, CONTROL, UNUSED = 1, 3, 5
T_U32, T_F32, T_STR, T_ARR, T_I32 = 4, 6, 8, 9, 5


def byte_unicode():
    """GPT-2's bytes_to_unicode: printable bytes stand for themselves, the rest map
    to U+0100 upwards in byte order."""
    keep = list(range(0x21, 0x7F)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    out, extra = {}, 0
    for b in range(256):
        if b in keep:
            out[b] = chr(b)
        else:
            out[b] = chr(0x100 + extra)
            extra += 1
    return out


def load_ranks(path):
    """js-tiktoken's ranks module: `export default {...}` (or module.exports = ...);
    bpe_ranks holds lines "<name> <first rank> <base64 token> ..." of consecutive ranks."""
    text = open(path, encoding="utf-8").read()
    text = text[text.index("{"):text.rindex("}") + 1]
    data = json.loads(text)
    ranks = {}
    for line in data["bpe_ranks"].split("\n"):
        if not line:
            continue
        parts = line.split(" ")
        first = int(parts[1], 10)
        for i, tok in enumerate(parts[2:]):
            ranks[base64.b64decode(tok)] = first + i
    return ranks


def merges_of(ranks):
    out = []
    for tok, rank in ranks.items():
        if len(tok) < 2:
            continue
        local = [(ranks[tok[:i]], ranks[tok[i:]], tok[:i], tok[i:]) for i in range(1, len(tok))
                 if tok[:i] in ranks and tok[i:] in ranks]
        local.sort(key=lambda m: (m[0], m[1]))
        out.extend((rank, left, right) for _, _, left, right in local)
    out.sort(key=lambda m: m[0])  # stable: the order within a token stays
    return out


class Writer:
    def __init__(self):
        self.kv = []

    @staticmethod
    def string(s):
        b = s.encode("utf-8")
        return struct.pack("<Q", len(b)) + b

    def add(self, key, kind, value):
        body = self.string(key) + struct.pack("<I", kind)
        if kind == T_STR:
            body += self.string(value)
        elif kind == T_U32:
            body += struct.pack("<I", value)
        elif kind == T_F32:
            body += struct.pack("<f", value)
        self.kv.append(body)

    def add_array(self, key, elem, values):
        body = [self.string(key), struct.pack("<IIQ", T_ARR, elem, len(values))]
        if elem == T_STR:
            body.extend(self.string(v) for v in values)
        else:
            body.append(struct.pack("<%di" % len(values), *values))
        self.kv.append(b"".join(body))

    def bytes(self):
        head = b"GGUF" + struct.pack("<IQQ", 3, 0, len(self.kv))
        return head + b"".join(self.kv)


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: vocab_gpt_oss.py RANKS_JS TEMPLATE OUT")
    ranks = load_ranks(sys.argv[1])
    if len(ranks) != 199998 or sorted(ranks.values()) != list(range(199998)):
        sys.exit("vocab_gpt_oss: %s does not hold the 199998 o200k_base ranks" % sys.argv[1])
    template = open(sys.argv[2], encoding="utf-8").read()
    u = byte_unicode()

    def uni(b):
        return "".join(u[x] for x in b)

    tokens = [None] * N_VOCAB
    types = [NORMAL] * N_VOCAB
    for tok, rank in ranks.items():
        tokens[rank] = uni(tok)
    for i in range(199998, N_VOCAB):
        if i <= 200018:
            tokens[i] = ADDED.get(i, "<|reserved_%d|>" % i)
            types[i] = CONTROL
        else:
            tokens[i] = "[PAD%d]" % i
            types[i] = UNUSED
    merges = ["%s %s" % (uni(left), uni(right)) for _, left, right in merges_of(ranks)]

    w = Writer()
    for key, val in (("general.architecture", "gpt-oss"), ("general.type", "model"),
                     ("general.name", "Gpt Oss 20b"), ("general.basename", "gpt-oss"),
                     ("general.size_label", "20B"), ("general.license", "apache-2.0")):
        w.add(key, T_STR, val)
    w.add_array("general.tags", T_STR, ["vllm", "text-generation"])
    a = "gpt-oss."
    for key, kind, val in (
            ("block_count", T_U32, 24), ("context_length", T_U32, 131072),
            ("embedding_length", T_U32, 2880), ("feed_forward_length", T_U32, 2880),
            ("attention.head_count", T_U32, 64), ("attention.head_count_kv", T_U32, 8),
            ("rope.scaling.type", T_STR, "yarn"), ("rope.scaling.factor", T_F32, 32.0),
            ("rope.scaling.original_context_length", T_U32, 4096),
            ("rope.scaling.yarn_beta_fast", T_F32, 32.0),
            ("rope.scaling.yarn_beta_slow", T_F32, 1.0), ("rope.freq_base", T_F32, 150000.0),
            ("attention.layer_norm_rms_epsilon", T_F32, 1e-5), ("expert_count", T_U32, 32),
            ("expert_used_count", T_U32, 4), ("attention.key_length", T_U32, 64),
            ("attention.value_length", T_U32, 64)):
        w.add(a + key, kind, val)
    w.add("general.file_type", T_U32, 32)
    w.add(a + "attention.sliding_window", T_U32, 128)
    w.add(a + "expert_feed_forward_length", T_U32, 2880)
    w.add("general.quantization_version", T_U32, 2)
    w.add("tokenizer.ggml.model", T_STR, "gpt2")
    w.add("tokenizer.ggml.pre", T_STR, "gpt-4o")
    w.add_array("tokenizer.ggml.tokens", T_STR, tokens)
    w.add_array("tokenizer.ggml.token_type", T_I32, types)
    w.add_array("tokenizer.ggml.merges", T_STR, merges)
    w.add("tokenizer.ggml.bos_token_id", T_U32, 199998)
    w.add("tokenizer.ggml.eos_token_id", T_U32, 200002)
    w.add("tokenizer.ggml.padding_token_id", T_U32, 199999)
    w.add("tokenizer.chat_template", T_STR, template)
    with open(sys.argv[3], "wb") as f:
        f.write(w.bytes())


if __name__ == "__main__":
    main()
