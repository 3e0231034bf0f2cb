/*
 * synth_test.c - orch-synth output read back by the reader: every preset,
 * every quant spec on the tiny presets, expected shapes and types, weights
 * that decode finite and well scaled, determinism, --vocab and --layers.
 */
#include <unistd.h>

#include "gguf/ggml_type.h"
#include "gguf/gguf.h"
#include "gguf/quant.h"
#include "synth.h"
#include "t.h"

static char tmp_path[64];

static struct gguf_file *
synth_open(const char *preset, const char *quant, const char *vocab, uint32_t layers, uint64_t seed)
{
	struct synth_opts o = {.preset = preset,
	                       .quant = quant,
	                       .vocab_path = vocab,
	                       .layers = layers,
	                       .seed = seed,
	                       .out = tmp_path};
	struct orch_errinfo e = {0};
	struct gguf_file *f = NULL;
	orch_err rv = synth_write(&o, &e);

	if (rv != ORCH_OK) {
		fprintf(stderr, "synth_write(%s, %s) = %s: %s\n", preset, quant, orch_err_name(rv),
		        e.msg);
		return NULL;
	}
	rv = gguf_open(tmp_path, &f, &e);
	if (rv != ORCH_OK)
		fprintf(stderr, "gguf_open: %s: %s\n", orch_err_name(rv), e.msg);
	return f;
}

static void
expect_tensor(struct gguf_file *f, const char *name, uint64_t ne0, uint64_t ne1, int32_t type)
{
	const struct gguf_tensor *t = gguf_find_tensor(f, name);

	if (t == NULL) {
		T_FAIL_("tensor %s missing", name);
		return;
	}
	if (t->ne[0] != ne0 || t->ne[1] != ne1 || t->n_dims != (ne1 > 1 ? 2u : 1u))
		T_FAIL_("%s: shape [%llu, %llu], want [%llu, %llu]", name,
		        (unsigned long long)t->ne[0], (unsigned long long)t->ne[1],
		        (unsigned long long)ne0, (unsigned long long)ne1);
	if (type >= 0 && t->type != (uint32_t)type)
		T_FAIL_("%s: type %s, want %s", name, ggml_type_name(t->type),
		        ggml_type_name((uint32_t)type));
}

/* Every tensor decodes to finite values; matrices have std near 0.5/√ne0. */
static void
expect_well_scaled(struct gguf_file *f)
{
	for (size_t i = 0; i < gguf_tensor_count(f); i++) {
		const struct gguf_tensor *t = gguf_tensor_at(f, i);
		uint64_t row_bytes, rows = t->n_elements / t->ne[0];
		double sum2 = 0;
		float *y = malloc((size_t)t->ne[0] * sizeof(*y));
		T_OK(ggml_row_bytes(t->type, t->ne[0], &row_bytes));
		for (uint64_t r = 0; r<rows; r += rows> 64 ? rows / 64 : 1) {
			T_OK(dequant_row(t->type, (const uint8_t *)t->data + r * row_bytes, y,
			                 t->ne[0]));
			for (uint64_t k = 0; k < t->ne[0]; k++) {
				if (!isfinite(y[k]))
					T_FAIL_("%s: non-finite value at row %llu", t->name,
					        (unsigned long long)r);
				sum2 += (double)y[k] * (double)y[k];
			}
		}
		free(y);
		if (t->n_dims == 2 && strcmp(t->name, "rope_freqs.weight") != 0) {
			uint64_t sampled =
			        (rows > 64 ? (rows + rows / 64 - 1) / (rows / 64) : rows);
			double std = sqrt(sum2 / (double)(sampled * t->ne[0]));
			double want = 0.5 / sqrt((double)t->ne[0]);
			if (std < 0.6 * want || std > 1.5 * want)
				T_FAIL_("%s (%s): std %.5f, want about %.5f", t->name,
				        ggml_type_name(t->type), std, want);
		}
		if (t_failed_checks)
			return;
	}
}

/*
 * A one-token forward pass over the dequantized weights (llama, qwen2, phi3):
 * with a single position softmax is 1, so each head's attention output is
 * the V of its KV head. Checks what "well scaled" promises: every activation
 * stays finite through every layer, and the logits have a sane spread.
 */
struct fwd {
	struct gguf_file *f;
	uint32_t n_embd, n_head, n_kv, n_ff, n_layer, hd;
	float eps;
};

