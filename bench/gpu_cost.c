/*
 * gpu_cost.c - orch-gpu-cost: what decode and prefill steps of the CUDA
 * backend cost a GPU, counted on the simulated device (ORCH_CUDA=SIM; the
 * counters: cuda/sim/include/cusim/cost.h), and the time a roofline model
 * predicts for them on an H100 and an H200 (docs/gpu-cost.md).
 *
 *   orch-gpu-cost [--set full|bench|guard] [--skip STEP,...] [--kernels] [--tsv FILE]
 *                 [--check BASELINE | --write-baseline BASELINE]
 *                 NAME=LAYERS:A.gguf[:B.gguf] ...
 *
 * A model is counted on files with fewer layers: A with a layers, B with
 * b > a (the same shapes otherwise). Every per-layer launch repeats exactly
 * from layer to layer (gpt-oss: from pair to pair, so a and b are even), so
 * a count of the LAYERS-layer model is A's + (LAYERS - a) / (b - a) × (B's -
 * A's), exactly. Without B, LAYERS must be A's own.
 *
 * Each step runs twice and the second is counted: the first, with its kernels
 * not run (cusim_cost_skip), sets up what a slot's first use sets up. Decode at context C: every
 * sequence at position C - 1, the KV cache of the positions before it never written (counting does
 * not depend on its values). Prefill: one sequence of 512 tokens from position 0.
 *
 * --check compares the guard's counts with a baseline: launches + graph nodes a
 * token may not change at all (they are exact counts) and DRAM bytes a token may
 * not rise by more than 5 % (exit 1); a fall asks for the baseline to be lowered
 * (exit 1 too), so it only moves on purpose (docs/gpu-cost.md "The guard").
 */
#include <cusim/cost.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "base/clock.h"
#include "engine/backend.h"
#include "engine/engine.h"
#include "engine/model/model.h"
#include "engine/sampler.h"
#include "gguf/ggml_type.h"
#include "gguf/gguf.h"

extern const struct be_ops be_cuda_ops;

/* ---- the roofline model's constants (docs/gpu-cost.md keeps the same table) ---- */
struct gpu_spec {
	const char *name;
	double dram_gbs;      /* bytes read + written per second */
	double l2_gbs;        /* L2 to the SMs (the block-distinct sectors) */
	double l1_gbs;        /* the SMs' load/store units (the bytes threads request) */
	double fp32_tflops;   /* FFMA: 2 FLOPs */
	double dp4a_tops;     /* dp4a instructions per second, 10^12 */
	double tensor_tflops; /* FP16/BF16 dense, FP32 accumulate */
	double bus_gbs;       /* pinned host memory read or written by kernels or copies */
	double node_us;       /* each kernel or copy: launch and drain (a graph node) */
	double graph_us;      /* each cudaGraphLaunch */
};

static const struct gpu_spec gpus[] = {
        /* H100 SXM 80GB: copy bandwidth measured 2026-11-23 (bench/RESULTS.md); L2
         * ~5.5 TB/s; 132 SMs at 1.98 GHz: 128 bytes of L1 a clock, 128 FFMA and 64 dp4a
         * a clock an SM; 989 TFLOPS dense F16 */
        {"H100", 2983, 5500, 33400, 66.9, 16.7, 989, 55, 4.0, 4.0},
        /* H200 SXM 141GB: 4.8 TB/s specified × 0.89 (the H100's measured / specified
         * 2983 / 3350) until measured; the same die and clocks */
        {"H200", 4274, 5500, 33400, 66.9, 16.7, 989, 55, 4.0, 4.0},
};
enum { N_GPUS = sizeof(gpus) / sizeof(gpus[0]) };

/* ---- steps ---- */
struct step {
	const char *name;
	uint32_t nseq, ctx, len; /* decode: len 1 at position ctx - 1; prefill: ctx = len */
};

