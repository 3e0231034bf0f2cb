/*
 * model_tensors.c - every distinct tensor of a model, for the backends'
 * byte counts and loaders (compiled into orch_model and the CUDA module).
 */
#include <stddef.h>

#include "model.h"

void
model_for_each_tensor(const struct model *m, void (*fn)(const struct gguf_tensor *, void *),
                      void *ctx)
{
	const struct gguf_tensor *top[] = {m->tok_embd, m->output_norm, m->output, m->rope_freqs};

	for (size_t i = 0; i < 4; i++)
		if (top[i] != NULL && (i != 2 || top[i] != m->tok_embd))
			fn(top[i], ctx);
	for (uint32_t l = 0; l < m->hp.n_layer; l++) {
		const struct model_layer *L = &m->layers[l];
		const struct gguf_tensor *ts[] = {L->attn_norm,    L->wq,        L->wk,
		                                  L->wv,           L->wqkv,      L->bq,
		                                  L->bk,           L->bv,        L->wo,
		                                  L->bo,           L->sinks,     L->ffn_norm,
		                                  L->w_gate,       L->w_up,      L->w_gate_up,
		                                  L->w_down,       L->router,    L->router_b,
		                                  L->gate_exps,    L->up_exps,   L->down_exps,
		                                  L->gate_exps_b,  L->up_exps_b, L->down_exps_b,
		                                  L->q_norm,       L->k_norm,    L->attn_post_norm,
		                                  L->ffn_post_norm};
		for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++)
			if (ts[i] != NULL)
				fn(ts[i], ctx);
	}
}
