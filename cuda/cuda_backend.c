/*
 * cuda_backend.c - the CUDA backend: the device and its context, the exact
 * footprint and the VRAM check, the arena (its allocator: cuda_base.c), load,
 * memory, free.
 *
 * Design notes
 * - Everything a step touches lives in device memory from plain
 *   cudaMalloc: one arena sized at load from the exact footprint (weights,
 *   activations for max_batch_tokens, sampling state, the cuBLAS
 *   workspace) plus one KV allocation per slot. The KV of every slot is in
 *   the footprint the load checks against cudaMemGetInfo, but a slot's is
 *   allocated when a job first uses it (reserve): if another process took
 *   the memory in between, that job fails with VRAM_OOM and the worker
 *   keeps serving.
 * - A slot's KV allocation holds each layer's cells one after the other: a
 *   sliding-window layer keeps only its window plus the most tokens one
 *   sequence feeds in a step (max_batch_tokens), as a ring (position p in
 *   cell p % cells); every other layer, or a window that would not save
 *   anything, keeps n_ctx cells. The footprint counts exactly that.
 * - Paged (cfg.kv_blocks > 0, cuda_paged.c), the KV cache is instead one K
 *   and one V pool of blocks for all layers and sequences, allocated (and
 *   zeroed) at load like the arena: memory is taken block by block by the
 *   scheduler, which admits and preempts by free blocks, so no job meets a
 *   VRAM_OOM for its KV once the model is loaded.
 * - Host memory on the step path is pinned (step inputs, sampled ids,
 *   logits for callers that want them) and only staged through.
 * - The module is loaded with dlopen for a cuda:N device; be_cuda_ops is
 *   its one exported symbol.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/parse.h"
#include "cuda_int.h"
#include "gguf/ggml_type.h"
#include "gguf/gguf.h"
#include "gguf/model_info.h"

#define MIB(x) ((unsigned long long)((x) >> 20))

static uint64_t
al(uint64_t bytes)
{
	return (bytes + CU_ALIGN - 1) / CU_ALIGN * CU_ALIGN;
}

/* Floats of gu a token takes: [gate | up] of the dense FFN, or of each chosen expert. */
static uint64_t
gu_floats(const struct model_hparams *hp)
{
	uint64_t dense = 2ull * hp->n_ff, moe = 2ull * hp->n_expert_used * hp->n_ff_exp;

	return dense > moe ? dense : moe;
}

/* The mixture of experts' buffers for B tokens (0 for a dense model), in carve_arena's order. */
static uint64_t
moe_bytes(const struct model_hparams *hp, uint64_t B)
{
	uint64_t BK = B * hp->n_expert_used;

	if (hp->n_expert == 0)
		return 0;
	return al(B * hp->n_expert * 4) + al(BK * 4) + al(BK * 4) + al(BK * hp->n_embd * 4);
}

/* What the arena holds besides the weights, for B tokens a step (set_shapes first). */
static uint64_t
scratch_bytes(struct be_model *b, uint64_t sort_tmp)
{
	const struct model_hparams *hp = &b->m->hp;
	uint64_t B =
	        b->cfg.max_batch_tokens > b->slots_pad ? b->cfg.max_batch_tokens : b->slots_pad;
	uint64_t S = b->slots_pad, V = hp->n_vocab, f = sizeof(float), s1 = b->cfg.slots + 1u;
	uint64_t part =
	        cuk_attention_part_floats(b->attn_tokens, hp->n_head, hp->head_dim, b->n_split);

	return 3 * al(B * hp->n_embd * f) + al(B * b->qkv_dim * f) + al(B * b->q_dim * f) +
	       al(B * gu_floats(hp) * f) + al(S * hp->n_embd * f) + al(S * V * f) + al(part * f) +
	       al((uint64_t)CU_GEMM_TILE_ROWS * b->max_ne0 * 2) + al(B * b->max_ne0 * 2) +
	       al(CU_BLAS_WS_BYTES) + al(b->step_bytes) + al(S * sizeof(struct cuk_samp)) +
	       al(s1 * b->hist_cap * 4) + 2 * al(2 * S * V * 4) + al(S * V * 4) + al(S * 4) +
	       al((S + 1) * 4) + al(sort_tmp) + 2 * al(s1 * sizeof(void *)) + moe_bytes(hp, B) +
	       al(b->xq_bytes) + al(b->xqk_bytes) + al((uint64_t)b->tab_cap * 4) +
	       al(S * BE_SAMPLE_MAX_BIAS * sizeof(struct cuk_bias)) + al(S * b->mask_words * 4) +
	       (hp->ffn_gelu ? al(65536 * f) : 0);
}