static const struct step full_set[] = {
        {"decode b1 ctx1024", 1, 1024, 1},   {"decode b8 ctx1024", 8, 1024, 1},
        {"decode b64 ctx1024", 64, 1024, 1}, {"decode b1 ctx16384", 1, 16384, 1},
        {"decode b8 ctx16384", 8, 16384, 1}, {"decode b64 ctx16384", 64, 16384, 1},
        {"prefill 512", 1, 512, 512},
};
/* the states orch-gpu-bench measures (tests/gpu/run.sh bench and profile print these
 * predictions beside the measured times) */
static const struct step bench_set[] = {
        {"dec1", 1, 257, 1},     {"dec8", 8, 49, 1},        {"dec64", 64, 49, 1},
        {"pre512", 1, 512, 512}, {"profile b1", 1, 150, 1}, {"profile b8", 8, 150, 1},
};
static const struct step guard_set[] = {
        {"decode b1 ctx1024", 1, 1024, 1},
        {"decode b8 ctx1024", 8, 1024, 1},
        {"decode b64 ctx1024", 64, 1024, 1},
};

/* ---- a step's totals ---- */
struct totals {
	double launches, nodes, graphs;
	double dram_rd, dram_wr, l2, req, host; /* bytes */
	double fma32, dp4a, tensor, fp32, atomics, collectives;
	double floor; /* weight + KV + embedding bytes the step must move */
	double t[N_GPUS];
};

struct kclass {
	char name[96];
	struct totals t;
};

struct run {
	struct totals tot;
	struct kclass *k;
	size_t nk;
};

static double
rec_time(const struct gpu_spec *g, const struct cusim_cost_rec *r)
{
	double mem = 32.0 * (double)(r->dram_rd + r->dram_wr) / (g->dram_gbs * 1e9);
	double l2 = 32.0 * (double)(r->l2_rd + r->l2_wr) / (g->l2_gbs * 1e9);
	double l1 = (double)(r->req_rd + r->req_wr) / (g->l1_gbs * 1e9);
	double fp = (2.0 * (double)r->fma32 + (double)r->fp32_flops) / (g->fp32_tflops * 1e12);
	double in = (double)r->dp4a / (g->dp4a_tops * 1e12);
	double tc = (double)r->tensor_flops / (g->tensor_tflops * 1e12);
	double bus = (double)(r->host_rd + r->host_wr) / (g->bus_gbs * 1e9);
	double t = fmax(fmax(fmax(mem, l2), fmax(l1, fp)), fmax(in, tc)) + bus;

	if (r->kind == CUSIM_COST_GRAPH)
		return g->graph_us * 1e-6;
	return t + g->node_us * 1e-6;
}

static void
add_rec(struct totals *t, const struct cusim_cost_rec *r)
{
	if (r->kind == CUSIM_COST_GRAPH)
		t->graphs++;
	else if (r->in_graph)
		t->nodes++;
	else
		t->launches++;
	t->dram_rd += 32.0 * (double)r->dram_rd;
	t->dram_wr += 32.0 * (double)r->dram_wr;
	t->l2 += 32.0 * (double)(r->l2_rd + r->l2_wr);
	t->req += (double)(r->req_rd + r->req_wr);
	t->host += (double)(r->host_rd + r->host_wr);
	t->fma32 += (double)r->fma32;
	t->dp4a += (double)r->dp4a;
	t->tensor += (double)r->tensor_flops;
	t->fp32 += (double)r->fp32_flops;
	t->atomics += (double)r->atomics;
	t->collectives += (double)r->collectives;
	for (int g = 0; g < N_GPUS; g++)
		t->t[g] += rec_time(&gpus[g], r);
}

/* t = a + f × (b - a), field by field */
static void
extrapolate(struct totals *t, const struct totals *a, const struct totals *b, double f)
{
	const double *pa = (const double *)a, *pb = (const double *)b;
	double *pt = (double *)t;

	for (size_t i = 0; i < sizeof(*t) / sizeof(double); i++)
		pt[i] = pa[i] + f * (pb[i] - pa[i]);
}

