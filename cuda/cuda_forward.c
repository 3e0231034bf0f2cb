/*
 * cuda_forward.c - one forward step on the device, and the decode graphs.
 *
 * Design notes
 * - The step's inputs (token ids, positions, KV slots, which rows give
 *   logits) are read by the kernels from device arrays. They are staged in
 *   pinned memory and uploaded in one copy only when they differ from what
 *   the device holds: after a sampled decode step the device advances them
 *   itself (cuda_sample.c), so a steady decode step uploads nothing and
 *   copies back only the sampled ids.
 * - A decode-only step of n sequences replays the CUDA graph of the
 *   smallest bucket (1, 2, 4, ...) ≥ n, captured at load after a warm-up;
 *   the bucket's spare entries compute a dummy token in the padding slot.
 *   The graph is the same kernels with the same arguments as the eager
 *   path, sized for the whole context (attention parts past a token's
 *   position return at once), so tokens are identical with and without it.
 * - Nothing here allocates or synchronizes the device; the callers
 *   synchronize the stream once, when the ids or logits come back.
 */
#include <stdio.h>
#include <string.h>

#include "cuda_int.h"
#include "gguf/gguf.h"

#define TRY(call)                                 \
	do {                                      \
		if ((ce = (call)) != cudaSuccess) \
			return ce;                \
	} while (0)

/* gemma3: b->tmp (a block's output) = rmsnorm(b->tmp) · @w before the residual add. */
static cudaError_t
post_norm(struct be_model *b, const float *w, uint32_t T)
{
	const struct model_hparams *hp = &b->m->hp;

	if (w == NULL)
		return cudaSuccess;
	return cuk_rmsnorm(b->tmp, NULL, w, hp->n_embd, hp->rms_eps, T, NULL, b->tmp, b->st);
}

/*
 * The step's queries and keys as cpu_forward's rope_store leaves them: each head's RMSNorm
 * (qwen3), RoPE, then the queries scaled (gemma3) or tempered (mistral3).
 */
static cudaError_t
rope_qk(struct be_model *b, const struct cu_layer *L, uint32_t T)
{
	const struct model_hparams *hp = &b->m->hp;
	cudaError_t ce;

	if (L->q_norm != NULL) { /* qwen3: each query and key head's RMSNorm, before RoPE */
		TRY(cuk_head_rmsnorm(b->qkv, b->qkv_dim, T, hp->n_head, hp->head_dim, L->q_norm,
		                     hp->rms_eps, b->st));
		TRY(cuk_head_rmsnorm(b->qkv + b->q_dim, b->qkv_dim, T, hp->n_head_kv, hp->head_dim,
		                     L->k_norm, hp->rms_eps, b->st));
	}
	/* gemma3: a global layer's positions scaled linearly (no factors, as the CPU) */
	TRY(cuk_rope(b->qkv, b->qkv_dim, T, b->d.pos, hp->n_head, hp->n_head_kv, hp->head_dim,
	             hp->n_rot, L->theta_scale, L->rope_lin ? NULL : b->rope_freqs,
	             b->has_yarn   ? &b->yarn
	             : L->rope_lin ? &b->rope_lin
	                           : NULL,
	             hp->rope_neox, b->st));
	if (hp->attn_scale > 0) /* gemma3: the queries scaled, the scores then by 1 */
		TRY(cuk_scale(b->qkv, b->qkv_dim, b->q_dim, T, hp->attn_scale, b->st));
	if (hp->attn_temp_scale != 0) /* mistral3: each query times its position's temperature */
		TRY(cuk_attn_temp(b->qkv, b->qkv_dim, b->q_dim, T, b->d.pos, hp->attn_temp_scale,
		                  hp->attn_temp_floor, b->st));
	return cudaSuccess;
}