static const struct gguf_tensor *
fwd_tensor(const struct fwd *m, int layer, const char *suffix)
{
	char name[96];

	if (layer < 0)
		snprintf(name, sizeof(name), "%s", suffix);
	else
		snprintf(name, sizeof(name), "blk.%d.%s", layer, suffix);
	return gguf_find_tensor(m->f, name);
}

/* y[o] = Σ W[o][i]·x[i] (+ bias), rows [@first, @first + @n) of W. */
static int
fwd_matvec(const struct gguf_tensor *w, const struct gguf_tensor *bias, uint64_t first, uint64_t n,
           const float *x, float *y)
{
	uint64_t row_bytes;
	float *row = malloc((size_t)w->ne[0] * sizeof(*row));

	if (row == NULL || ggml_row_bytes(w->type, w->ne[0], &row_bytes) != ORCH_OK)
		return -1;
	for (uint64_t o = 0; o < n; o++) {
		double acc = 0;
		dequant_row(w->type, (const uint8_t *)w->data + (first + o) * row_bytes, row,
		            w->ne[0]);
		for (uint64_t i = 0; i < w->ne[0]; i++)
			acc += (double)row[i] * (double)x[i];
		if (bias != NULL) {
			float b;
			memcpy(&b, (const float *)bias->data + o, sizeof(b));
			acc += (double)b;
		}
		y[o] = (float)acc;
	}
	free(row);
	return 0;
}

static void
fwd_rmsnorm(const float *x, const struct gguf_tensor *w, uint32_t n, float eps, float *out)
{
	double ss = 0;

	for (uint32_t i = 0; i < n; i++)
		ss += (double)x[i] * (double)x[i];
	float scale = (float)(1.0 / sqrt(ss / n + (double)eps));
	for (uint32_t i = 0; i < n; i++) {
		float g;
		memcpy(&g, (const float *)w->data + i, sizeof(g));
		out[i] = x[i] * scale * g;
	}
}

static int
all_finite(const float *x, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		if (!isfinite(x[i]))
			return 0;
	return 1;
}

static int
fwd_layer(const struct fwd *m, int l, float *x, float *h, float *qkv, float *a, float *g)
{
	const struct gguf_tensor *fused = fwd_tensor(m, l, "attn_qkv.weight");
	uint32_t q = m->hd * m->n_head, kv = m->hd * m->n_kv, rep = m->n_head / m->n_kv;

	fwd_rmsnorm(x, fwd_tensor(m, l, "attn_norm.weight"), m->n_embd, m->eps, h);
	if (fused != NULL) {
		fwd_matvec(fused, NULL, 0, q + 2ull * kv, h, qkv);
	} else {
		fwd_matvec(fwd_tensor(m, l, "attn_q.weight"), fwd_tensor(m, l, "attn_q.bias"), 0, q,
		           h, qkv);
		fwd_matvec(fwd_tensor(m, l, "attn_k.weight"), fwd_tensor(m, l, "attn_k.bias"), 0,
		           kv, h, qkv + q);
		fwd_matvec(fwd_tensor(m, l, "attn_v.weight"), fwd_tensor(m, l, "attn_v.bias"), 0,
		           kv, h, qkv + q + kv);
	}
	for (uint32_t head = 0; head < m->n_head; head++)
		memcpy(a + head * m->hd, qkv + q + kv + (head / rep) * m->hd,
		       m->hd * sizeof(float));
	fwd_matvec(fwd_tensor(m, l, "attn_output.weight"), NULL, 0, m->n_embd, a, h);
	for (uint32_t i = 0; i < m->n_embd; i++)
		x[i] += h[i];
	fwd_rmsnorm(x, fwd_tensor(m, l, "ffn_norm.weight"), m->n_embd, m->eps, h);
	const struct gguf_tensor *gate = fwd_tensor(m, l, "ffn_gate.weight");
	const struct gguf_tensor *up = fwd_tensor(m, l, "ffn_up.weight");
	fwd_matvec(gate ? gate : up, NULL, 0, m->n_ff, h, g);              /* phi3: first half */
	fwd_matvec(up, NULL, gate ? 0 : m->n_ff, m->n_ff, h, g + m->n_ff); /* phi3: second half */
	for (uint32_t i = 0; i < m->n_ff; i++)
		g[i] = g[i] / (1.0f + expf(-g[i])) * g[m->n_ff + i];
	fwd_matvec(fwd_tensor(m, l, "ffn_down.weight"), NULL, 0, m->n_embd, g, h);
	for (uint32_t i = 0; i < m->n_embd; i++)
		x[i] += h[i];
	return all_finite(qkv, q + 2ull * kv) && all_finite(g, m->n_ff) && all_finite(x, m->n_embd);
}