/* A kernel's class: its name up to the template arguments. */
static void
class_of(const char *name, char *out, size_t n)
{
	size_t k = strcspn(name, "<(");
	snprintf(out, n, "%.*s", (int)k, name);
}

static struct kclass *
class_get(struct run *r, const char *name)
{
	for (size_t i = 0; i < r->nk; i++)
		if (strcmp(r->k[i].name, name) == 0)
			return &r->k[i];
	struct kclass *k = realloc(r->k, (r->nk + 1) * sizeof(*k));
	if (k == NULL) {
		fprintf(stderr, "orch-gpu-cost: out of memory\n");
		exit(1);
	}
	r->k = k;
	memset(&k[r->nk], 0, sizeof(k[0]));
	snprintf(k[r->nk].name, sizeof(k[0].name), "%s", name);
	return &k[r->nk++];
}

/* ---- floors: what the step must move at the least ---- */
static uint64_t
nbytes(const struct gguf_tensor *t)
{
	return t ? t->nbytes : 0;
}

static double
floor_bytes(const struct engine *e, const struct step *s)
{
	const struct model *m = &e->m;
	const struct model_hparams *hp = &m->hp;
	double w = (double)nbytes(m->output) + (double)nbytes(m->output_norm);
	uint64_t row = 0;
	double kv_pos = 2.0 * hp->n_head_kv * hp->head_dim * 2; /* K and V, F16 (the default) */

	ggml_row_bytes(m->tok_embd->type, hp->n_embd, &row);
	w += (double)row * s->nseq * s->len;
	for (uint32_t l = 0; l < hp->n_layer; l++) {
		const struct model_layer *L = &m->layers[l];
		const struct gguf_tensor *dense[] = {
		        L->attn_norm, L->wq,     L->wk, L->wv,       L->wqkv,   L->bq,
		        L->bk,        L->bv,     L->wo, L->ffn_norm, L->w_gate, L->w_up,
		        L->w_gate_up, L->w_down, L->bo, L->sinks,    L->router, L->router_b};
		for (size_t i = 0; i < sizeof(dense) / sizeof(dense[0]); i++)
			w += (double)nbytes(dense[i]);
		if (hp->n_expert > 0) {
			/* the experts a step is expected to route to, the routing uniform */
			double used = (double)hp->n_expert *
			              (1 - pow(1 - (double)hp->n_expert_used / hp->n_expert,
			                       (double)s->nseq * s->len));
			double ex = (double)(nbytes(L->gate_exps) + nbytes(L->up_exps) +
			                     nbytes(L->down_exps) + nbytes(L->gate_exps_b) +
			                     nbytes(L->up_exps_b) + nbytes(L->down_exps_b));
			w += ex * used / hp->n_expert;
		}
		uint32_t seen = s->ctx;
		if (model_layer_swa(hp, l) && seen > hp->n_swa)
			seen = hp->n_swa;
		w += kv_pos * s->nseq * (double)(seen + s->len); /* read, and the new written */
	}
	return w;
}

/* ---- running a step ---- */
/* slot s's full-attention table: blocks s·nb..; its window table a ring over its share of
 * the window pool (as orch-gpu-bench's) */
static uint32_t *tab, *swa_tab, nb;

static void
tables(const struct engine *e)
{
	free(tab);
	free(swa_tab);
	tab = swa_tab = NULL;
	if (e->kv_blocks == 0)
		return;
	nb = (e->n_ctx + e->kv_block_tokens - 1) / e->kv_block_tokens;
	tab = calloc((uint64_t)e->slots * nb, sizeof(uint32_t));
	swa_tab = calloc((uint64_t)e->slots * nb, sizeof(uint32_t));
	if (tab == NULL || swa_tab == NULL || e->kv_blocks < e->slots * nb) {
		fprintf(stderr, "orch-gpu-cost: no block tables for a pool of %u blocks\n",
		        e->kv_blocks);
		exit(1);
	}
	uint32_t most = e->kv_swa_blocks / e->slots;
	for (uint32_t s = 0; s < e->slots; s++)
		for (uint32_t i = 0; i < nb; i++) {
			tab[s * nb + i] = s * nb + i;
			swa_tab[s * nb + i] = most ? s * most + i % most : 0;
		}
}