static cudaError_t
attention_block(struct be_model *b, uint32_t l, uint32_t T, uint32_t n_split)
{
	const struct model_hparams *hp = &b->m->hp;
	const struct cu_layer *L = &b->layers[l];
	struct cuk_kv kv = {.k_base = (void *const *)b->d_k_base,
	                    .v_base = (void *const *)b->d_v_base,
	                    .layer_off = L->kv_cell0,
	                    .cells = L->kv_cells,
	                    .kv_dim = b->kv_dim,
	                    .window = L->window,
	                    .f16 = !b->cfg.kv_f32};
	uint32_t win_split = (L->window + CUK_ATTN_SPLIT - 1) / CUK_ATTN_SPLIT;
	cudaError_t ce;

	if (b->paged) { /* kv.cuh: rows through the step's block tables */
		kv.k_pool = b->k_pool;
		kv.v_pool = b->v_pool;
		kv.blocks = b->d_tab;
		kv.tbl = L->swa ? b->d.swa_tbl : b->d.tbl;
		kv.bt = b->cfg.kv_block_tokens;
	}
	/* a window needs no more parts than its own positions fill */
	if (L->window > 0 && win_split < n_split)
		n_split = win_split;

	/* x += the previous layer's FFN output, then the attention norm */
	TRY(cuk_rmsnorm(b->x, l > 0 ? b->tmp : NULL, L->attn_norm, hp->n_embd, hp->rms_eps, T, NULL,
	                b->xn, b->st));
	struct cu_act xn = cu_act_new(b, b->xn, hp->n_embd);
	if (L->fused_qkv) {
		TRY(cu_matmul(b, &L->wqkv, 0, b->qkv_dim, &xn, b->qkv, b->qkv_dim, NULL));
	} else {
		TRY(cu_matmul(b, &L->wq, 0, b->q_dim, &xn, b->qkv, b->qkv_dim, L->bq));
		TRY(cu_matmul(b, &L->wk, 0, b->kv_dim, &xn, b->qkv + b->q_dim, b->qkv_dim, L->bk));
		TRY(cu_matmul(b, &L->wv, 0, b->kv_dim, &xn, b->qkv + b->q_dim + b->kv_dim,
		              b->qkv_dim, L->bv));
	}
	TRY(rope_qk(b, L, T));
	TRY(cuk_kv_append(&kv, b->qkv, b->qkv_dim, b->q_dim, T, b->d.slot, b->d.pos, b->st));
	/* in launches of attn_tokens tokens: the parts' scratch holds that many; each
	 * launch's per-token arrays (slot, pos, the paged table entries) start at its own */
	for (uint32_t t0 = 0; t0 < T; t0 += b->attn_tokens) {
		uint32_t n = T - t0 < b->attn_tokens ? T - t0 : b->attn_tokens;
		struct cuk_kv kv_t = kv;
		if (kv.tbl != NULL)
			kv_t.tbl = kv.tbl + t0;
		TRY(cuk_attention(&kv_t, b->qkv + (uint64_t)t0 * b->qkv_dim, b->qkv_dim, n,
		                  b->d.slot + t0, b->d.pos + t0, hp->n_head, hp->n_head_kv,
		                  hp->head_dim, n_split, L->sinks, hp->attn_scale > 0 ? 1.0f : 0.0f,
		                  b->part, b->att + (uint64_t)t0 * b->q_dim, b->q_dim, b->st));
	}
	struct cu_act att = cu_act_new(b, b->att, b->q_dim);
	TRY(cu_matmul(b, &L->wo, 0, hp->n_embd, &att, b->tmp, hp->n_embd, L->bo));
	return post_norm(b, L->attn_post_norm, T);
}

static cudaError_t
ffn_block(struct be_model *b, uint32_t l, uint32_t T)
{
	const struct model_hparams *hp = &b->m->hp;
	const struct cu_layer *L = &b->layers[l];
	uint64_t ld = 2ull * hp->n_ff;
	cudaError_t ce;

	/* x += attention output, then the FFN norm */
	TRY(cuk_rmsnorm(b->x, b->tmp, L->ffn_norm, hp->n_embd, hp->rms_eps, T, NULL, b->xn, b->st));
	struct cu_act xn = cu_act_new(b, b->xn, hp->n_embd);
	if (L->fused_gate_up) { /* gate rows first, then up: one product into [gate | up] */
		TRY(cu_matmul(b, &L->w_gate_up, 0, 2 * hp->n_ff, &xn, b->gu, ld, NULL));
	} else {
		TRY(cu_matmul(b, &L->w_gate, 0, hp->n_ff, &xn, b->gu, ld, NULL));
		TRY(cu_matmul(b, &L->w_up, 0, hp->n_ff, &xn, b->gu + hp->n_ff, ld, NULL));
	}
	TRY(hp->ffn_gelu ? cuk_geglu(b->gu, b->gu + hp->n_ff, ld, hp->n_ff, T, b->gelu, b->st)
	                 : cuk_swiglu(b->gu, b->gu + hp->n_ff, ld, hp->n_ff, T, b->st));
	struct cu_act h = cu_act_new(b, b->gu, ld);
	TRY(cu_matmul(b, &L->w_down, 0, hp->n_embd, &h, b->tmp, hp->n_embd, NULL));
	return post_norm(b, L->ffn_post_norm, T);
}

