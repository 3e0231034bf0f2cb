/*
 * model_layers.c - map GGUF tensor names to struct model_layer, checking
 * every shape against the hyper-parameters. The architectures differ only
 * in the options of struct model_layout.
 */
#include <stdio.h>

#include "gguf/gguf.h"
#include "model_common.h"

static orch_err
map_layer(const struct gguf_file *f, const struct model_hparams *hp, uint32_t il,
          const struct model_layout *lay, struct model_layer *l, struct orch_errinfo *reterr)
{
	uint64_t e = hp->n_embd, q = (uint64_t)hp->head_dim * hp->n_head;
	uint64_t kv = (uint64_t)hp->head_dim * hp->n_head_kv, ff = hp->n_ff;
	orch_err rv = ORCH_OK;
	char n[96];

#define T(suffix, a, b, req) \
	(snprintf(n, sizeof(n), "blk.%u." suffix, il), model_tensor(f, n, a, b, req, &rv, reterr))
	l->attn_norm = T("attn_norm.weight", e, 0, true);
	if (lay->fused_qkv) {
		l->wqkv = T("attn_qkv.weight", e, q + 2 * kv, true);
	} else {
		l->wq = T("attn_q.weight", e, q, true);
		l->wk = T("attn_k.weight", e, kv, true);
		l->wv = T("attn_v.weight", e, kv, true);
	}
	if (lay->qkv_bias) {
		l->bq = T("attn_q.bias", q, 0, true);
		l->bk = T("attn_k.bias", kv, 0, true);
		l->bv = T("attn_v.bias", kv, 0, true);
	}
	if (lay->opt_bias) { /* llama.cpp's loader takes each when the file has it */
		l->bq = T("attn_q.bias", q, 0, false);
		l->bk = T("attn_k.bias", kv, 0, false);
		l->bv = T("attn_v.bias", kv, 0, false);
		l->bo = T("attn_output.bias", e, 0, false);
	}
	if (lay->qk_norm) {
		l->q_norm = T("attn_q_norm.weight", hp->head_dim, 0, true);
		l->k_norm = T("attn_k_norm.weight", hp->head_dim, 0, true);
	}
	l->wo = T("attn_output.weight", q, e, true);
	l->ffn_norm = T("ffn_norm.weight", e, 0, true);
	if (lay->moe) {
		l->router = T("ffn_gate_inp.weight", e, hp->n_expert, true);
#define T3(suffix, a, b, c) \
	(snprintf(n, sizeof(n), "blk.%u." suffix, il), model_tensor3(f, n, a, b, c, &rv, reterr))
		l->gate_exps = T3("ffn_gate_exps.weight", e, hp->n_ff_exp, hp->n_expert);
		l->up_exps = T3("ffn_up_exps.weight", e, hp->n_ff_exp, hp->n_expert);
		l->down_exps = T3("ffn_down_exps.weight", hp->n_ff_exp, e, hp->n_expert);
#undef T3
		return rv;
	}
	if (lay->fused_ffn) {
		l->w_gate_up = T("ffn_up.weight", e, 2 * ff, true);
	} else {
		l->w_gate = T("ffn_gate.weight", e, ff, true);
		l->w_up = T("ffn_up.weight", e, ff, true);
	}
	l->w_down = T("ffn_down.weight", ff, e, true);
	if (lay->post_norms) {
		l->attn_post_norm = T("post_attention_norm.weight", e, 0, true);
		l->ffn_post_norm = T("post_ffw_norm.weight", e, 0, true);
	}
#undef T
	return rv;
}

orch_err
model_map_ends(const struct gguf_file *f, struct model *m, bool tied_ok,
               struct orch_errinfo *reterr)
{
	struct model_hparams *hp = &m->hp;
	const struct gguf_tensor *embd = gguf_find_tensor(f, "token_embd.weight");
	orch_err rv = ORCH_OK;

	if (embd == NULL)
		return orch_errf(reterr, ORCH_ENOTFOUND, "%s: tensor token_embd.weight is missing",
		                 gguf_name(f));
	hp->n_vocab = (uint32_t)embd->ne[1];
	m->tok_embd =
	        model_tensor(f, "token_embd.weight", hp->n_embd, hp->n_vocab, true, &rv, reterr);
	m->output_norm = model_tensor(f, "output_norm.weight", hp->n_embd, 0, true, &rv, reterr);
	m->output =
	        model_tensor(f, "output.weight", hp->n_embd, hp->n_vocab, !tied_ok, &rv, reterr);
	if (rv == ORCH_OK && m->output == NULL)
		m->output = m->tok_embd; /* tied embeddings */
	return rv;
}

orch_err
model_map(const struct gguf_file *f, struct model *m, const struct model_layout *lay,
          struct orch_errinfo *reterr)
{
	struct model_hparams *hp = &m->hp;
	orch_err rv = model_map_ends(f, m, true, reterr);

	if (rv != ORCH_OK)
		return rv;
	m->rope_freqs = model_tensor(f, "rope_freqs.weight", hp->n_rot / 2, 0, false, &rv, reterr);
	for (uint32_t il = 0; il < hp->n_layer && rv == ORCH_OK; il++)
		rv = map_layer(f, hp, il, lay, &m->layers[il], reterr);
	return rv;
}