static void
run_step(struct engine *e, const struct step *s, struct run *out)
{
	static int32_t toks[64][512], hist[64][1];
	struct be_seq seqs[64];
	struct be_sample smp[64];
	struct samp_params sp = samp_defaults();
	int32_t ids[64];
	struct orch_errinfo err = {0};

	sp.temperature = 0;
	uint64_t t0 = orch_mono_ns();
	struct cusim_cost_rec *recs = NULL;
	size_t n = 0;
	for (uint32_t i = 0; i < s->nseq; i++) {
		for (uint32_t k = 0; k < s->len; k++)
			toks[i][k] = (int32_t)((k * 7 + i * 13) % 1000 + 3);
		hist[i][0] = toks[i][0];
		seqs[i] = (struct be_seq){.slot = i,
		                          .pos = s->ctx - s->len,
		                          .tokens = toks[i],
		                          .n_tokens = s->len,
		                          .want_logits = true};
		if (tab != NULL) {
			seqs[i].blocks = tab + (uint64_t)i * nb;
			seqs[i].swa_blocks = swa_tab + (uint64_t)i * nb;
			seqs[i].n_blocks = seqs[i].n_swa_blocks = nb;
		}
		smp[i] = (struct be_sample){&sp, hist[i], 1, 0, NULL};
	}
	/* twice: the first, its kernels not run, sets up what a slot's first use sets up */
	for (int rep = 0; rep < 2; rep++) {
		int was = cusim_cost_skip(rep == 0);
		cudaDeviceSynchronize();
		n = cusim_cost_take(&recs); /* what ran before: not this step's */
		free(recs);
		recs = NULL;
		orch_err rc = e->ops->forward_sample(e->b, seqs, s->nseq, smp, ids, &err);
		cusim_cost_skip(was);
		if (rc != ORCH_OK) {
			fprintf(stderr, "orch-gpu-cost: %s: %s\n", s->name, err.msg);
			exit(1);
		}
	}
	cudaDeviceSynchronize();
	n = cusim_cost_take(&recs);
	for (size_t i = 0; i < n; i++) {
		char cls[96];
		add_rec(&out->tot, &recs[i]);
		class_of(recs[i].name, cls, sizeof(cls));
		add_rec(&class_get(out, cls)->t, &recs[i]);
	}
	free(recs);
	out->tot.floor = floor_bytes(e, s);
	fprintf(stderr, "orch-gpu-cost: %u layers, %s: %.1f s\n", e->m.hp.n_layer, s->name,
	        (double)(orch_mono_ns() - t0) / 1e9);
}

/* ---- a model ---- */
struct model_arg {
	char name[64];
	uint32_t layers;
	const char *a, *b;
};

static struct engine *
open_file(const char *path, const struct step *set, size_t n)
{
	uint32_t ctx = 1024,
	         slots = 1; /* at least orch-gpu-bench's context (its attention splits) */
	for (size_t i = 0; i < n; i++) {
		ctx = set[i].ctx > ctx ? set[i].ctx : ctx;
		slots = set[i].nseq > slots ? set[i].nseq : slots;
	}
	struct engine_config cfg = {.model_path = path,
	                            .device = "cuda:0",
	                            .ops = &be_cuda_ops,
	                            .slots = slots,
	                            .n_ctx = ctx,
	                            .chunk = 512};
	struct engine *e = NULL;
	struct orch_errinfo err = {0};

	int was = cusim_cost_skip(1); /* the warm-ups and captures at load: not run */
	orch_err rc = engine_open(&cfg, &e, &err);
	cusim_cost_skip(was);
	if (rc != ORCH_OK) {
		fprintf(stderr, "orch-gpu-cost: %s: %s\n", path, err.msg);
		exit(1);
	}
	tables(e);
	return e;
}