/* The whole step over T tokens whose inputs are on the device; logits of @n_out rows. */
static cudaError_t
run_layers(struct be_model *b, uint32_t T, uint32_t n_out, uint32_t n_split)
{
	const struct model_hparams *hp = &b->m->hp;
	cudaError_t ce;

	TRY(cuk_embed(&b->tok_embd, b->d.tok, T, b->x, b->st));
	if (hp->embd_scale > 0) /* gemma3: √n_embd */
		TRY(cuk_scale(b->x, hp->n_embd, hp->n_embd, T, hp->embd_scale, b->st));
	for (uint32_t l = 0; l < hp->n_layer; l++) {
		TRY(attention_block(b, l, T, n_split));
		TRY(hp->n_expert > 0 ? cu_moe_block(b, l, T) : ffn_block(b, l, T));
	}
	TRY(cuk_add(b->x, b->tmp, (uint64_t)T * hp->n_embd, b->st));
	TRY(cuk_rmsnorm(b->x, NULL, b->output_norm, hp->n_embd, hp->rms_eps, n_out, b->d.rows,
	                b->last, b->st));
	struct cu_act last = cu_act_new(b, b->last, hp->n_embd);
	TRY(cu_matmul_rows(b, &b->output, &last, n_out, b->logits, hp->n_vocab));
	if (hp->final_softcap > 0) /* gemma3, when the file says */
		TRY(cuk_softcap(b->logits, (uint64_t)n_out * hp->n_vocab, hp->final_softcap,
		                b->st));
	return cudaSuccess;
}

/*
 * Upload the staged inputs for @T tokens and @n_out outputs, and paged the
 * block tables, unless the device has them.
 */
static cudaError_t
upload_step(struct be_model *b, uint32_t T, uint32_t n_out)
{
	bool same = b->mir_T == T && memcmp(b->h.tok, b->mir.tok, T * 4ull) == 0 &&
	            memcmp(b->h.pos, b->mir.pos, T * 4ull) == 0 &&
	            memcmp(b->h.slot, b->mir.slot, T * 4ull) == 0 &&
	            memcmp(b->h.rows, b->mir.rows, n_out * 4ull) == 0 &&
	            (!b->paged || (memcmp(b->h.tbl, b->mir.tbl, T * 4ull) == 0 &&
	                           memcmp(b->h.swa_tbl, b->mir.swa_tbl, T * 4ull) == 0));
	bool tables = false;
	cudaError_t ce;

	/* each copy from pinned memory is followed by the event h_step_writable waits on */
	if (b->paged && ((ce = cu_upload_tables(b, &tables)) != cudaSuccess ||
	                 (tables && (ce = cudaEventRecord(b->uploaded, b->st)) != cudaSuccess)))
		return ce;
	if (same)
		return cudaSuccess;
	memcpy(b->mir_step, b->h_step, b->step_bytes);
	b->mir_T = T;
	if ((ce = cudaMemcpyAsync(b->d_step, b->h_step, b->step_bytes, cudaMemcpyHostToDevice,
	                          b->st)) != cudaSuccess)
		return ce;
	return cudaEventRecord(b->uploaded, b->st);
}

/*
 * Wait until the device has read the last upload of h_step, before it is
 * written again. A copy from pinned memory happens when the stream reaches
 * it, and a step whose logits nobody wants returns without waiting for the
 * device: the next step's inputs, staged over the same pinned bytes, were
 * read by the previous step's copy whenever the device lagged (positions
 * whose K/V were then never written; on an H100 a gpt-oss prompt's first
 * sampled token changed, under compute-sanitizer every time).
 */
static cudaError_t
h_step_writable(struct be_model *b)
{
	return cudaEventSynchronize(b->uploaded);
}

/*
 * Stage a step of @T padding tokens (slot `slots`, position 0; paged, the
 * padding tables at entries 0 and nb_max) and as many outputs.
 */
static void
stage_padding(struct be_model *b, uint32_t from, uint32_t T)
{
	for (uint32_t i = from; i < T; i++) {
		b->h.tok[i] = 0;
		b->h.pos[i] = 0;
		b->h.slot[i] = b->cfg.slots;
		b->h.tbl[i] = 0;
		b->h.swa_tbl[i] = b->nb_max;
		if (i < b->slots_pad)
			b->h.rows[i] = i;
	}
}

/*
 * The host side of @n sequences' step: token ids, positions and slots per token
 * (b->h), runs of tokens for the matrix products (b->runs), the rows whose logits
 * come back; *@max_pos the end of the furthest position, *@decode whether every
 * sequence decodes one token. Returns the rows of logits.
 */