static orch_err
parse_device(const char *dev, int *ret, struct orch_errinfo *reterr)
{
	uint64_t v;

	if (dev == NULL || strncmp(dev, "cuda:", 5) != 0 ||
	    orch_parse_u64(dev + 5, 0, 1023, &v) != ORCH_OK)
		return orch_errf(reterr, ORCH_EINVAL, "device '%s': want cuda:N", dev ? dev : "");
	*ret = (int)v;
	return ORCH_OK;
}

static void
fill_info(int dev, struct be_info *ret)
{
	int drv = 0, rt = 0;
	struct cudaDeviceProp p;

	memset(ret, 0, sizeof(*ret));
	if (cudaGetDeviceProperties(&p, dev) == cudaSuccess) {
		snprintf(ret->device, sizeof(ret->device), "%.96s, compute %d.%d, %d SMs, %.1f GiB",
		         p.name, p.major, p.minor, p.multiProcessorCount,
		         (double)p.totalGlobalMem / (1024.0 * 1024.0 * 1024.0));
		snprintf(ret->sm, sizeof(ret->sm), "sm_%d%d", p.major % 100, p.minor % 10);
	}
	if (cudaRuntimeGetVersion(&rt) == cudaSuccess)
		snprintf(ret->cuda_version, sizeof(ret->cuda_version), "%d.%d", rt / 1000,
		         rt % 1000 / 10);
	if (cudaDriverGetVersion(&drv) == cudaSuccess && drv > 0)
		snprintf(ret->driver_version, sizeof(ret->driver_version), "%d.%d", drv / 1000,
		         drv % 1000 / 10);
}

static void
cuda_info(const char *device, struct be_info *ret)
{
	int dev = 0;

	size_t mem_free = 0, mem_total = 0;

	if (parse_device(device, &dev, NULL) != ORCH_OK) {
		memset(ret, 0, sizeof(*ret));
		return;
	}
	fill_info(dev, ret);
	if (cudaSetDevice(dev) == cudaSuccess &&
	    cudaMemGetInfo(&mem_free, &mem_total) == cudaSuccess) {
		ret->mem_free = mem_free;
		ret->mem_total = mem_total;
	}
}

static orch_err
open_device(struct be_model *b, struct orch_errinfo *reterr)
{
	int count = 0;
	cudaError_t ce = cudaGetDeviceCount(&count);
	struct cudaDeviceProp p;
	char why[256] = "";

	if (ce != cudaSuccess || count == 0)
		return orch_errf(reterr, ORCH_EUNSUPPORTED, "device %s: no CUDA device (%s)",
		                 b->cfg.device,
		                 ce != cudaSuccess ? cudaGetErrorString(ce) : "0 devices");
	if (b->dev >= count)
		return orch_errf(reterr, ORCH_EINVAL,
		                 "device %s: this machine has %d CUDA device%s", b->cfg.device,
		                 count, count == 1 ? "" : "s");
	if ((ce = cudaSetDevice(b->dev)) != cudaSuccess ||
	    (ce = cudaGetDeviceProperties(&p, b->dev)) != cudaSuccess)
		return cu_fail(NULL, ce, "opening the device", reterr);
	fill_info(b->dev, &b->info);
	ce = cuk_limits_check(b->dev, why, sizeof(why));
	if (ce == cudaErrorNoKernelImageForDevice || ce == cudaErrorInvalidDeviceFunction ||
	    ce == cudaErrorInvalidConfiguration)
		return orch_errf(
		        reterr, ORCH_EUNSUPPORTED,
		        "device %s (%.96s, compute %d.%d): this build has no usable kernels "
		        "for it (%s); build with its architecture in ORCH_CUDA_ARCHS",
		        b->cfg.device, p.name, p.major, p.minor, why);
	if (ce != cudaSuccess) /* not the build's fault: say what failed */
		return orch_errf(reterr, ORCH_ECUDA, "device %s (%.96s): checking the kernels: %s",
		                 b->cfg.device, p.name, why);
	return ORCH_OK;
}