static void
print_row(const char *model, const struct step *s, const struct totals *t)
{
	double bytes = t->dram_rd + t->dram_wr;

	printf("%-14s %-20s %6.0f %6.0f %9.1f %8.1f %9.1f %6.2f %8.3f %8.3f %5.1f%% %5.1f%%\n",
	       model, s->name, t->launches + t->graphs, t->nodes, t->dram_rd / 1e6,
	       t->dram_wr / 1e6, t->floor / 1e6, bytes / t->floor, 1e3 * t->t[0], 1e3 * t->t[1],
	       100 * t->floor / (gpus[0].dram_gbs * 1e9) / t->t[0],
	       100 * t->floor / (gpus[1].dram_gbs * 1e9) / t->t[1]);
}

static void
print_kernels(const struct run *r, const struct run *rb, double f)
{
	printf("    %-34s %7s %9s %9s %9s %9s %9s %8s\n", "kernel class", "nodes", "MB dram",
	       "MB l2", "MB req", "Mfma32", "Mdp4a", "H100 µs");
	for (size_t i = 0; i < r->nk; i++) {
		struct totals t = r->k[i].t, zero = {0};
		const struct totals *b = &zero;
		if (rb != NULL) {
			for (size_t j = 0; j < rb->nk; j++)
				if (strcmp(rb->k[j].name, r->k[i].name) == 0)
					b = &rb->k[j].t;
			extrapolate(&t, &r->k[i].t, b, f);
		}
		printf("    %-34.34s %7.0f %9.2f %9.2f %9.2f %9.2f %9.2f %8.1f\n", r->k[i].name,
		       t.nodes + t.launches, (t.dram_rd + t.dram_wr) / 1e6, t.l2 / 1e6, t.req / 1e6,
		       t.fma32 / 1e6, t.dp4a / 1e6, 1e6 * t.t[0]);
	}
	/* classes only the larger file has (none when the layers repeat) */
	if (rb != NULL)
		for (size_t j = 0; j < rb->nk; j++) {
			bool seen = false;
			for (size_t i = 0; i < r->nk; i++)
				seen |= strcmp(rb->k[j].name, r->k[i].name) == 0;
			if (!seen)
				printf("    %-34.34s (only in the larger file)\n", rb->k[j].name);
		}
}

static int
usage(void)
{
	fprintf(stderr,
	        "usage: orch-gpu-cost [--set full|bench|guard] [--skip STEP,...] [--kernels]\n"
	        "                     [--tsv FILE]\n"
	        "                     [--check BASELINE | --write-baseline BASELINE]\n"
	        "                     NAME=LAYERS:A.gguf[:B.gguf] ...\n");
	return 2;
}

static bool
parse_model(const char *s, struct model_arg *m)
{
	const char *eq = strchr(s, '='), *c1 = eq ? strchr(eq, ':') : NULL;
	char *end;

	if (eq == NULL || c1 == NULL || eq - s >= (long)sizeof(m->name) || eq == s)
		return false;
	snprintf(m->name, sizeof(m->name), "%.*s", (int)(eq - s), s);
	errno = 0;
	unsigned long l = strtoul(eq + 1, &end, 10);
	if (errno || end != c1 || l == 0 || l > 4096)
		return false;
	m->layers = (uint32_t)l;
	m->a = strdup(c1 + 1);
	if (m->a == NULL)
		return false;
	char *c2 = strchr((char *)m->a, ':');
	m->b = NULL;
	if (c2 != NULL) {
		*c2 = '\0';
		m->b = c2 + 1;
	}
	return *m->a != '\0' && (m->b == NULL || *m->b != '\0');
}