static int
fwd_hparams(struct fwd *m)
{
	struct gguf_str arch;
	char k[96];
	uint64_t v[5];
	static const char *keys[5] = {"embedding_length", "attention.head_count",
	                              "attention.head_count_kv", "feed_forward_length",
	                              "block_count"};

	if (gguf_get_str(m->f, "general.architecture", &arch) != ORCH_OK)
		return -1;
	for (int i = 0; i < 5; i++) {
		snprintf(k, sizeof(k), "%.*s.%s", (int)arch.len, arch.ptr, keys[i]);
		if (gguf_get_uint(m->f, k, &v[i]) != ORCH_OK)
			return -1;
	}
	snprintf(k, sizeof(k), "%.*s.attention.layer_norm_rms_epsilon", (int)arch.len, arch.ptr);
	if (gguf_get_f32(m->f, k, &m->eps) != ORCH_OK)
		return -1;
	m->n_embd = (uint32_t)v[0];
	m->n_head = (uint32_t)v[1];
	m->n_kv = (uint32_t)v[2];
	m->n_ff = (uint32_t)v[3];
	m->n_layer = (uint32_t)v[4];
	m->hd = m->n_embd / m->n_head;
	return 0;
}

static void
expect_forward_finite(struct gguf_file *f, const char *what)
{
	struct fwd m = {.f = f};
	const struct gguf_tensor *embd, *out;

	T_TRUE(fwd_hparams(&m) == 0);
	embd = gguf_find_tensor(f, "token_embd.weight");
	out = gguf_find_tensor(f, "output.weight");
	out = out ? out : embd; /* tied */
	float *x = calloc(m.n_embd, sizeof(float)), *h = calloc(m.n_embd, sizeof(float));
	float *qkv = calloc(3ull * m.n_embd, sizeof(float)), *a = calloc(m.n_embd, sizeof(float));
	float *g = calloc(2ull * m.n_ff, sizeof(float));
	float *logits = calloc((size_t)out->ne[1], sizeof(float));
	int ok = x && h && qkv && a && g && logits;
	uint64_t row_bytes;
	ok = ok && ggml_row_bytes(embd->type, embd->ne[0], &row_bytes) == ORCH_OK &&
	     dequant_row(embd->type, (const uint8_t *)embd->data + 3 * row_bytes, x, m.n_embd) ==
	             ORCH_OK; /* the embedding of token 3 */
	for (uint32_t l = 0; ok && l < m.n_layer; l++) {
		if (!fwd_layer(&m, (int)l, x, h, qkv, a, g)) {
			T_FAIL_("%s: non-finite activation in layer %u", what, l);
			ok = 0;
		}
	}
	if (ok) {
		double s = 0, s2 = 0;
		fwd_rmsnorm(x, gguf_find_tensor(f, "output_norm.weight"), m.n_embd, m.eps, h);
		fwd_matvec(out, NULL, 0, out->ne[1], h, logits);
		for (uint64_t i = 0; i < out->ne[1]; i++) {
			s += (double)logits[i];
			s2 += (double)logits[i] * (double)logits[i];
		}
		double sd = sqrt(s2 / (double)out->ne[1] -
		                 (s / (double)out->ne[1]) * (s / (double)out->ne[1]));
		if (!all_finite(logits, out->ne[1]) || sd < 0.05 || sd > 50)
			T_FAIL_("%s: logits std %.4f (finite %d)", what, sd,
			        all_finite(logits, out->ne[1]));
	}
	free(x);
	free(h);
	free(qkv);
	free(a);
	free(g);
	free(logits);
}

