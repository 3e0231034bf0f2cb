#pragma once
/*
 * synth.h - write synthetic GGUF models: real architecture metadata and
 * tensor shapes, deterministic random weights (orch-synth).
 *
 * A preset names an architecture and its hyper-parameters; a quant spec
 * names one tensor type for every matrix ("Q4_0", "F16") or one of the
 * llama.cpp mixes ("Q4_K_M", "Q8_0"). The same options and seed always give
 * the same bytes.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

struct synth_preset {
	const char *name;
	const char *arch; /* general.architecture */
	uint32_t n_layer, n_embd, n_head, n_head_kv, n_ff, n_vocab, n_ctx, n_rot;
	float rope_base, rms_eps;
	bool qkv_bias;       /* attn_{q,k,v}.bias (qwen2) */
	bool tied;           /* no output.weight: the embedding is reused */
	bool fused;          /* attn_qkv and gate+up in ffn_up (phi3) */
	bool llama3_rope;    /* rope_freqs.weight with Llama 3 scaling */
	bool qk_norm;        /* attn_{q,k}_norm.weight [head_dim] (qwen3) */
	uint32_t n_ctx_orig; /* phi3.rope.scaling.original_context_length; 0: absent */
	/* gpt-oss: biases on Q/K/V/O, sinks, experts (MXFP4), a sliding window, YaRN */
	bool gpt_oss;
	uint32_t head_dim; /* attention.key_length (gpt-oss, qwen3); 0: n_embd / n_head */
	/* experts (gpt-oss; qwen3moe: a router and SwiGLU experts without biases instead of
	 * the dense FFN, n_ff_exp wide) */
	uint32_t n_expert, n_expert_used, n_swa, yarn_orig_ctx;
	float yarn_factor;
	uint32_t n_ff_exp; /* qwen3moe's expert_feed_forward_length */
	/* gemma3: post_attention_norm and post_ffw_norm, a window of n_swa (pattern 6), a local
	 * RoPE base of 10000, and rope_linear > 0: linear RoPE scaling of the global layers */
	bool gemma3;
	float rope_linear;
	/* mistral3 (Ministral 3): with yarn_factor > 0, YaRN over yarn_orig_ctx (betas 32
	 * and 1) with rope.scaling.yarn_log_multiplier yarn_log_mul, and
	 * attention.temperature_scale attn_temp_scale when > 0 */
	float yarn_log_mul, attn_temp_scale;
};

/* synth_preset_find - the preset called @name, or NULL. */
const struct synth_preset *synth_preset_find(const char *name);

/* synth_preset_at - preset @i (< synth_preset_count()), for listings. */
const struct synth_preset *synth_preset_at(size_t i);
size_t synth_preset_count(void);

struct synth_opts {
	const char *preset;     /* required */
	const char *quant;      /* NULL: "F32" */
	const char *vocab_path; /* NULL: a synthetic SentencePiece vocabulary */
	uint32_t layers;        /* 0: the preset's depth */
	uint64_t seed;
	const char *out; /* required */
	/*
	 * A real GGUF of the preset's architecture whose key set (and vocabulary)
	 * the model gets: its keys, order and types, with the synthesized
	 * hyper-parameters; exclusive with @vocab_path. NULL: orch-synth's keys.
	 */
	const char *metadata_from;
};

/*
 * synth_write - write the model @o describes to @o->out. ORCH_EINVAL for an
 * unknown preset or quant spec or bad layer count (message says which and
 * lists the choices), errors of the vocabulary file, ORCH_EIO, ORCH_ENOMEM.
 */
orch_err synth_write(const struct synth_opts *o, struct orch_errinfo *reterr);

/* ---- internal to tools/orch-synth (synth_mix.c, synth_vocab.c, synth_meta.c) ---- */

struct gguf_writer;

/*
 * synth_meta_from - replace the metadata in *@w (no tensors yet) with the
 * key set of the real file @path, keeping the synthesized values of
 * general.file_type and the "{@arch}." keys both have. ORCH_EINVAL when
 * @path is another architecture or a key's type cannot take the value.
 */
orch_err synth_meta_from(struct gguf_writer **w, const char *arch, const char *path,
                         struct orch_errinfo *reterr);

/* A mix: the type for tensor @name with rows of @ne0 in layer @layer of @n_layer. */
struct synth_mix {
	const char *name; /* "Q4_K_M", "Q8_0", or a type name */
	uint32_t base;    /* ggml type of ordinary matrices */
	bool k_m;         /* the Q4_K_M rules */
	uint32_t ftype;   /* general.file_type (llama_ftype) */
};

/* synth_mix_parse - @spec into @m. ORCH_EINVAL for an unknown or unsupported type. */
orch_err synth_mix_parse(const char *spec, struct synth_mix *m);

/* synth_mix_type - the ggml type of tensor @name (2-D, rows of @ne0); 1-D tensors are F32. */
uint32_t synth_mix_type(const struct synth_mix *m, const char *name, uint64_t ne0, uint32_t layer,
                        uint32_t n_layer, bool has_output);

/*
 * synth_vocab_write - the tokenizer.* metadata: copied from @vocab_path, or
 * a synthetic SentencePiece vocabulary of @n_vocab pieces. *@ret_n_vocab is
 * the vocabulary size the embedding rows must match.
 */
orch_err synth_vocab_write(struct gguf_writer *w, const char *vocab_path, uint32_t n_vocab,
                           uint32_t *ret_n_vocab, struct orch_errinfo *reterr);
