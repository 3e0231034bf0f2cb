/*
 * model_test - what model_load refuses, and how it says so: an unsupported
 * architecture (by name), a missing hyper-parameter key (by name), a tensor
 * of an unsupported type (name and type), a wrongly shaped tensor, phi3
 * long-rope scaling, rope scaling in general, qwen3moe's routing variants,
 * gemma3's and mistral3's keys; and the optional keys' defaults. Each case is a synthesized tiny
 * model rewritten with one change.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/model/model.h"
#include "gguf/ggml_type.h"
#include "gguf/gguf.h"
#include "gguf/gguf_write.h"
#include "synth.h"
#include "t.h"

/* One change to a model: drop a key, set a string key, retype or reshape a tensor. */
struct change {
	const char *drop_key;
	const char *str_key, *str_val;
	const char *u32_key, *u32_key2;
	uint32_t u32_val, u32_val2;
	const char *tensor;   /* tensor to change */
	uint32_t tensor_type; /* its new type (data zeroed), or 0 */
	uint64_t tensor_ne0;  /* its new ne[0] (data zeroed), or 0 */
	const char *add_tensor;
	uint64_t add_ne0;               /* its ne[0] (0: 32) */
	const char *bool_key, *f32_key; /* set to @bool_val, @f32_val */
	bool bool_val;
	float f32_val;
};

static char src[64];
static struct model_hparams loaded; /* the hyper-parameters of the last model that loaded */

static void
make_source(const char *preset)
{
	struct synth_opts so = {.preset = preset,
	                        .quant = "Q8_0",
	                        .vocab_path = NULL,
	                        .layers = 1,
	                        .seed = 3,
	                        .out = src};

	snprintf(src, sizeof(src), "/tmp/orch-model-test-%d.gguf", (int)getpid());
	T_OK(synth_write(&so, NULL));
}

/* The source model with @c applied, loaded: model_load's code in *@rv, its message in @msg. */
static void
load_changed(const struct change *c, orch_err *rv, char *msg, size_t msg_size)
{
	struct gguf_file *f = NULL, *g = NULL;
	struct gguf_writer *w = NULL;
	struct orch_errinfo e = {0};
	void *buf = NULL, *zero = NULL;
	size_t size = 0;
	struct model m;

	*rv = ORCH_EINVAL;
	T_OK(gguf_open(src, &f, NULL));
	T_OK(gguf_writer_new(&w));
	for (size_t i = 0; i < gguf_kv_count(f); i++) {
		const struct gguf_kv *kv = gguf_kv_at(f, i);
		if (c->drop_key && strcmp(kv->key, c->drop_key) == 0)
			continue;
		if (strcmp(kv->key, "general.alignment") != 0)
			T_OK(gguf_writer_set_value(w, kv->key, &kv->value));
	}
	if (c->str_key)
		T_OK(gguf_writer_set_str(w, c->str_key, c->str_val));
	if (c->u32_key)
		T_OK(gguf_writer_set_u32(w, c->u32_key, c->u32_val));
	if (c->u32_key2)
		T_OK(gguf_writer_set_u32(w, c->u32_key2, c->u32_val2));
	if (c->bool_key)
		T_OK(gguf_writer_set_bool(w, c->bool_key, c->bool_val));
	if (c->f32_key)
		T_OK(gguf_writer_set_f32(w, c->f32_key, c->f32_val));
	zero = calloc(1, 1 << 24);
	for (size_t i = 0; i < gguf_tensor_count(f); i++) {
		const struct gguf_tensor *t = gguf_tensor_at(f, i);
		if (c->tensor && strcmp(t->name, c->tensor) == 0) {
			uint64_t ne[GGUF_MAX_DIMS];
			memcpy(ne, t->ne, sizeof(ne));
			if (c->tensor_ne0)
				ne[0] = c->tensor_ne0;
			T_OK(gguf_writer_add_tensor(w, t->name,
			                            c->tensor_type ? c->tensor_type : t->type,
			                            t->n_dims, ne, zero));
			continue;
		}
		T_OK(gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data));
	}
	if (c->add_tensor) {
		uint64_t ne[1] = {c->add_ne0 ? c->add_ne0 : 32};
		T_OK(gguf_writer_add_tensor(w, c->add_tensor, GGML_TYPE_F32, 1, ne, zero));
	}
	T_OK(gguf_writer_write_mem(w, NULL, NULL, &buf, &size, NULL));
	T_OK(gguf_open_mem(buf, size, "changed.gguf", &g, NULL));
	*rv = model_load(g, &m, &e);
	if (*rv == ORCH_OK) {
		loaded = m.hp;
		model_free(&m);
	}
	snprintf(msg, msg_size, "%s", e.msg);
	gguf_close(g);
	free(buf);
	free(zero);
	gguf_writer_free(w);
	gguf_close(f);
}