/* ---- the guard's baseline: "model<TAB>step<TAB>nodes/token<TAB>dram bytes/token" ---- */
struct base_row {
	char model[64], step[64];
	double nodes, bytes;
};

static int
check_baseline(const char *path, const struct base_row *now, size_t n)
{
	FILE *f = fopen(path, "r");
	char line[512];
	int bad = 0, found = 0;

	if (f == NULL) {
		fprintf(stderr, "orch-gpu-cost: %s: %s\n", path, strerror(errno));
		return 1;
	}
	while (fgets(line, sizeof(line), f)) {
		struct base_row b;
		if (line[0] == '#' || sscanf(line, "%63[^\t]\t%63[^\t]\t%lf\t%lf", b.model, b.step,
		                             &b.nodes, &b.bytes) != 4)
			continue;
		for (size_t i = 0; i < n; i++) {
			if (strcmp(now[i].model, b.model) || strcmp(now[i].step, b.step))
				continue;
			found++;
			const char *what[] = {"launches + graph nodes a token",
			                      "DRAM bytes a token"};
			double was[] = {b.nodes, b.bytes}, is[] = {now[i].nodes, now[i].bytes};
			for (int k = 0; k < 2; k++) {
				/* launches are exact counts: any change; traffic: 5 % */
				double r = is[k] / was[k], tol = k == 0 ? 1e-6 : 0.05;
				if (r > 1 + tol) {
					printf("GUARD FAIL %s %s: %s %.6g -> %.6g (%+.1f%%): %s; if that "
					       "is the point, update %s in the same commit and say why "
					       "in its message\n",
					       b.model, b.step, what[k], was[k], is[k],
					       100 * (r - 1),
					       k == 0 ? "more launches" : "more than 5 % up", path);
					bad = 1;
				} else if (r < 1 - tol) {
					printf("GUARD LOWER %s %s: %s %.6g -> %.6g (%+.1f%%): better; "
					       "lower the baseline (orch-gpu-cost --set guard "
					       "--write-baseline %s ...) so it holds the gain\n",
					       b.model, b.step, what[k], was[k], is[k],
					       100 * (r - 1), path);
					bad = 1;
				} else {
					printf("guard ok %s %s: %s %.6g -> %.6g (%+.1f%%)\n",
					       b.model, b.step, what[k], was[k], is[k],
					       100 * (r - 1));
				}
			}
		}
	}
	fclose(f);
	if (found != (int)n) {
		printf("GUARD FAIL: %s has %d of the %zu rows counted here; add them "
		       "(--write-baseline)\n",
		       path, found, n);
		bad = 1;
	}
	return bad;
}

/* Write @path's rows with those counted here replacing theirs (the others kept). */
static int
write_baseline(const char *path, const struct base_row *now, size_t n)
{
	static char keep[256][512];
	size_t n_keep = 0;
	char line[512];
	FILE *f = fopen(path, "r");

	while (f != NULL && fgets(line, sizeof(line), f) && n_keep < 256) {
		struct base_row b;
		bool replaced = false;
		if (line[0] == '#' || sscanf(line, "%63[^\t]\t%63[^\t]", b.model, b.step) != 2)
			continue;
		for (size_t i = 0; i < n; i++)
			replaced |= !strcmp(now[i].model, b.model) && !strcmp(now[i].step, b.step);
		if (!replaced)
			snprintf(keep[n_keep++], sizeof(keep[0]), "%s", line);
	}
	if (f != NULL)
		fclose(f);
	if ((f = fopen(path, "w")) == NULL) {
		fprintf(stderr, "orch-gpu-cost: %s: %s\n", path, strerror(errno));
		return 1;
	}
	fprintf(f,
	        "# orch-gpu-cost --set guard: model, step, launches + graph nodes a token, DRAM "
	        "bytes a token\n# (docs/gpu-cost.md \"The guard\"; tests/sim/gpu_cost_guard.sh)\n");
	for (size_t i = 0; i < n_keep; i++)
		fputs(keep[i], f);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s\t%s\t%.10g\t%.1f\n", now[i].model, now[i].step, now[i].nodes,
		        now[i].bytes);
	fclose(f);
	return 0;
}

