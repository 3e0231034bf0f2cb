/*
 * cuda_load.c - the weights into the arena: each tensor is copied from the
 * mapped GGUF file in chunks through two pinned staging buffers, so the
 * host copy of one chunk overlaps the device transfer of the other.
 * Quantized tensors stay quantized, in their GGUF layout; a 3-D expert
 * tensor is one matrix of all its experts' rows (expert e's from row
 * e · ne1). b->layers is allocated by the caller (it holds the KV layout).
 */
#include <stdlib.h>
#include <string.h>

#include "cuda_int.h"
#include "gguf/gguf.h"

#define STAGE_BYTES (64u << 20)

struct stager {
	struct be_model *b;
	uint8_t *buf[2];
	cudaEvent_t done[2];
	unsigned next;
	uint64_t sent, total, reported;
	be_progress_fn progress;
	void *ctx;
};

static uint64_t
aligned(uint64_t n)
{
	return (n + CU_ALIGN - 1) / CU_ALIGN * CU_ALIGN;
}

static void
add_aligned(const struct gguf_tensor *t, void *ctx)
{
	*(uint64_t *)ctx += aligned(t->nbytes);
}

uint64_t
cu_weight_bytes(const struct model *m)
{
	uint64_t total = 0;

	model_for_each_tensor(m, add_aligned, &total);
	return total;
}

static cudaError_t
send(struct stager *s, const struct gguf_tensor *t, void *dst)
{
	const uint8_t *src = t->data;
	cudaError_t ce;

	for (uint64_t off = 0; off < t->nbytes; off += STAGE_BYTES) {
		uint64_t n = t->nbytes - off < STAGE_BYTES ? t->nbytes - off : STAGE_BYTES;
		unsigned k = s->next++ % 2;
		/* the buffer's previous transfer must be done before it is refilled */
		if ((ce = cudaEventSynchronize(s->done[k])) != cudaSuccess)
			return ce;
		memcpy(s->buf[k], src + off, n);
		if ((ce = cudaMemcpyAsync((uint8_t *)dst + off, s->buf[k], n,
		                          cudaMemcpyHostToDevice, s->b->st)) != cudaSuccess ||
		    (ce = cudaEventRecord(s->done[k], s->b->st)) != cudaSuccess)
			return ce;
		s->sent += n;
		if (s->progress &&
		    (s->sent - s->reported >= s->total / 100 || s->sent == s->total)) {
			s->reported = s->sent;
			s->progress(s->ctx, s->sent, s->total);
		}
	}
	return cudaSuccess;
}

static const void *
put(struct stager *s, const struct gguf_tensor *t, cudaError_t *ce)
{
	void *dst;

	if (t == NULL || *ce != cudaSuccess)
		return NULL;
	if ((dst = cu_arena_take(s->b, t->nbytes)) == NULL) {
		*ce = cudaErrorMemoryAllocation;
		return NULL;
	}
	*ce = send(s, t, dst);
	return dst;
}

static struct cuk_mat
put_mat(struct stager *s, const struct gguf_tensor *t, cudaError_t *ce)
{
	struct cuk_mat w = {0};

	if (t == NULL)
		return w;
	w.data = put(s, t, ce);
	w.type = t->type;
	w.ne0 = (uint32_t)t->ne[0];
	w.rows = (uint32_t)(t->n_elements / t->ne[0]);
	w.row_bytes = t->nbytes / w.rows;
	return w;
}

static cudaError_t
put_all(struct stager *s)
{
	struct be_model *b = s->b;
	const struct model *m = b->m;
	cudaError_t ce = cudaSuccess;

	b->tok_embd = put_mat(s, m->tok_embd, &ce);
	b->output_norm = put(s, m->output_norm, &ce);
	b->output = m->output == m->tok_embd ? b->tok_embd : put_mat(s, m->output, &ce);
	b->rope_freqs = put(s, m->rope_freqs, &ce);
	for (uint32_t l = 0; l < m->hp.n_layer; l++) {
		const struct model_layer *L = &m->layers[l];
		struct cu_layer *C = &b->layers[l];
		C->attn_norm = put(s, L->attn_norm, &ce);
		C->wq = put_mat(s, L->wq, &ce);
		C->wk = put_mat(s, L->wk, &ce);
		C->wv = put_mat(s, L->wv, &ce);
		C->wqkv = put_mat(s, L->wqkv, &ce);
		C->bq = put(s, L->bq, &ce);
		C->bk = put(s, L->bk, &ce);
		C->bv = put(s, L->bv, &ce);
		C->q_norm = put(s, L->q_norm, &ce);
		C->k_norm = put(s, L->k_norm, &ce);
		C->attn_post_norm = put(s, L->attn_post_norm, &ce);
		C->ffn_post_norm = put(s, L->ffn_post_norm, &ce);
		C->wo = put_mat(s, L->wo, &ce);
		C->bo = put(s, L->bo, &ce);
		C->sinks = put(s, L->sinks, &ce);
		C->ffn_norm = put(s, L->ffn_norm, &ce);
		C->w_gate = put_mat(s, L->w_gate, &ce);
		C->w_up = put_mat(s, L->w_up, &ce);
		C->w_gate_up = put_mat(s, L->w_gate_up, &ce);
		C->w_down = put_mat(s, L->w_down, &ce);
		C->router = put_mat(s, L->router, &ce);
		C->router_b = put(s, L->router_b, &ce);
		C->gate_exps = put_mat(s, L->gate_exps, &ce); /* 3-D: experts stacked by rows */
		C->up_exps = put_mat(s, L->up_exps, &ce);
		C->down_exps = put_mat(s, L->down_exps, &ce);
		C->gate_exps_b = put(s, L->gate_exps_b, &ce);
		C->up_exps_b = put(s, L->up_exps_b, &ce);
		C->down_exps_b = put(s, L->down_exps_b, &ce);
		C->fused_qkv = L->wqkv != NULL;
		C->fused_gate_up = L->w_gate_up != NULL;
	}
	return ce;
}

orch_err
cu_upload(struct be_model *b, be_progress_fn progress, void *ctx, struct orch_errinfo *reterr)
{
	struct stager s = {.b = b, .total = 0, .progress = progress, .ctx = ctx};
	cudaError_t ce;
	orch_err rv = ORCH_OK;

	s.total = b->weight_bytes;
	for (int k = 0; k < 2; k++)
		if ((ce = cudaMallocHost((void **)&s.buf[k], STAGE_BYTES)) != cudaSuccess ||
		    (ce = cudaEventCreateWithFlags(&s.done[k], cudaEventDisableTiming)) !=
		            cudaSuccess) {
			rv = orch_errf(reterr, ORCH_ENOMEM, "pinned staging buffers: %s",
			               cudaGetErrorString(ce));
			goto out;
		}
	if ((ce = put_all(&s)) != cudaSuccess || (ce = cudaStreamSynchronize(b->st)) != cudaSuccess)
		rv = cu_fail(b, ce, "copying the weights to the device", reterr);
	else if (progress)
		progress(ctx, b->weight_bytes, b->weight_bytes);
out:
	for (int k = 0; k < 2; k++) {
		if (s.done[k] != NULL)
			cudaEventDestroy(s.done[k]);
		cudaFreeHost(s.buf[k]);
	}
	return rv;
}