static orch_err
check_model(struct be_model *b, struct orch_errinfo *reterr)
{
	const struct model_hparams *hp = &b->m->hp;
	const struct model *m = b->m;

	if (b->cfg.kv_blocks > 0 && (b->cfg.kv_block_tokens == 0 ||
	                             b->cfg.kv_blocks >= UINT32_MAX / b->cfg.kv_block_tokens ||
	                             b->cfg.kv_swa_blocks >= UINT32_MAX / b->cfg.kv_block_tokens))
		return orch_errf(reterr, ORCH_EINVAL,
		                 "cuda backend: a KV pool of %u blocks (%u for sliding windows) of "
		                 "%u tokens",
		                 b->cfg.kv_blocks, b->cfg.kv_swa_blocks, b->cfg.kv_block_tokens);
	if (b->cfg.kv_blocks > 0 && cu_tab_entries(&b->cfg) > UINT32_MAX)
		return orch_errf(reterr, ORCH_EINVAL,
		                 "cuda backend: block tables of %u slots × %u positions in blocks "
		                 "of %u are too large",
		                 b->cfg.slots, b->cfg.n_ctx, b->cfg.kv_block_tokens);
	if (b->cfg.kv_blocks > 0 && b->cfg.kv_swa_blocks == 0)
		for (uint32_t l = 0; l < hp->n_layer; l++)
			if (model_layer_swa(hp, l))
				return orch_errf(
				        reterr, ORCH_EUNSUPPORTED,
				        "cuda backend: a paged KV cache keeps sliding-window "
				        "layers in a pool of their own (kv_swa_blocks > 0)");
	if (hp->head_dim > CUK_ATTN_MAX_D)
		return orch_errf(reterr, ORCH_EUNSUPPORTED, "head dimension %u exceeds %u",
		                 hp->head_dim, CUK_ATTN_MAX_D);
	if (hp->n_expert > 0 && (hp->n_expert > CUK_MOE_MAX_EXPERTS || hp->n_expert_used == 0 ||
	                         hp->n_expert_used > hp->n_expert || hp->n_ff_exp == 0))
		return orch_errf(reterr, ORCH_EUNSUPPORTED,
		                 "%u experts of which %u used (width %u): the CUDA kernels take "
		                 "1..%u experts and at least one used",
		                 hp->n_expert, hp->n_expert_used, hp->n_ff_exp,
		                 CUK_MOE_MAX_EXPERTS);
	if (hp->yarn_factor > 0 && m->rope_freqs != NULL)
		return orch_errf(reterr, ORCH_EUNSUPPORTED,
		                 "YaRN together with rope frequency factors has no CUDA kernel");
	if (b->cfg.max_batch_tokens > 65535 || b->cfg.slots > 256 || b->cfg.slots == 0)
		return orch_errf(reterr, ORCH_EINVAL,
		                 "max_batch_tokens %u (≤ 65535) or slots %u (1..256) out of range",
		                 b->cfg.max_batch_tokens, b->cfg.slots);
	for (uint32_t l = 0; l <= hp->n_layer; l++) {
		const struct model_layer *L = l < hp->n_layer ? &m->layers[l] : NULL;
		const struct gguf_tensor *ts[] = {
		        L ? L->wq : m->tok_embd, L ? L->wk : m->output,   L ? L->wv : NULL,
		        L ? L->wqkv : NULL,      L ? L->wo : NULL,        L ? L->w_gate : NULL,
		        L ? L->w_up : NULL,      L ? L->w_gate_up : NULL, L ? L->w_down : NULL,
		        L ? L->router : NULL,    L ? L->gate_exps : NULL, L ? L->up_exps : NULL,
		        L ? L->down_exps : NULL};
		for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++)
			if (ts[i] != NULL && !cuk_type_supported(ts[i]->type))
				return orch_errf(reterr, ORCH_EUNSUPPORTED,
				                 "tensor %s: type %s has no CUDA kernels",
				                 ts[i]->name, ggml_type_name(ts[i]->type));
	}
	return ORCH_OK;
}

/*
 * Each layer's KV cells and offset in a slot, and the slot's bytes: a
 * sliding-window layer keeps a ring (model_swa_cells, the CPU backend's
 * rule), T being the most tokens one sequence feeds in a step.
 */
static void
kv_layout(struct be_model *b)
{
	const struct model_hparams *hp = &b->m->hp;
	uint64_t off = 0, es = b->cfg.kv_f32 ? 4 : 2;
	uint32_t swa_cells = model_swa_cells(b->cfg.n_ctx, hp->n_swa, b->cfg.max_batch_tokens);
	uint32_t bt = b->cfg.kv_block_tokens;

	for (uint32_t l = 0; l < hp->n_layer; l++) {
		struct cu_layer *C = &b->layers[l];
		bool swa = model_layer_swa(hp, l);
		if (b->paged) /* each pool plus the padding sequence's block */
			C->kv_cells = ((swa ? b->cfg.kv_swa_blocks : b->cfg.kv_blocks) + 1) * bt;
		else
			C->kv_cells = swa ? swa_cells : b->cfg.n_ctx;
		C->window = swa ? hp->n_swa : 0;
		C->swa = swa;
		C->kv_cell0 = off;
		off += C->kv_cells;
	}
	b->kv_slot_bytes = b->paged ? 0 : off * b->kv_dim * es;
	b->kv_pool_bytes = b->paged ? off * b->kv_dim * es : 0;
}