static void
expect(const struct change *c, orch_err code, const char *needle)
{
	char msg[512] = "";
	orch_err rv;

	load_changed(c, &rv, msg, sizeof(msg));
	if (rv != code)
		printf("message: %s (expected '%s')\n", msg, needle ? needle : "");
	T_EQ(rv, code);
	if (needle != NULL && strstr(msg, needle) == NULL)
		T_FAIL_("message '%s' does not contain '%s'", msg, needle);
}

static void
test_unchanged_loads(void)
{
	make_source("tiny-qwen2");
	expect(&(struct change){0}, ORCH_OK, NULL);
	unlink(src);
}

static void
test_unsupported_architecture(void)
{
	make_source("tiny-llama");
	expect(&(struct change){.str_key = "general.architecture", .str_val = "gpt2"},
	       ORCH_EUNSUPPORTED, "architecture 'gpt2' is not supported");
	expect(&(struct change){.drop_key = "general.architecture"}, ORCH_ENOTFOUND,
	       "general.architecture is missing");
	unlink(src);
}

static void
test_missing_keys(void)
{
	static const char *required[] = {
	        "qwen2.embedding_length",     "qwen2.block_count",
	        "qwen2.attention.head_count", "qwen2.attention.layer_norm_rms_epsilon",
	        "qwen2.context_length",       "qwen2.feed_forward_length"};

	make_source("tiny-qwen2");
	for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++)
		expect(&(struct change){.drop_key = required[i]}, ORCH_ENOTFOUND, required[i]);
	/*
	 * Documented defaults (docs/DECISIONS.md): head_count_kv = head_count,
	 * which this GQA model's K/V tensors then contradict; freq_base 10000.
	 */
	expect(&(struct change){.drop_key = "qwen2.attention.head_count_kv"}, ORCH_EGGUF_SHAPE,
	       "tensor blk.0.attn_k.weight is [256, 128], want [256, 256]");
	expect(&(struct change){.drop_key = "qwen2.rope.freq_base"}, ORCH_OK, NULL);
	/* values no model has: refused by name, not loaded to say NaN */
	expect(&(struct change){.f32_key = "qwen2.rope.freq_base", .f32_val = NAN}, ORCH_EINVAL,
	       "rope.freq_base nan is not positive");
	expect(&(struct change){.f32_key = "qwen2.rope.freq_base", .f32_val = -1.0f}, ORCH_EINVAL,
	       "rope.freq_base -1 is not positive");
	expect(&(struct change){.f32_key = "qwen2.attention.layer_norm_rms_epsilon",
	                        .f32_val = -1e-6f},
	       ORCH_EINVAL, "layer_norm_rms_epsilon -1e-06 is not in [0, 1)");
	expect(&(struct change){.f32_key = "qwen2.attention.layer_norm_rms_epsilon",
	                        .f32_val = NAN},
	       ORCH_EINVAL, "layer_norm_rms_epsilon nan");
	unlink(src);
}

/*
 * The keys llama.cpp's converter may leave out (a real qwen2 file has no
 * rope.dimension_count, vocab_size or quantization_version) and the head
 * size keys it writes for some architectures.
 */