static uint32_t
stage_batch(struct be_model *b, const struct be_seq *seqs, uint32_t n, uint32_t *max_pos,
            bool *decode)
{
	uint32_t t = 0, n_out = 0;

	b->n_runs = 0;
	b->tab_n = 2 * b->nb_max; /* paged: the step's tables follow the padding tables */
	for (uint32_t i = 0; i < n; i++) {
		const struct be_seq *s = &seqs[i];
		bool gemm = s->n_tokens > CU_MMV_MAX_TOKENS;
		struct cu_run *last = b->n_runs ? &b->runs[b->n_runs - 1] : NULL;
		if (last && !gemm && !last->gemm)
			last->n += s->n_tokens;
		else
			b->runs[b->n_runs++] = (struct cu_run){t, s->n_tokens, gemm};
		if (s->pos == 0) /* a new job in the slot: its history starts over */
			b->hist_dev[s->slot] = 0;
		if (b->paged)
			cu_stage_tables(b, s, t);
		for (uint32_t k = 0; k < s->n_tokens; k++, t++) {
			b->h.tok[t] = s->tokens[k];
			b->h.pos[t] = s->pos + k;
			b->h.slot[t] = s->slot;
		}
		*max_pos = s->pos + s->n_tokens > *max_pos ? s->pos + s->n_tokens : *max_pos;
		if (s->want_logits)
			b->h.rows[n_out++] = t - 1;
		*decode = *decode && s->n_tokens == 1 && s->want_logits;
	}
	return n_out;
}

/* ORCH_CUDA_TRACE: a step's sequences (slot, first position, tokens) and how it ran. */
static void
trace_step(const struct be_model *b, const struct be_seq *seqs, uint32_t n, uint32_t bucket)
{
	fprintf(stderr, "cu_step %llu:", (unsigned long long)b->steps);
	for (uint32_t i = 0; i < n; i++)
		fprintf(stderr, " [slot %u pos %u +%u%s]", seqs[i].slot, seqs[i].pos,
		        seqs[i].n_tokens, seqs[i].want_logits ? " out" : "");
	fprintf(stderr, bucket ? " graph %u\n" : " eager\n", bucket ? b->bucket[bucket - 1] : 0);
}

orch_err
cu_step(struct be_model *b, const struct be_seq *seqs, uint32_t n, uint32_t *ret_n_out,
        struct orch_errinfo *reterr)
{
	uint32_t T = 0, n_out = 0, max_pos = 0, bucket = 0;
	bool decode = true;
	cudaError_t ce;
	orch_err rv;

	if (b->dead)
		return orch_errf(reterr, ORCH_ECUDA, "the CUDA context is unusable");
	if (n == 0)
		return orch_errf(reterr, ORCH_EINVAL, "an empty batch");
	for (uint32_t i = 0; i < n; i++) /* not be_ops.all_logits: the scheduler feeds one by one */
		if (seqs[i].all_logits)
			return orch_errf(reterr, ORCH_EINVAL,
			                 "the cuda backend gives only each sequence's last logits");
	if ((ce = cudaSetDevice(b->dev)) != cudaSuccess) /* the caller's thread may differ */
		return cu_fail(b, ce, "selecting the device", reterr);
	if ((rv = be_check_batch(&b->cfg, b->m->hp.n_vocab, b->m->hp.n_swa, seqs, n, &T, reterr)) !=
	    ORCH_OK)
		return rv;
	for (uint32_t i = 0; i < n && !b->paged; i++)
		if (b->k_slot[seqs[i].slot] == NULL &&
		    (rv = cu_reserve(b, seqs[i].slot, reterr)) != ORCH_OK)
			return rv;
	if ((ce = h_step_writable(b)) != cudaSuccess)
		goto fail;
	n_out = stage_batch(b, seqs, n, &max_pos, &decode);
	for (uint32_t k = 0; decode && !b->cfg.no_graphs && k < b->n_buckets; k++)
		if (b->graph[k] != NULL && b->bucket[k] >= n) {
			bucket = k + 1;
			break;
		}
	if (b->trace)
		trace_step(b, seqs, n, bucket);
	if (bucket) {
		uint32_t B = b->bucket[bucket - 1];
		stage_padding(b, n, B);
		if ((ce = upload_step(b, B, B)) != cudaSuccess ||
		    (ce = cudaGraphLaunch(b->graph[bucket - 1], b->st)) != cudaSuccess)
			goto fail;
		b->graph_steps++;
	} else {
		if ((ce = upload_step(b, T, n_out)) != cudaSuccess ||
		    (ce = run_layers(b, T, n_out,
		                     (max_pos + CUK_ATTN_SPLIT - 1) / CUK_ATTN_SPLIT)) !=
		            cudaSuccess)
			goto fail;
	}
	b->steps++;
	*ret_n_out = n_out;
	return ORCH_OK;
fail:
	b->mir_T = 0;
	b->mir_tab_n = 0; /* unknown: upload the tables next time */
	return cu_fail(b, ce, "forward step", reterr);
}