/*
 * Each layer's RoPE as cpu_forward's rope_store: a sliding-window layer's own
 * base (rope_base_swa, when set), and linear scaling (rope_freq_scale) of the
 * other layers' positions, as YaRN with no ramp and magnitude 1.
 */
static void
rope_layers(struct be_model *b)
{
	const struct model_hparams *hp = &b->m->hp;

	b->rope_lin = (struct cuk_yarn){hp->rope_freq_scale, 0.0f, 1.0f, {0.0f, 0.0f}};
	for (uint32_t l = 0; l < hp->n_layer; l++) {
		bool swa = model_layer_swa(hp, l);
		float base = swa && hp->rope_base_swa > 0 ? hp->rope_base_swa : hp->rope_base;
		b->layers[l].theta_scale = powf(base, -2.0f / (float)hp->n_rot);
		b->layers[l].rope_lin = hp->yarn_factor <= 0 && hp->rope_freq_scale > 0 && !swa;
	}
}

static void
count_type(const struct gguf_tensor *t, void *ctx)
{
	uint32_t *want = ctx;

	if (t->type == want[0])
		want[1]++;
}

/* Whether a tensor of @m has ggml @type. */
static bool
has_type(const struct model *m, uint32_t type)
{
	uint32_t want[2] = {type, 0};

	model_for_each_tensor(m, count_type, want);
	return want[1] > 0;
}

/* Whether a weight of @m takes activations quantized in format @fmt. */
static bool
has_act(const struct model *m, enum cuk_act fmt)
{
	static const uint32_t types[] = {GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q5_0,
	                                 GGML_TYPE_Q5_1, GGML_TYPE_Q8_0, GGML_TYPE_MXFP4,
	                                 GGML_TYPE_Q4_K, GGML_TYPE_Q5_K, GGML_TYPE_Q6_K};

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (cuk_act_of(types[i]) == fmt && has_type(m, types[i]))
			return true;
	return false;
}

static void
set_shapes(struct be_model *b)
{
	const struct model_hparams *hp = &b->m->hp;

	b->q_dim = hp->n_head * hp->head_dim;
	b->kv_dim = hp->n_head_kv * hp->head_dim;
	b->qkv_dim = b->q_dim + 2 * b->kv_dim;
	b->max_ne0 = hp->n_embd > b->q_dim ? hp->n_embd : b->q_dim;
	b->max_ne0 = hp->n_ff > b->max_ne0 ? hp->n_ff : b->max_ne0;
	b->n_split = (b->cfg.n_ctx + CUK_ATTN_SPLIT - 1) / CUK_ATTN_SPLIT;
	b->slots_pad = 1;
	b->n_buckets = 0;
	while (b->n_buckets < CU_MAX_BUCKETS) {
		b->bucket[b->n_buckets++] = b->slots_pad;
		if (b->slots_pad >= b->cfg.slots)
			break;
		b->slots_pad *= 2;
	}
	uint32_t most =
	        b->cfg.max_batch_tokens > b->slots_pad ? b->cfg.max_batch_tokens : b->slots_pad;
	b->attn_tokens = b->slots_pad > CU_ATTN_TOKENS ? b->slots_pad : CU_ATTN_TOKENS;
	b->attn_tokens = b->attn_tokens < most ? b->attn_tokens : most;
	rope_layers(b);
	b->has_yarn = hp->yarn_factor > 0;
	if (b->has_yarn) {
		struct model_yarn y;
		model_yarn_params(hp->n_rot, hp->rope_base, hp->yarn_factor, hp->yarn_orig_ctx,
		                  hp->yarn_beta_fast, hp->yarn_beta_slow, hp->yarn_attn_factor, &y);
		b->yarn = (struct cuk_yarn){y.freq_scale,
		                            y.ext_factor,
		                            y.attn_factor,
		                            {y.corr_dims[0], y.corr_dims[1]}};
	}
	b->hist_cap = b->cfg.n_ctx + 1;
	b->mask_words = (hp->n_vocab + 31) / 32;
	b->paged = b->cfg.kv_blocks > 0;
	if (b->paged) {
		uint64_t bt = b->cfg.kv_block_tokens;
		b->nb_max = (uint32_t)((b->cfg.n_ctx + bt - 1) / bt);
		b->tab_cap = (uint32_t)cu_tab_entries(&b->cfg); /* check_model: it fits */
	}
	kv_layout(b);
	uint64_t B =
	        b->cfg.max_batch_tokens > b->slots_pad ? b->cfg.max_batch_tokens : b->slots_pad;
	b->step_bytes = B * 20 + (uint64_t)b->slots_pad * 4;
	b->xq_bytes = b->xqk_bytes = 0;
	/* dense rows of up to max_ne0, or the experts' down rows, n_expert_used a token
	 * (MXFP4 is always integer dots) */
	uint64_t K = hp->n_expert > 0 ? hp->n_expert_used : 0;
	if (has_act(b->m, CUK_ACT_Q8) && (b->int_dots || has_type(b->m, GGML_TYPE_MXFP4))) {
		uint64_t dense = cuk_q8_row_bytes(b->max_ne0),
		         moe = K * cuk_q8_row_bytes(hp->n_ff_exp);
		b->xq_bytes = B * (dense > moe ? dense : moe);
	}
	if (b->int_dots && has_act(b->m, CUK_ACT_Q8K)) {
		uint64_t dense = cuk_q8k_row_bytes(b->max_ne0);
		uint64_t moe = K * cuk_q8k_row_bytes(hp->n_ff_exp);
		b->xqk_bytes = B * (dense > moe ? dense : moe);
	}
}