static void
test_converter_defaults(void)
{
	make_source("tiny-qwen2"); /* 256 wide, 4 heads: head_dim 64 */
	loaded.n_rot = 0;
	expect(&(struct change){.drop_key = "qwen2.rope.dimension_count"}, ORCH_OK, NULL);
	T_EQ(loaded.n_rot, 64);
	T_EQ(loaded.head_dim, 64);
	expect(&(struct change){.drop_key = "qwen2.vocab_size"}, ORCH_OK, NULL);
	T_EQ(loaded.n_vocab, 512); /* from token_embd.weight */
	expect(&(struct change){.drop_key = "general.quantization_version"}, ORCH_OK, NULL);
	expect(&(struct change){.u32_key = "qwen2.attention.key_length",
	                        .u32_val = 64,
	                        .u32_key2 = "qwen2.attention.value_length",
	                        .u32_val2 = 64},
	       ORCH_OK, NULL);
	/* a head size other than n_embd / n_head: rope and the tensors must then fit it */
	expect(&(struct change){.u32_key = "qwen2.attention.key_length",
	                        .u32_val = 32,
	                        .u32_key2 = "qwen2.attention.value_length",
	                        .u32_val2 = 32},
	       ORCH_EINVAL, "rope.dimension_count 64 does not fit head_dim 32");
	expect(&(struct change){.u32_key = "qwen2.attention.key_length", .u32_val = 64},
	       ORCH_EUNSUPPORTED, "key_length 64 and value_length 0 differ");
	expect(&(struct change){.u32_key = "qwen2.rope.dimension_count", .u32_val = 66},
	       ORCH_EINVAL, "rope.dimension_count 66 does not fit head_dim 64");
	expect(&(struct change){.u32_key = "qwen2.expert_count", .u32_val = 8}, ORCH_EUNSUPPORTED,
	       "mixture-of-experts qwen2 models are not supported");
	expect(&(struct change){.u32_key = "qwen2.expert_count", .u32_val = 0}, ORCH_OK, NULL);
	unlink(src);
}

static void
test_bad_tensors(void)
{
	make_source("tiny-qwen2");
	expect(&(struct change){.tensor = "blk.0.ffn_up.weight", .tensor_type = GGML_TYPE_IQ4_NL},
	       ORCH_EUNSUPPORTED, "tensor blk.0.ffn_up.weight has type IQ4_NL");
	expect(&(struct change){.tensor = "blk.0.attn_q.weight", .tensor_ne0 = 512},
	       ORCH_EGGUF_SHAPE, "tensor blk.0.attn_q.weight is [512");
	expect(&(struct change){.tensor = "output_norm.weight", .tensor_type = GGML_TYPE_F16},
	       ORCH_EUNSUPPORTED, "F32 only");
	expect(&(struct change){.str_key = "qwen2.rope.scaling.type", .str_val = "yarn"},
	       ORCH_EUNSUPPORTED, "rope scaling 'yarn' is not supported");
	unlink(src);
}

static void
test_phi3_long_rope(void)
{
	make_source("tiny-phi3");
	expect(&(struct change){0}, ORCH_OK, NULL);
	/* 4 heads, 4 KV heads: the head_count_kv default fits */
	expect(&(struct change){.drop_key = "phi3.attention.head_count_kv"}, ORCH_OK, NULL);
	expect(&(struct change){.u32_key = "phi3.rope.scaling.original_context_length",
	                        .u32_val = 1024},
	       ORCH_EUNSUPPORTED, "phi3 long-rope scaling");
	expect(&(struct change){.add_tensor = "rope_factors_long.weight"}, ORCH_EUNSUPPORTED,
	       "phi3 long-rope scaling");
	unlink(src);
}

/*
 * qwen3moe: the routing keys' defaults (renormalized, llama.cpp's for the architecture;
 * expert_feed_forward_length's absence: feed_forward_length / expert_used_count), an
 * explicit expert_weights_norm, and the other MoE families' keys refused by name.
 */