orch_err
cu_forward(struct be_model *b, const struct be_seq *seqs, uint32_t n, const float **ret_logits,
           struct orch_errinfo *reterr)
{
	uint32_t n_out = 0;
	cudaError_t ce;
	orch_err rv = cu_step(b, seqs, n, &n_out, reterr);

	if (rv != ORCH_OK)
		return rv;
	/* the device-side histories were not advanced: re-send them before the next sampling */
	for (uint32_t i = 0; i < n; i++)
		b->hist_dev[seqs[i].slot] = 0;
	if ((ce = cudaMemcpyAsync(b->h_logits, b->logits, (uint64_t)n_out * b->m->hp.n_vocab * 4,
	                          cudaMemcpyDeviceToHost, b->st)) != cudaSuccess ||
	    (ce = cudaStreamSynchronize(b->st)) != cudaSuccess)
		return cu_fail(b, ce, "copying logits back", reterr);
	*ret_logits = b->h_logits;
	return ORCH_OK;
}

/* One eager step of @T padding tokens; @gemm: as one long sequence (prefill path). */
static cudaError_t
warm_up(struct be_model *b, uint32_t T, bool gemm)
{
	cudaError_t ce;

	stage_padding(b, 0, T);
	if (gemm)
		for (uint32_t i = 0; i < T; i++)
			b->h.pos[i] = i;
	b->runs[0] = (struct cu_run){0, T, gemm};
	b->n_runs = 1;
	if ((ce = upload_step(b, T, T > b->slots_pad ? b->slots_pad : T)) != cudaSuccess ||
	    (ce = run_layers(b, T, T > b->slots_pad ? b->slots_pad : T,
	                     (T + CUK_ATTN_SPLIT - 1) / CUK_ATTN_SPLIT)) != cudaSuccess)
		return ce;
	return cudaStreamSynchronize(b->st);
}

static cudaError_t
capture(struct be_model *b, uint32_t k)
{
	uint32_t B = b->bucket[k];
	cudaGraph_t g = NULL;
	cudaError_t ce, ce2;

	b->runs[0] = (struct cu_run){0, B, false};
	b->n_runs = 1;
	if ((ce = cudaStreamBeginCapture(b->st, cudaStreamCaptureModeThreadLocal)) != cudaSuccess)
		return ce;
	ce = run_layers(b, B, B, b->n_split);
	ce2 = cudaStreamEndCapture(b->st, &g);
	if (ce == cudaSuccess)
		ce = ce2;
	if (ce == cudaSuccess)
		ce = cudaGraphInstantiate(&b->graph[k], g, 0);
	if (g != NULL)
		cudaGraphDestroy(g);
	if (ce == cudaSuccess && (ce = cudaGraphLaunch(b->graph[k], b->st)) == cudaSuccess)
		ce = cudaStreamSynchronize(b->st);
	return ce;
}

orch_err
cu_graphs_build(struct be_model *b, struct orch_errinfo *reterr)
{
	uint32_t long_T = 2 * CU_MMV_MAX_TOKENS; /* positions 0.. of the padding slot */

	long_T = b->cfg.max_batch_tokens < long_T ? b->cfg.max_batch_tokens : long_T;
	long_T = b->cfg.n_ctx < long_T ? b->cfg.n_ctx : long_T;
	cudaError_t ce;

	/* every path once, so that module loading and cuBLAS set-up happen now */
	if (long_T > CU_MMV_MAX_TOKENS && (ce = warm_up(b, long_T, true)) != cudaSuccess)
		return cu_fail(b, ce, "warm-up (prefill path)", reterr);
	for (uint32_t k = 0; k < b->n_buckets; k++) {
		if ((ce = warm_up(b, b->bucket[k], false)) != cudaSuccess)
			return cu_fail(b, ce, "warm-up (decode path)", reterr);
		if (!b->cfg.no_graphs && (ce = capture(b, k)) != cudaSuccess)
			return cu_fail(b, ce, "capturing a decode graph", reterr);
	}
	b->mir_T = 0;
	return ORCH_OK;
}