static void
test_tiny_llama_shapes(void)
{
	struct gguf_file *f = synth_open("tiny-llama", "F32", NULL, 0, 1);
	struct gguf_str s;
	uint32_t u;

	T_TRUE(f != NULL);
	T_OK(gguf_get_str(f, "general.architecture", &s));
	T_TRUE(s.len == 5 && memcmp(s.ptr, "llama", 5) == 0);
	T_OK(gguf_get_u32(f, "llama.block_count", &u));
	T_EQ(u, 2);
	T_OK(gguf_get_u32(f, "llama.vocab_size", &u));
	T_EQ(u, 512);
	T_EQ(gguf_tensor_count(f), 1 + 2 * 9 + 2);
	expect_tensor(f, "token_embd.weight", 256, 512, GGML_TYPE_F32);
	expect_tensor(f, "blk.1.attn_q.weight", 256, 256, GGML_TYPE_F32);
	expect_tensor(f, "blk.1.attn_k.weight", 256, 128, GGML_TYPE_F32);
	expect_tensor(f, "blk.1.attn_v.weight", 256, 128, GGML_TYPE_F32);
	expect_tensor(f, "blk.1.attn_output.weight", 256, 256, GGML_TYPE_F32);
	expect_tensor(f, "blk.1.ffn_gate.weight", 256, 256, GGML_TYPE_F32);
	expect_tensor(f, "blk.1.ffn_down.weight", 256, 256, GGML_TYPE_F32);
	expect_tensor(f, "blk.0.attn_norm.weight", 256, 1, GGML_TYPE_F32);
	expect_tensor(f, "output.weight", 256, 512, GGML_TYPE_F32);
	T_TRUE(gguf_find_tensor(f, "blk.2.attn_q.weight") == NULL);
	expect_well_scaled(f);
	gguf_close(f);
}

static void
test_tiny_qwen2_phi3_shapes(void)
{
	struct gguf_file *f = synth_open("tiny-qwen2", "Q8_0", NULL, 3, 1);

	T_TRUE(f != NULL);
	expect_tensor(f, "blk.2.attn_q.bias", 256, 1, GGML_TYPE_F32);
	expect_tensor(f, "blk.2.attn_k.bias", 128, 1, GGML_TYPE_F32);
	expect_tensor(f, "token_embd.weight", 256, 512, GGML_TYPE_Q8_0);
	T_TRUE(gguf_find_tensor(f, "output.weight") == NULL); /* tied */
	gguf_close(f);
	f = synth_open("tiny-phi3", "Q4_K_M", NULL, 0, 1);
	T_TRUE(f != NULL);
	expect_tensor(f, "blk.0.attn_qkv.weight", 256, 768, GGML_TYPE_Q5_K);
	expect_tensor(f, "blk.0.ffn_up.weight", 256, 512, GGML_TYPE_Q4_K);
	T_TRUE(gguf_find_tensor(f, "blk.0.ffn_gate.weight") == NULL);
	expect_tensor(f, "output.weight", 256, 512, GGML_TYPE_Q6_K);
	expect_tensor(f, "token_embd.weight", 256, 512, GGML_TYPE_Q4_K);
	uint32_t u;
	T_OK(gguf_get_u32(f, "phi3.rope.scaling.original_context_length", &u));
	T_OK(gguf_get_u32(f, "general.file_type", &u));
	T_EQ(u, 15);
	gguf_close(f);
}