static void
test_qwen3moe_keys(void)
{
	make_source("tiny-qwen3moe"); /* 8 experts of 256, 2 used; feed_forward_length 512 */
	memset(&loaded, 0, sizeof(loaded));
	expect(&(struct change){0}, ORCH_OK, NULL);
	T_TRUE(loaded.arch == MODEL_QWEN3MOE && loaded.moe_norm_w && !loaded.moe_swiglu_oai);
	T_TRUE(loaded.moe_gating == MODEL_MOE_SOFTMAX_ALL && loaded.rope_neox);
	T_EQ(loaded.n_expert, 8);
	T_EQ(loaded.n_expert_used, 2);
	T_EQ(loaded.n_ff_exp, 256);
	expect(&(struct change){.drop_key = "qwen3moe.expert_feed_forward_length"}, ORCH_OK, NULL);
	T_EQ(loaded.n_ff_exp, 256); /* 512 / 2 */
	expect(&(struct change){.bool_key = "qwen3moe.expert_weights_norm", .bool_val = false},
	       ORCH_OK, NULL);
	T_TRUE(!loaded.moe_norm_w);
	expect(&(struct change){.drop_key = "qwen3moe.expert_used_count"}, ORCH_ENOTFOUND,
	       "qwen3moe.expert_used_count");
	expect(&(struct change){.u32_key = "qwen3moe.expert_used_count", .u32_val = 9}, ORCH_EINVAL,
	       "9 experts used of 8");
	expect(&(struct change){.u32_key = "qwen3moe.expert_used_count", .u32_val = 0}, ORCH_ETYPE,
	       "expert_used_count must be an integer 1.."); /* never a division by zero */
	expect(&(struct change){.u32_key = "qwen3moe.expert_shared_feed_forward_length",
	                        .u32_val = 256},
	       ORCH_EUNSUPPORTED, "expert_shared_feed_forward_length: a shared expert");
	expect(&(struct change){.u32_key = "qwen3moe.expert_group_count", .u32_val = 4},
	       ORCH_EUNSUPPORTED, "expert_group_count: routing by expert groups");
	expect(&(struct change){.u32_key = "qwen3moe.expert_gating_func", .u32_val = 2},
	       ORCH_EUNSUPPORTED, "expert_gating_func: a gating function other than softmax");
	expect(&(struct change){.u32_key = "qwen3moe.expert_gating_func", .u32_val = 1}, ORCH_OK,
	       NULL);
	expect(&(struct change){.f32_key = "qwen3moe.expert_weights_scale", .f32_val = 2.5f},
	       ORCH_EUNSUPPORTED, "expert_weights_scale: scaling the expert weights");
	expect(&(struct change){.str_key = "qwen3moe.rope.scaling.type", .str_val = "yarn"},
	       ORCH_EUNSUPPORTED, "rope scaling 'yarn' is not supported");
	expect(&(struct change){.tensor = "blk.0.ffn_up_exps.weight", .tensor_ne0 = 128},
	       ORCH_EGGUF_SHAPE, "tensor blk.0.ffn_up_exps.weight is [128, 256, 8]");
	unlink(src);
}