/* Carve the step-input arrays out of @base (device, host staging or mirror). */
static void
carve_step(struct be_model *b, uint8_t *base, struct cu_step *s)
{
	uint64_t B = (b->step_bytes - (uint64_t)b->slots_pad * 4) / 20;

	s->tok = (int32_t *)(void *)base;
	s->pos = (uint32_t *)(void *)(base + 4 * B);
	s->slot = (uint32_t *)(void *)(base + 8 * B);
	s->tbl = (uint32_t *)(void *)(base + 12 * B);
	s->swa_tbl = (uint32_t *)(void *)(base + 16 * B);
	s->rows = (uint32_t *)(void *)(base + 20 * B);
}

static orch_err
carve_arena(struct be_model *b)
{
	const struct model_hparams *hp = &b->m->hp;
	uint64_t B =
	        b->cfg.max_batch_tokens > b->slots_pad ? b->cfg.max_batch_tokens : b->slots_pad;
	uint64_t S = b->slots_pad, V = hp->n_vocab, f = sizeof(float), s1 = b->cfg.slots + 1u;

	b->x = cu_arena_take(b, B * hp->n_embd * f);
	b->xn = cu_arena_take(b, B * hp->n_embd * f);
	b->tmp = cu_arena_take(b, B * hp->n_embd * f);
	b->qkv = cu_arena_take(b, B * b->qkv_dim * f);
	b->att = cu_arena_take(b, B * b->q_dim * f);
	b->gu = cu_arena_take(b, B * gu_floats(hp) * f);
	b->last = cu_arena_take(b, S * hp->n_embd * f);
	b->logits = cu_arena_take(b, S * V * f);
	b->part = cu_arena_take(
	        b, cuk_attention_part_floats(b->attn_tokens, hp->n_head, hp->head_dim, b->n_split) *
	                   f);
	b->gemm_w = cu_arena_take(b, (uint64_t)CU_GEMM_TILE_ROWS * b->max_ne0 * 2);
	b->gemm_x = cu_arena_take(b, B * b->max_ne0 * 2);
	b->blas_ws = cu_arena_take(b, CU_BLAS_WS_BYTES);
	b->d_step = cu_arena_take(b, b->step_bytes);
	b->d_samp = cu_arena_take(b, S * sizeof(struct cuk_samp));
	b->d_hist = cu_arena_take(b, s1 * b->hist_cap * 4);
	b->d_keys = cu_arena_take(b, 2 * S * V * 4);
	b->d_vals = cu_arena_take(b, 2 * S * V * 4);
	b->d_probs = cu_arena_take(b, S * V * 4);
	b->d_ids = cu_arena_take(b, S * 4);
	b->d_seg = cu_arena_take(b, (S + 1) * 4);
	b->sort_tmp = cu_arena_take(b, b->sort_tmp_bytes);
	b->d_k_base = cu_arena_take(b, s1 * sizeof(void *));
	b->d_v_base = cu_arena_take(b, s1 * sizeof(void *));
	if (b->d_v_base == NULL)
		return ORCH_EINTERNAL;
	if (hp->n_expert > 0) {
		uint64_t BK = B * hp->n_expert_used;
		b->moe_lg = cu_arena_take(b, B * hp->n_expert * f);
		b->moe_sel = cu_arena_take(b, BK * 4);
		b->moe_w = cu_arena_take(b, BK * f);
		if ((b->moe_out = cu_arena_take(b, BK * hp->n_embd * f)) == NULL)
			return ORCH_EINTERNAL;
	}
	if ((b->xq_bytes > 0 && (b->xq = cu_arena_take(b, b->xq_bytes)) == NULL) ||
	    (b->xqk_bytes > 0 && (b->xqk = cu_arena_take(b, b->xqk_bytes)) == NULL))
		return ORCH_EINTERNAL;
	if (b->paged && (b->d_tab = cu_arena_take(b, (uint64_t)b->tab_cap * 4)) == NULL)
		return ORCH_EINTERNAL;
	if ((b->d_bias = cu_arena_take(b, S * BE_SAMPLE_MAX_BIAS * sizeof(struct cuk_bias))) ==
	            NULL ||
	    (b->d_mask = cu_arena_take(b, S * b->mask_words * 4)) == NULL)
		return ORCH_EINTERNAL;
	if (hp->ffn_gelu && (b->gelu = cu_arena_take(b, 65536 * f)) == NULL)
		return ORCH_EINTERNAL;
	carve_step(b, b->d_step, &b->d);
	return ORCH_OK;
}