static void
test_every_quant(void)
{
	static const char *quants[] = {"F32",  "F16",  "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0",
	                               "Q5_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "Q4_K_M"};
	static const char *presets[] = {"tiny-llama", "tiny-qwen2", "tiny-phi3"};

	for (size_t p = 0; p < 3; p++) {
		for (size_t q = 0; q < sizeof(quants) / sizeof(quants[0]); q++) {
			struct gguf_file *f = synth_open(presets[p], quants[q], NULL, 0, 7);
			uint32_t want;
			T_TRUE(f != NULL);
			T_OK(ggml_type_by_name(strcmp(quants[q], "Q4_K_M") ? quants[q] : "Q4_K",
			                       &want));
			for (size_t i = 0; i < gguf_tensor_count(f); i++) {
				const struct gguf_tensor *t = gguf_tensor_at(f, i);
				if (t->n_dims == 1 && t->type != GGML_TYPE_F32)
					T_FAIL_("%s %s: 1-D %s is %s", presets[p], quants[q],
					        t->name, ggml_type_name(t->type));
				if (t->n_dims == 2 && strcmp(quants[q], "Q4_K_M") != 0 &&
				    t->type != want)
					T_FAIL_("%s %s: %s is %s", presets[p], quants[q], t->name,
					        ggml_type_name(t->type));
			}
			expect_well_scaled(f);
			expect_forward_finite(f, presets[p]);
			gguf_close(f);
			if (t_failed_checks)
				return;
		}
	}
}

static void
test_determinism(void)
{
	size_t n1, n2, n3;
	struct synth_opts o = {.preset = "tiny-qwen2",
	                       .quant = "Q4_K_M",
	                       .vocab_path = NULL,
	                       .layers = 0,
	                       .seed = 99,
	                       .out = tmp_path};

	T_OK(synth_write(&o, NULL));
	void *a = t_read_file(tmp_path, &n1);
	T_OK(synth_write(&o, NULL));
	void *b = t_read_file(tmp_path, &n2);
	o.seed = 100;
	T_OK(synth_write(&o, NULL));
	void *c = t_read_file(tmp_path, &n3);
	T_TRUE(a && b && c);
	T_TRUE(n1 == n2 && memcmp(a, b, n1) == 0);
	T_TRUE(n1 == n3 && memcmp(a, c, n1) != 0);
	free(a);
	free(b);
	free(c);
}

static void
test_vocab_copy(void)
{
	struct gguf_file *v = NULL, *f = synth_open("tiny-qwen2", "Q8_0",
	                                            t_path("vocab/ggml-vocab-qwen2.gguf"), 1, 1);
	uint32_t u;

	T_TRUE(f != NULL);
	T_OK(gguf_open(t_path("vocab/ggml-vocab-qwen2.gguf"), &v, NULL));
	expect_tensor(f, "token_embd.weight", 256, 151936, GGML_TYPE_Q8_0);
	T_OK(gguf_get_u32(f, "qwen2.vocab_size", &u));
	T_EQ(u, 151936);
	for (size_t i = 0; i < gguf_kv_count(v); i++) {
		const struct gguf_kv *kv = gguf_kv_at(v, i), *mine;
		if (strncmp(kv->key, "tokenizer.", 10) != 0)
			continue;
		mine = gguf_find_kv(f, kv->key);
		T_TRUE(mine != NULL);
		T_EQ(mine->value.type, kv->value.type);
		if (kv->value.type == GGUF_VTYPE_ARRAY)
			T_EQ(mine->value.v.a.n, kv->value.v.a.n);
	}
	struct gguf_str a, b;
	T_OK(gguf_get_str(f, "tokenizer.chat_template", &a));
	T_OK(gguf_get_str(v, "tokenizer.chat_template", &b));
	T_TRUE(a.len == b.len && memcmp(a.ptr, b.ptr, a.len) == 0);
	gguf_close(v);
	gguf_close(f);
	struct synth_opts o = {.preset = "tiny-llama",
	                       .quant = NULL,
	                       .vocab_path = "/nonexistent.gguf",
	                       .layers = 0,
	                       .seed = 0,
	                       .out = tmp_path};
	struct orch_errinfo e = {0};
	T_ERR(synth_write(&o, &e), ORCH_EIO);
	T_TRUE(strstr(e.msg, "/nonexistent.gguf") != NULL);
}

static void
test_bad_options(void)
{
	struct synth_opts o = {.preset = "nope",
	                       .quant = NULL,
	                       .vocab_path = NULL,
	                       .layers = 0,
	                       .seed = 0,
	                       .out = tmp_path};
	struct orch_errinfo e = {0};

	T_ERR(synth_write(&o, &e), ORCH_EINVAL);
	T_TRUE(strstr(e.msg, "unknown preset 'nope'") != NULL);
	o.preset = "tiny-llama";
	o.quant = "IQ2_XS";
	T_ERR(synth_write(&o, &e), ORCH_EINVAL);
	T_TRUE(strstr(e.msg, "unknown quant 'IQ2_XS'") != NULL);
}

/* The real presets, one layer deep (qwen2.5 at full depth), in the Q4_K_M mix. */
static void
test_real_presets(void)
{
	struct gguf_file *f = synth_open("qwen2.5-0.5b", "Q4_K_M", NULL, 0, 1);
	uint32_t u;

	T_TRUE(f != NULL);
	T_EQ(gguf_tensor_count(f), 1 + 24 * 12 + 1);
	/* 896-wide rows are not whole 256-blocks: llama.cpp's fallbacks */
	expect_tensor(f, "token_embd.weight", 896, 151936, GGML_TYPE_Q8_0);
	expect_tensor(f, "blk.5.attn_q.weight", 896, 896, GGML_TYPE_Q5_0);
	expect_tensor(f, "blk.5.attn_k.weight", 896, 128, GGML_TYPE_Q5_0);
	expect_tensor(f, "blk.0.attn_v.weight", 896, 128, GGML_TYPE_Q8_0); /* Q6_K → Q8_0 */
	expect_tensor(f, "blk.4.attn_v.weight", 896, 128, GGML_TYPE_Q5_0);
	expect_tensor(f, "blk.0.ffn_down.weight", 4864, 896, GGML_TYPE_Q6_K);
	expect_tensor(f, "blk.4.ffn_down.weight", 4864, 896, GGML_TYPE_Q4_K);
	expect_tensor(f, "blk.5.ffn_down.weight", 4864, 896, GGML_TYPE_Q6_K);
	expect_tensor(f, "blk.23.ffn_up.weight", 896, 4864, GGML_TYPE_Q5_0);
	expect_tensor(f, "blk.23.attn_v.bias", 128, 1, GGML_TYPE_F32);
	T_OK(gguf_get_u32(f, "qwen2.attention.head_count", &u));
	T_EQ(u, 14);
	expect_forward_finite(f, "qwen2.5-0.5b Q4_K_M, 24 layers");
	gguf_close(f);
	f = synth_open("phi3-mini-4k", "Q4_K_M", NULL, 1, 1);
	T_TRUE(f != NULL);
	expect_tensor(f, "blk.0.attn_qkv.weight", 3072, 9216, GGML_TYPE_Q5_K);
	expect_tensor(f, "blk.0.ffn_up.weight", 3072, 16384, GGML_TYPE_Q4_K);
	expect_tensor(f, "blk.0.ffn_down.weight", 8192, 3072, GGML_TYPE_Q6_K);
	expect_tensor(f, "output.weight", 3072, 32064, GGML_TYPE_Q6_K);
	expect_tensor(f, "token_embd.weight", 3072, 32064, GGML_TYPE_Q4_K);
	expect_forward_finite(f, "phi3-mini-4k Q4_K_M, 1 layer");
	gguf_close(f);
	f = synth_open("llama-3.2-1b", "Q8_0", NULL, 1, 1);
	T_TRUE(f != NULL);
	expect_tensor(f, "token_embd.weight", 2048, 128256, GGML_TYPE_Q8_0);
	expect_tensor(f, "blk.0.attn_k.weight", 2048, 512, GGML_TYPE_Q8_0);
	expect_tensor(f, "blk.0.ffn_gate.weight", 2048, 8192, GGML_TYPE_Q8_0);
	expect_tensor(f, "rope_freqs.weight", 32, 1, GGML_TYPE_F32);
	T_TRUE(gguf_find_tensor(f, "output.weight") == NULL);
	const struct gguf_tensor *rf = gguf_find_tensor(f, "rope_freqs.weight");
	float first, last;
	memcpy(&first, rf->data, 4);
	memcpy(&last, (const char *)rf->data + 31 * 4, 4);
	T_NEAR(first, 1.0, 0); /* high frequencies unscaled */
	T_NEAR(last, 32.0, 0); /* low frequencies scaled by the factor */
	gguf_close(f);
	/* gpt-oss: MXFP4 experts (3-D) and an F32 router whatever the quant; the rest Q8_0 */
	f = synth_open("tiny-gpt-oss", "Q8_0", NULL, 0, 1);
	T_TRUE(f != NULL);
	expect_tensor(f, "blk.1.attn_q.weight", 256, 512, GGML_TYPE_Q8_0);
	expect_tensor(f, "blk.1.attn_sinks.weight", 8, 1, GGML_TYPE_F32);
	expect_tensor(f, "blk.1.ffn_gate_inp.weight", 256, 8, GGML_TYPE_F32);
	expect_tensor(f, "blk.1.ffn_down_exps.bias", 256, 8, GGML_TYPE_F32);
	const struct gguf_tensor *ex = gguf_find_tensor(f, "blk.1.ffn_down_exps.weight");
	T_TRUE(ex != NULL && ex->n_dims == 3 && ex->ne[0] == 256 && ex->ne[1] == 256 &&
	       ex->ne[2] == 8 && ex->type == GGML_TYPE_MXFP4);
	T_OK(gguf_get_u32(f, "gpt-oss.expert_used_count", &u));
	T_EQ(u, 4);
	T_OK(gguf_get_u32(f, "general.file_type", &u));
	T_EQ(u, 38);
	/* (its forward pass is the engine's: realmeta_test runs it in the worker and orchd) */
	gguf_close(f);
}

int
main(int argc, char **argv)
{
	snprintf(tmp_path, sizeof(tmp_path), "/tmp/orch-synth-test-%d.gguf", (int)getpid());
	T_RUN(test_tiny_llama_shapes);
	T_RUN(test_tiny_qwen2_phi3_shapes);
	T_RUN(test_every_quant);
	T_RUN(test_determinism);
	T_RUN(test_vocab_copy);
	T_RUN(test_bad_options);
	if (argc > 1 && strcmp(argv[1], "--real") == 0)
		T_RUN(test_real_presets);
	unlink(tmp_path);
	return t_done();
}