/* gemma3: the converter's keys and llama.cpp's defaults; what it cannot do refused by name */
static void
test_gemma3_keys(void)
{
	make_source("tiny-gemma3"); /* window 64, head_dim 128 on 256 wide, 4 heads */
	memset(&loaded, 0, sizeof(loaded));
	expect(&(struct change){0}, ORCH_OK, NULL);
	T_TRUE(loaded.arch == MODEL_GEMMA3 && loaded.rope_neox && loaded.ffn_gelu);
	T_EQ(loaded.n_swa, 64);
	T_EQ(loaded.swa_pattern, 6); /* llama.cpp's default: the converter writes none */
	T_TRUE(model_layer_swa(&loaded, 4) && !model_layer_swa(&loaded, 5));
	T_NEAR(loaded.rope_base_swa, 10000.0, 0);
	T_NEAR(loaded.rope_freq_scale, 0.0, 0);         /* no scaling */
	T_NEAR(loaded.embd_scale, 16.0, 0);             /* sqrt(256) */
	T_NEAR(loaded.attn_scale, 0.08838834764, 1e-8); /* 1/sqrt(128) in float */
	T_NEAR(loaded.final_softcap, 0.0, 0);
	expect(&(struct change){.drop_key = "gemma3.rope.freq_base_swa"}, ORCH_OK, NULL);
	T_NEAR(loaded.rope_base_swa, 10000.0, 0);
	expect(&(struct change){.f32_key = "gemma3.rope.freq_base_swa", .f32_val = 5000.0f},
	       ORCH_OK, NULL);
	T_NEAR(loaded.rope_base_swa, 5000.0, 0);
	expect(&(struct change){.drop_key = "gemma3.attention.sliding_window"}, ORCH_OK, NULL);
	T_TRUE(!model_layer_swa(&loaded, 0)); /* every layer global */
	expect(&(struct change){.u32_key = "gemma3.attention.sliding_window_pattern", .u32_val = 2},
	       ORCH_OK, NULL);
	T_TRUE(model_layer_swa(&loaded, 0) && !model_layer_swa(&loaded, 1));
	expect(&(struct change){.str_key = "gemma3.rope.scaling.type",
	                        .str_val = "linear",
	                        .f32_key = "gemma3.rope.scaling.factor",
	                        .f32_val = 8.0f},
	       ORCH_OK, NULL);
	T_NEAR(loaded.rope_freq_scale, 0.125, 0);
	expect(&(struct change){.f32_key = "gemma3.rope.scaling.factor", .f32_val = 8.0f}, ORCH_OK,
	       NULL); /* no type: llama.cpp's default, linear */
	T_NEAR(loaded.rope_freq_scale, 0.125, 0);
	expect(&(struct change){.str_key = "gemma3.rope.scaling.type",
	                        .str_val = "none",
	                        .f32_key = "gemma3.rope.scaling.factor",
	                        .f32_val = 8.0f},
	       ORCH_OK, NULL);
	T_NEAR(loaded.rope_freq_scale, 0.0, 0);
	expect(&(struct change){.f32_key = "gemma3.final_logit_softcapping", .f32_val = 30.0f},
	       ORCH_OK, NULL);
	T_NEAR(loaded.final_softcap, 30.0, 0);
	expect(&(struct change){.str_key = "gemma3.rope.scaling.type", .str_val = "yarn"},
	       ORCH_EUNSUPPORTED, "rope scaling 'yarn' is not supported");
	expect(&(struct change){.f32_key = "gemma3.rope.scaling.attn_factor", .f32_val = 2.0f},
	       ORCH_EUNSUPPORTED, "rope.scaling.attn_factor");
	expect(&(struct change){.f32_key = "gemma3.attn_logit_softcapping", .f32_val = 50.0f},
	       ORCH_EUNSUPPORTED, "attn_logit_softcapping");
	expect(&(struct change){.u32_key = "gemma3.attn_logit_softcapping", .u32_val = 50},
	       ORCH_EUNSUPPORTED, "attn_logit_softcapping"); /* not a float: still refused */
	expect(&(struct change){.f32_key = "gemma3.attn_logit_softcapping", .f32_val = 0.0f},
	       ORCH_OK, NULL);
	expect(&(struct change){.f32_key = "gemma3.final_logit_softcapping", .f32_val = 1e-40f},
	       ORCH_EINVAL, "final_logit_softcapping"); /* a denormal: x / cap overflows */
	expect(&(struct change){.f32_key = "gemma3.rope.scaling.factor", .f32_val = 1e-40f},
	       ORCH_EINVAL, "scaling factor");
	expect(&(struct change){.add_tensor = "v.patch_embd.weight"}, ORCH_EUNSUPPORTED,
	       "tensor v.patch_embd.weight");
	expect(&(struct change){.tensor = "blk.0.post_ffw_norm.weight", .tensor_ne0 = 128},
	       ORCH_EGGUF_SHAPE, "tensor blk.0.post_ffw_norm.weight is [128, 1]");
	unlink(src);
}