/* gemma3: GELU's table (model_gelu_table, the CPU's) to the device, once at load. */
static orch_err
upload_gelu(struct be_model *b, struct orch_errinfo *reterr)
{
	float *tab;
	cudaError_t ce;

	if (b->gelu == NULL)
		return ORCH_OK;
	if ((tab = orch_calloc(65536, sizeof(float))) == NULL)
		return orch_errf(reterr, ORCH_ENOMEM, "out of host memory");
	model_gelu_table(tab);
	ce = cudaMemcpy(b->gelu, tab, 65536 * sizeof(float), cudaMemcpyHostToDevice);
	orch_free(tab);
	return ce == cudaSuccess ? ORCH_OK : cu_fail(b, ce, "uploading GELU's table", reterr);
}

static orch_err
host_buffers(struct be_model *b, struct orch_errinfo *reterr)
{
	uint64_t S = b->slots_pad, s1 = b->cfg.slots + 1u;
	cudaError_t ce;

	if ((ce = cudaMallocHost((void **)&b->h_step, b->step_bytes)) != cudaSuccess ||
	    (ce = cudaMallocHost((void **)&b->h_samp, S * sizeof(struct cuk_samp))) !=
	            cudaSuccess ||
	    (ce = cudaMallocHost((void **)&b->h_ids, S * 4)) != cudaSuccess ||
	    (ce = cudaMallocHost((void **)&b->h_logits, S * b->m->hp.n_vocab * 4)) != cudaSuccess ||
	    (ce = cudaMallocHost((void **)&b->h_bias,
	                         S * BE_SAMPLE_MAX_BIAS * sizeof(struct cuk_bias))) !=
	            cudaSuccess ||
	    (ce = cudaMallocHost((void **)&b->h_mask, S * b->mask_words * 4)) != cudaSuccess ||
	    (b->paged &&
	     (ce = cudaMallocHost((void **)&b->h_tab, (uint64_t)b->tab_cap * 4)) != cudaSuccess))
		return orch_errf(reterr, ORCH_ENOMEM, "pinned host memory: %s",
		                 cudaGetErrorString(ce));
	if ((b->mir_bias = orch_calloc(S * BE_SAMPLE_MAX_BIAS, sizeof(struct cuk_bias))) == NULL)
		return orch_errf(reterr, ORCH_ENOMEM, "out of host memory");
	if (b->paged && (b->mir_tab = orch_calloc(b->tab_cap, sizeof(uint32_t))) == NULL)
		return orch_errf(reterr, ORCH_ENOMEM, "out of host memory");
	b->mir_step = orch_calloc(1, b->step_bytes);
	b->mir_samp = orch_calloc(S, sizeof(struct cuk_samp));
	b->k_slot = orch_calloc(s1, sizeof(void *));
	b->v_slot = orch_calloc(s1, sizeof(void *));
	b->hist_dev = orch_calloc(s1, sizeof(uint32_t));
	b->runs = orch_calloc(b->cfg.max_batch_tokens + S, sizeof(struct cu_run));
	if (!b->mir_step || !b->mir_samp || !b->k_slot || !b->v_slot || !b->hist_dev || !b->runs)
		return orch_errf(reterr, ORCH_ENOMEM, "out of host memory");
	carve_step(b, b->h_step, &b->h);
	carve_step(b, b->mir_step, &b->mir);
	return ORCH_OK;
}