int
main(int argc, char **argv)
{
	const struct step *set = full_set;
	size_t n_set = sizeof(full_set) / sizeof(full_set[0]);
	const char *tsv = NULL, *check = NULL, *write_base = NULL, *skip = NULL;
	bool kernels = false;
	struct model_arg models[16];
	size_t n_models = 0;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--set") == 0 && i + 1 < argc) {
			const char *v = argv[++i];
			if (strcmp(v, "full") == 0) {
				set = full_set;
				n_set = sizeof(full_set) / sizeof(full_set[0]);
			} else if (strcmp(v, "bench") == 0) {
				set = bench_set;
				n_set = sizeof(bench_set) / sizeof(bench_set[0]);
			} else if (strcmp(v, "guard") == 0) {
				set = guard_set;
				n_set = sizeof(guard_set) / sizeof(guard_set[0]);
			} else {
				return usage();
			}
		} else if (strcmp(argv[i], "--skip") == 0 && i + 1 < argc) {
			skip = argv[++i];
		} else if (strcmp(argv[i], "--kernels") == 0) {
			kernels = true;
		} else if (strcmp(argv[i], "--tsv") == 0 && i + 1 < argc) {
			tsv = argv[++i];
		} else if (strcmp(argv[i], "--check") == 0 && i + 1 < argc) {
			check = argv[++i];
		} else if (strcmp(argv[i], "--write-baseline") == 0 && i + 1 < argc) {
			write_base = argv[++i];
		} else if (argv[i][0] == '-' || n_models == 16 ||
		           !parse_model(argv[i], &models[n_models++])) {
			fprintf(stderr, "orch-gpu-cost: bad argument '%s'\n", argv[i]);
			return usage();
		}
	}
	if (n_models == 0)
		return usage();
	/* --skip: steps left out (a copy of the set without them) */
	static struct step kept[16];
	size_t n_kept = 0;
	for (size_t i = 0; i < n_set; i++) {
		const char *p = skip;
		bool drop = false;
		size_t len = strlen(set[i].name);
		while (p != NULL && *p) {
			size_t k = strcspn(p, ",");
			drop |= k == len && strncmp(p, set[i].name, k) == 0;
			p += k + (p[k] == ',');
		}
		if (!drop)
			kept[n_kept++] = set[i];
	}
	for (const char *p = skip; p != NULL && *p;) { /* a name no step has: a typo */
		size_t k = strcspn(p, ","), hit = 0;
		for (size_t i = 0; i < n_set; i++)
			hit += strlen(set[i].name) == k && strncmp(p, set[i].name, k) == 0;
		if (hit == 0) {
			fprintf(stderr, "orch-gpu-cost: --skip: no step '%.*s' in this set\n",
			        (int)k, p);
			return 2;
		}
		p += k + (p[k] == ',');
	}
	if (n_kept == 0) {
		fprintf(stderr, "orch-gpu-cost: --skip leaves no step\n");
		return 2;
	}
	set = kept;
	n_set = n_kept;
	/* counting on, the checks off (the tests make them), room for a large KV pool */
	setenv("ORCH_CUDA_SIM_COST", "1", 0);
	setenv("ORCH_CUDA_SIM_CHECKS", "0", 0);
	setenv("ORCH_CUDA_SIM_VRAM", "48G", 0);
	if (!cusim_cost_enabled()) {
		fprintf(stderr, "orch-gpu-cost: ORCH_CUDA_SIM_COST is 0: nothing to count\n");
		return 2;
	}

	FILE *out = NULL;
	if (tsv != NULL && (out = fopen(tsv, "w")) == NULL) {
		fprintf(stderr, "orch-gpu-cost: %s: %s\n", tsv, strerror(errno));
		return 1;
	}
	if (out != NULL)
		fprintf(out,
		        "# model\tstep\tnseq\tctx\tlen\tlaunches\tnodes\tdram_rd\tdram_wr\tfloor"
		        "\tpred_h100_ms\tpred_h200_ms\n");
	struct base_row rows[16 * 8];
	size_t n_rows = 0;

	printf("%-14s %-20s %6s %6s %9s %8s %9s %6s %8s %8s %6s %6s\n", "model", "step", "launch",
	       "nodes", "MB read", "MB write", "MB floor", "×floor", "H100 ms", "H200 ms", "H100bw",
	       "H200bw");
	for (size_t mi = 0; mi < n_models; mi++) {
		const struct model_arg *m = &models[mi];
		struct run ra[8] = {0}, rb[8] = {0};
		struct engine *e = open_file(m->a, set, n_set);
		uint32_t la = e->m.hp.n_layer, lb = 0;
		if (m->b == NULL && la != m->layers) {
			fprintf(stderr,
			        "orch-gpu-cost: %s has %u layers, not %u: give a second file with "
			        "more layers to scale from\n",
			        m->a, la, m->layers);
			return 2;
		}
		for (size_t s = 0; s < n_set; s++)
			run_step(e, &set[s], &ra[s]);
		engine_close(e);
		if (m->b != NULL) {
			e = open_file(m->b, set, n_set);
			lb = e->m.hp.n_layer;
			uint32_t period = e->m.hp.swa_pattern > 1 ? e->m.hp.swa_pattern : 1;
			if (la % period || lb % period || m->layers % period) {
				fprintf(stderr,
				        "orch-gpu-cost: %s repeats every %u layers: give files and LAYERS "
				        "in whole periods\n",
				        m->name, period);
				return 2;
			}
			if (lb <= la || m->layers < la) {
				fprintf(stderr,
				        "orch-gpu-cost: %s must have more layers than %s, and %s's "
				        "LAYERS at least as many\n",
				        m->b, m->a, m->name);
				return 2;
			}
			for (size_t s = 0; s < n_set; s++)
				run_step(e, &set[s], &rb[s]);
			engine_close(e);
		}
		double f = m->b ? (double)(m->layers - la) / (double)(lb - la) : 0;
		for (size_t s = 0; s < n_set; s++) {
			struct totals t = ra[s].tot;
			if (m->b != NULL)
				extrapolate(&t, &ra[s].tot, &rb[s].tot, f);
			print_row(m->name, &set[s], &t);
			if (kernels)
				print_kernels(&ra[s], m->b ? &rb[s] : NULL, f);
			double tok = (double)set[s].nseq * set[s].len;
			if (out != NULL)
				fprintf(out,
				        "%s\t%s\t%u\t%u\t%u\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.4f\t%.4f\n",
				        m->name, set[s].name, set[s].nseq, set[s].ctx, set[s].len,
				        t.launches + t.graphs, t.nodes, t.dram_rd, t.dram_wr,
				        t.floor, 1e3 * t.t[0], 1e3 * t.t[1]);
			struct base_row *r = &rows[n_rows++];
			snprintf(r->model, sizeof(r->model), "%.63s", m->name);
			snprintf(r->step, sizeof(r->step), "%.63s", set[s].name);
			r->nodes = (t.launches + t.graphs + t.nodes) / tok;
			r->bytes = (t.dram_rd + t.dram_wr) / tok;
			free(ra[s].k);
			free(rb[s].k);
		}
	}
	if (out != NULL)
		fclose(out);
	if (write_base != NULL && write_baseline(write_base, rows, n_rows) != 0)
		return 1;
	if (check != NULL)
		return check_baseline(check, rows, n_rows);
	return 0;
}