/*
 * mistral3: Ministral 3's YaRN (llama.cpp's magnitude with the log multiplier) and query
 * temperature, Mistral Small's plain RoPE, llama.cpp's defaults; refusals by name.
 */
static void
test_mistral3_keys(void)
{
	float ministral = model_yarn_attn_factor(4.0f, 1.0f, 1.0f);

	/* gpt-oss's factor 32 without a log multiplier: exactly the 1 it always had */
	T_TRUE(model_yarn_attn_factor(32.0f, 0.0f, 1.0f) == 1.0f);
	T_NEAR(ministral, 1.0 / (1.0 + 0.1 * log(4.0)), 1e-7); /* mscale(4, 1) / mscale(4, 1) */
	make_source("tiny-mistral3"); /* YaRN 4 over 64, log mul 1, temperature 0.1 */
	memset(&loaded, 0, sizeof(loaded));
	expect(&(struct change){0}, ORCH_OK, NULL);
	T_TRUE(loaded.arch == MODEL_MISTRAL3 && !loaded.rope_neox && loaded.head_dim == 96);
	T_NEAR(loaded.yarn_factor, 4.0, 0);
	T_EQ(loaded.yarn_orig_ctx, 64);
	T_TRUE(loaded.yarn_attn_factor == ministral);
	T_NEAR(loaded.attn_temp_scale, 0.1, 1e-8);
	T_EQ(loaded.attn_temp_floor, 64);
	T_NEAR(model_attn_temp(&loaded, 63), 1.0, 0);
	T_NEAR(model_attn_temp(&loaded, 64), 1.0 + 0.1 * log(2.0), 1e-7);
	T_NEAR(model_attn_temp(&loaded, 200), 1.0 + 0.1 * log(4.0), 1e-7);
	expect(&(struct change){.drop_key = "mistral3.rope.scaling.yarn_log_multiplier"}, ORCH_OK,
	       NULL);
	T_TRUE(loaded.yarn_attn_factor == 1.0f); /* mscale(4, 1) / (1 + 0.1 ln 4) */
	expect(&(struct change){.f32_key = "mistral3.rope.scaling.attn_factor", .f32_val = 2.0f},
	       ORCH_OK, NULL);
	T_TRUE(loaded.yarn_attn_factor == ministral * 2.0f);
	expect(&(struct change){.drop_key = "mistral3.rope.scaling.yarn_beta_fast"}, ORCH_OK, NULL);
	T_NEAR(loaded.yarn_beta_fast, 32.0, 0);
	expect(&(struct change){.f32_key = "mistral3.rope.scaling.yarn_beta_slow", .f32_val = 2.0f},
	       ORCH_OK, NULL);
	T_NEAR(loaded.yarn_beta_slow, 2.0, 0);
	expect(&(struct change){.drop_key = "mistral3.attention.temperature_scale"}, ORCH_OK, NULL);
	T_NEAR(loaded.attn_temp_scale, 0.0, 0);
	/* Mistral Small 3.x: no scaling at all; a factor without a type is llama.cpp's linear */
	expect(&(struct change){.str_key = "mistral3.rope.scaling.type", .str_val = "none"},
	       ORCH_OK, NULL);
	T_TRUE(loaded.yarn_factor == 0.0f && loaded.rope_freq_scale == 0.0f);
	T_EQ(loaded.attn_temp_floor, 64); /* original_context_length, read without YaRN too */
	expect(&(struct change){.drop_key = "mistral3.rope.scaling.type"}, ORCH_OK, NULL);
	T_NEAR(loaded.rope_freq_scale, 0.25, 0);
	/* refusals */
	expect(&(struct change){.str_key = "mistral3.rope.scaling.type",
	                        .str_val = "none",
	                        .drop_key = "mistral3.rope.scaling.original_context_length"},
	       ORCH_EUNSUPPORTED,
	       "temperature_scale without mistral3.rope.scaling.original_context_length");
	expect(&(struct change){.drop_key = "mistral3.rope.scaling.original_context_length"},
	       ORCH_ENOTFOUND, "mistral3.rope.scaling.original_context_length");
	expect(&(struct change){.str_key = "mistral3.rope.scaling.type",
	                        .str_val = "none",
	                        .f32_key = "mistral3.rope.scaling.attn_factor",
	                        .f32_val = 2.0f},
	       ORCH_EUNSUPPORTED, "attn_factor 2 without YaRN");
	expect(&(struct change){.f32_key = "mistral3.rope.scaling.factor", .f32_val = 0.5f},
	       ORCH_EINVAL, "must be at least 1");
	expect(&(struct change){.str_key = "mistral3.rope.scaling.type", .str_val = "longrope"},
	       ORCH_EUNSUPPORTED, "rope scaling 'longrope' is not supported");
	expect(&(struct change){.f32_key = "mistral3.rope.scaling.yarn_ext_factor",
	                        .f32_val = 1.0f},
	       ORCH_OK, NULL);
	expect(&(struct change){.f32_key = "mistral3.rope.scaling.yarn_ext_factor",
	                        .f32_val = 0.5f},
	       ORCH_EUNSUPPORTED, "yarn_ext_factor 0.5");
	expect(&(struct change){.f32_key = "mistral3.rope.scaling.yarn_attn_factor",
	                        .f32_val = 1.0f},
	       ORCH_EUNSUPPORTED, "yarn_attn_factor is not supported");
	expect(&(struct change){.u32_key = "mistral3.attention.temperature_length", .u32_val = 64},
	       ORCH_OK, NULL);
	expect(&(struct change){.u32_key = "mistral3.attention.temperature_length", .u32_val = 32},
	       ORCH_EUNSUPPORTED, "temperature_length 32");
	expect(&(struct change){.u32_key = "mistral3.expert_count", .u32_val = 8},
	       ORCH_EUNSUPPORTED, "mixture-of-experts mistral3 models are not supported");
	expect(&(struct change){.u32_key = "mistral3.rope.dimension_count", .u32_val = 64},
	       ORCH_EUNSUPPORTED, "rope.dimension_count 64 differs from the head size 96");
	/* tensors: optional biases taken, what llama.cpp takes but orch does not refused */
	expect(&(struct change){.add_tensor = "blk.0.attn_output.bias", .add_ne0 = 256}, ORCH_OK,
	       NULL);
	expect(&(struct change){.add_tensor = "blk.0.attn_k.bias", .add_ne0 = 100},
	       ORCH_EGGUF_SHAPE, "tensor blk.0.attn_k.bias is [100, 1], want [192, 1]");
	expect(&(struct change){.add_tensor = "blk.0.ffn_up.bias", .add_ne0 = 512},
	       ORCH_EUNSUPPORTED, "tensor blk.0.ffn_up.bias");
	expect(&(struct change){.add_tensor = "rope_freqs.weight", .add_ne0 = 48},
	       ORCH_EUNSUPPORTED, "rope_freqs.weight together with RoPE scaling");
	expect(&(struct change){.str_key = "mistral3.rope.scaling.type",
	                        .str_val = "none",
	                        .add_tensor = "rope_freqs.weight",
	                        .add_ne0 = 48},
	       ORCH_OK, NULL);
	unlink(src);
}

int
main(void)
{
	T_RUN(test_unchanged_loads);
	T_RUN(test_unsupported_architecture);
	T_RUN(test_missing_keys);
	T_RUN(test_converter_defaults);
	T_RUN(test_bad_tensors);
	T_RUN(test_phi3_long_rope);
	T_RUN(test_qwen3moe_keys);
	T_RUN(test_gemma3_keys);
	T_RUN(test_mistral3_keys);
	return t_done();
}