/* Device state that starts at fixed values: segment offsets, empty histories, KV tables. */
static orch_err
init_state(struct be_model *b, struct orch_errinfo *reterr)
{
	uint32_t S = b->slots_pad, s1 = b->cfg.slots + 1u;
	uint32_t *seg = (uint32_t *)(void *)b->h_logits; /* pinned, free until the first step */
	cudaError_t ce;

	for (uint32_t i = 0; i <= S; i++)
		seg[i] = i * b->m->hp.n_vocab;
	if ((ce = cudaMemcpyAsync(b->d_seg, seg, (S + 1) * 4, cudaMemcpyHostToDevice, b->st)) !=
	            cudaSuccess ||
	    (ce = cudaMemsetAsync(b->d_k_base, 0, s1 * sizeof(void *), b->st)) != cudaSuccess ||
	    (ce = cudaMemsetAsync(b->d_v_base, 0, s1 * sizeof(void *), b->st)) != cudaSuccess ||
	    (b->paged &&
	     ((ce = cudaMemsetAsync(b->k_pool, 0, b->kv_pool_bytes, b->st)) != cudaSuccess ||
	      (ce = cudaMemsetAsync(b->v_pool, 0, b->kv_pool_bytes, b->st)) != cudaSuccess)) ||
	    (ce = cudaStreamSynchronize(b->st)) != cudaSuccess ||
	    (b->paged && (ce = cu_tables_init(b)) != cudaSuccess))
		return cu_fail(b, ce, "initializing device state", reterr);
	return ORCH_OK;
}

static void cuda_free(struct be_model *b);

static orch_err
cuda_load(const struct model *m, const struct be_config *cfg, be_progress_fn progress, void *ctx,
          struct be_model **ret, struct orch_errinfo *reterr)
{
	struct be_model *b = orch_calloc(1, sizeof(*b));
	size_t free_b = 0, total_b = 0;
	cudaError_t ce;
	orch_err rv;

	if (b == NULL)
		return orch_errf(reterr, ORCH_ENOMEM, "out of memory");
	b->m = m;
	b->cfg = *cfg;
	b->trace = getenv("ORCH_CUDA_TRACE") != NULL;
	const char *dots = getenv("ORCH_CUDA_INT_DOTS");
	b->int_dots = dots == NULL || strcmp(dots, "0") != 0;
	if ((rv = parse_device(cfg->device, &b->dev, reterr)) != ORCH_OK ||
	    (rv = check_model(b, reterr)) != ORCH_OK || (rv = open_device(b, reterr)) != ORCH_OK)
		goto fail;
	if ((b->layers = orch_calloc(m->hp.n_layer, sizeof(*b->layers))) == NULL) {
		rv = orch_errf(reterr, ORCH_ENOMEM, "out of memory");
		goto fail;
	}
	set_shapes(b);
	if ((ce = cuk_sample_tmp_bytes(b->slots_pad, m->hp.n_vocab, &b->sort_tmp_bytes)) !=
	    cudaSuccess) {
		rv = cu_fail(b, ce, "sizing the sampler's sort", reterr);
		goto fail;
	}
	b->weight_bytes = cu_weight_bytes(m);
	b->arena_bytes = b->weight_bytes + scratch_bytes(b, b->sort_tmp_bytes);
	uint64_t kv_all =
	        2 * (b->paged ? b->kv_pool_bytes : b->kv_slot_bytes * (b->cfg.slots + 1u));
	b->bytes_needed = b->arena_bytes + kv_all + CU_GRAPH_RESERVE_BYTES;
	if ((ce = cudaMemGetInfo(&free_b, &total_b)) != cudaSuccess) {
		rv = cu_fail(b, ce, "cudaMemGetInfo", reterr);
		goto fail;
	}
	if (b->bytes_needed > free_b) {
		char kv[96];
		if (b->paged)
			snprintf(kv, sizeof(kv), "a pool of %u blocks of %u positions",
			         cfg->kv_blocks, cfg->kv_block_tokens);
		else
			snprintf(kv, sizeof(kv), "%u slots × %u positions", cfg->slots, cfg->n_ctx);
		rv = orch_errf(reterr, ORCH_EINSUFFICIENT_VRAM,
		               "device %s: model %s needs %llu MiB of VRAM (weights %llu, KV cache "
		               "%llu for %s, scratch %llu), %llu MiB free of %llu",
		               cfg->device, cfg->model_path ? cfg->model_path : "(unnamed)",
		               MIB(b->bytes_needed), MIB(b->weight_bytes), MIB(kv_all), kv,
		               MIB(b->arena_bytes - b->weight_bytes + CU_GRAPH_RESERVE_BYTES),
		               MIB((uint64_t)free_b), MIB((uint64_t)total_b));
		goto fail;
	}
	if ((ce = cudaStreamCreateWithFlags(&b->st, cudaStreamNonBlocking)) != cudaSuccess ||
	    (ce = cudaEventCreateWithFlags(&b->uploaded, cudaEventDisableTiming)) != cudaSuccess ||
	    (ce = cudaMalloc((void **)&b->arena, b->arena_bytes)) != cudaSuccess ||
	    (b->paged && ((ce = cudaMalloc(&b->k_pool, b->kv_pool_bytes)) != cudaSuccess ||
	                  (ce = cudaMalloc(&b->v_pool, b->kv_pool_bytes)) != cudaSuccess))) {
		rv = ce == cudaErrorMemoryAllocation
		             ? orch_errf(reterr, ORCH_EINSUFFICIENT_VRAM,
		                         "device %s: model %s: allocating %llu MiB failed",
		                         cfg->device, cfg->model_path ? cfg->model_path : "",
		                         MIB(b->arena_bytes + kv_all))
		             : cu_fail(b, ce, "creating the stream, arena and KV pools", reterr);
		goto fail;
	}
	b->arena_used = 0;
	if ((rv = cu_upload(b, progress, ctx, reterr)) != ORCH_OK)
		goto fail;
	if (carve_arena(b) != ORCH_OK) {
		rv = orch_errf(reterr, ORCH_EINTERNAL, "arena footprint miscounted");
		goto fail;
	}
	if (cublasCreate(&b->blas) != CUBLAS_STATUS_SUCCESS ||
	    cublasSetStream(b->blas, b->st) != CUBLAS_STATUS_SUCCESS ||
	    cublasSetWorkspace(b->blas, b->blas_ws, CU_BLAS_WS_BYTES) != CUBLAS_STATUS_SUCCESS ||
	    cublasSetMathMode(b->blas, CUBLAS_DEFAULT_MATH) != CUBLAS_STATUS_SUCCESS) {
		rv = orch_errf(reterr, ORCH_ECUDA, "cuBLAS could not be initialized");
		goto fail;
	}
	if ((rv = host_buffers(b, reterr)) != ORCH_OK || (rv = init_state(b, reterr)) != ORCH_OK ||
	    (rv = upload_gelu(b, reterr)) != ORCH_OK ||
	    (!b->paged && (rv = cu_reserve(b, b->cfg.slots, reterr)) != ORCH_OK) ||
	    (rv = cu_graphs_build(b, reterr)) != ORCH_OK)
		goto fail;
	*ret = b;
	return ORCH_OK;
fail:
	cuda_free(b);
	return rv;
}

static void
cuda_memory(const struct be_model *b, struct be_memory *ret)
{
	uint64_t kv = 2 * b->kv_pool_bytes;

	for (uint32_t s = 0; s <= b->cfg.slots; s++)
		if (b->k_slot != NULL && b->k_slot[s] != NULL)
			kv += 2 * b->kv_slot_bytes;
	ret->needed = b->bytes_needed;
	ret->used = b->arena_bytes + kv;
	ret->weights = b->weight_bytes;
	ret->kv = kv;
	ret->scratch = b->arena_bytes - b->weight_bytes;
}

static void
cuda_free(struct be_model *b)
{
	if (b == NULL)
		return;
	(void)cudaSetDevice(b->dev); /* each entry point: the thread may have another device */
	/* work still queued (copy_blocks returns with its copies in flight) finishes before
	 * what it reads is freed: cudaFree "may" synchronize, and is not relied on */
	if (b->st != NULL)
		(void)cudaStreamSynchronize(b->st);
	for (uint32_t i = 0; i < b->n_buckets; i++)
		if (b->graph[i] != NULL)
			cudaGraphExecDestroy(b->graph[i]);
	if (b->blas != NULL)
		cublasDestroy(b->blas);
	for (uint32_t s = 0; b->k_slot != NULL && s <= b->cfg.slots; s++) {
		cudaFree(b->k_slot[s]);
		cudaFree(b->v_slot[s]);
	}
	cudaFree(b->arena);
	cudaFree(b->k_pool);
	cudaFree(b->v_pool);
	cudaFreeHost(b->h_tab);
	cudaFreeHost(b->h_bias);
	cudaFreeHost(b->h_mask);
	cudaFreeHost(b->h_step);
	cudaFreeHost(b->h_samp);
	cudaFreeHost(b->h_ids);
	cudaFreeHost(b->h_logits);
	if (b->uploaded != NULL)
		cudaEventDestroy(b->uploaded);
	if (b->st != NULL)
		cudaStreamDestroy(b->st);
	orch_free(b->layers);
	orch_free(b->mir_step);
	orch_free(b->mir_samp);
	orch_free(b->mir_tab);
	orch_free(b->mir_bias);
	orch_free(b->k_slot);
	orch_free(b->v_slot);
	orch_free(b->hist_dev);
	orch_free(b->runs);
	orch_free(b);
}

__attribute__((visibility("default"))) const struct be_ops be_cuda_ops = {
        .name = "cuda",
        .paged = true,
        .load = cuda_load,
        .memory = cuda_memory,
        .forward = cu_forward,
        .free = cuda_free,
        .forward_sample = cu_forward_sample,
        .reserve = cu_reserve,
        .copy_blocks = cu_copy_blocks,
        .info = cuda_info,
        .check = cu_check,
};
