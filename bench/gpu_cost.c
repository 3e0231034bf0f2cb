/*
 * gpu_cost.c - orch-gpu-cost: what decode and prefill steps of the CUDA
 * backend cost a GPU, counted on the simulated device (ORCH_CUDA=SIM; the
 * counters: cuda/sim/include/cusim/cost.h), and the time a roofline model
 * predicts for them on an H100 and an H200 (docs/gpu-cost.md).
 *
 *   orch-gpu-cost [--set full|bench|guard] [--skip STEP,...] [--context N] [--kernels]
 *                 [--tsv FILE] [--check BASELINE | --write-baseline BASELINE]
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
#include "bench_tables.h"
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

/* @r's class @name, added when new; NULL: out of memory. */
static struct kclass *
class_get(struct run *r, const char *name)
{
	for (size_t i = 0; i < r->nk; i++)
		if (strcmp(r->k[i].name, name) == 0)
			return &r->k[i];
	struct kclass *k = realloc(r->k, (r->nk + 1) * sizeof(*k));
	if (k == NULL)
		return NULL;
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
/* The counted records of a step into @out's totals and kernel classes; false: out of memory. */
static bool
add_recs(struct run *out, const struct cusim_cost_rec *recs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char cls[96];
		add_rec(&out->tot, &recs[i]);
		class_of(recs[i].name, cls, sizeof(cls));
		struct kclass *k = class_get(out, cls);
		if (k == NULL)
			return false;
		add_rec(&k->t, &recs[i]);
	}
	return true;
}

/* Step @s on @e (tables @tabs), counted into @out; false, said on stderr, when it fails. */
static bool
run_step(struct engine *e, const struct bench_tables *tabs, const struct step *s, struct run *out)
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
	for (uint32_t i = 0; i < s->nseq; i++) {
		for (uint32_t k = 0; k < s->len; k++)
			toks[i][k] = (int32_t)((k * 7 + i * 13) % 1000 + 3);
		hist[i][0] = toks[i][0];
		seqs[i] = (struct be_seq){.slot = i,
		                          .pos = s->ctx - s->len,
		                          .tokens = toks[i],
		                          .n_tokens = s->len,
		                          .want_logits = true};
		bench_tables_seq(tabs, i, &seqs[i]);
		smp[i] = (struct be_sample){&sp, hist[i], 1, 0, NULL};
	}
	/* twice: the first, its kernels not run, sets up what a slot's first use sets up */
	for (int rep = 0; rep < 2; rep++) {
		int was = cusim_cost_skip(rep == 0);
		cudaDeviceSynchronize();
		cusim_cost_take(&recs); /* what ran before: not this step's */
		free(recs);
		recs = NULL;
		orch_err rc = e->ops->forward_sample(e->b, seqs, s->nseq, smp, ids, &err);
		cusim_cost_skip(was);
		if (rc != ORCH_OK) {
			fprintf(stderr, "orch-gpu-cost: %s: %s\n", s->name, err.msg);
			return false;
		}
	}
	cudaDeviceSynchronize();
	size_t n = cusim_cost_take(&recs);
	bool ok = add_recs(out, recs, n);
	free(recs);
	if (!ok) {
		fprintf(stderr, "orch-gpu-cost: %s: out of memory\n", s->name);
		return false;
	}
	out->tot.floor = floor_bytes(e, s);
	fprintf(stderr, "orch-gpu-cost: %u layers, %s: %.1f s\n", e->m.hp.n_layer, s->name,
	        (double)(orch_mono_ns() - t0) / 1e9);
	return true;
}

/* ---- a model ---- */
struct model_arg {
	char name[64];
	uint32_t layers;
	const char *a, *b;
};

/* A counted file's layers, and how many layers its pattern repeats over (gpt-oss: 2). */
struct file_info {
	uint32_t layers, period;
};

/* Every step of @set on the file @path into @runs, its layers into @fi; false: said why. */
static bool
count_file(const char *path, const struct step *set, size_t n, uint32_t min_ctx, struct run *runs,
           struct file_info *fi)
{
	/* decode attention runs a split a CUK_ATTN_SPLIT positions of the engine's context, so
	 * the counts depend on it: at least orch-gpu-bench's, and the set's largest */
	uint32_t ctx = min_ctx > 1024 ? min_ctx : 1024, slots = 1;
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
	struct bench_tables tabs = {0};
	struct orch_errinfo err = {0};

	int was = cusim_cost_skip(1); /* the warm-ups and captures at load: not run */
	orch_err rc = engine_open(&cfg, &e, &err);
	cusim_cost_skip(was);
	if (rc == ORCH_OK)
		rc = bench_tables_make(e, &tabs, &err);
	if (rc != ORCH_OK) {
		fprintf(stderr, "orch-gpu-cost: %s: %s\n", path, err.msg);
		if (e != NULL)
			engine_close(e);
		return false;
	}
	fi->layers = e->m.hp.n_layer;
	fi->period = e->m.hp.swa_pattern > 1 ? e->m.hp.swa_pattern : 1;
	bool ok = true;
	for (size_t i = 0; i < n && ok; i++)
		ok = run_step(e, &tabs, &set[i], &runs[i]);
	bench_tables_free(&tabs);
	engine_close(e);
	return ok;
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
	        "usage: orch-gpu-cost [--set full|bench|guard] [--skip STEP,...] [--context N]\n"
	        "                     [--kernels] [--tsv FILE]\n"
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

/* ---- the command line ---- */
struct opts {
	const struct step *set; /* the steps counted: a set less --skip's */
	size_t n_set;
	struct step kept[16];
	const char *tsv, *check, *write_base, *skip;
	bool kernels;
	uint32_t min_ctx; /* --context */
	struct model_arg models[16];
	size_t n_models;
};

/* --set's steps into @o; false: no such set. */
static bool
pick_set(struct opts *o, const char *v)
{
	static const struct {
		const char *name;
		const struct step *set;
		size_t n;
	} sets[] = {
	        {"full", full_set, sizeof(full_set) / sizeof(full_set[0])},
	        {"bench", bench_set, sizeof(bench_set) / sizeof(bench_set[0])},
	        {"guard", guard_set, sizeof(guard_set) / sizeof(guard_set[0])},
	};

	for (size_t i = 0; i < sizeof(sets) / sizeof(sets[0]); i++)
		if (strcmp(v, sets[i].name) == 0) {
			o->set = sets[i].set;
			o->n_set = sets[i].n;
			return true;
		}
	return false;
}

/* The command line into @o: -1 to go on, else main's exit status. */
static int
parse_args(int argc, char **argv, struct opts *o)
{
	*o = (struct opts){.set = full_set, .n_set = sizeof(full_set) / sizeof(full_set[0])};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		char *end;
		if (strcmp(a, "--kernels") == 0) {
			o->kernels = true;
			continue;
		}
		if (a[0] != '-') {
			if (o->n_models == 16 || !parse_model(a, &o->models[o->n_models++])) {
				fprintf(stderr, "orch-gpu-cost: bad model '%s'\n", a);
				return usage();
			}
			continue;
		}
		if (v == NULL) {
			fprintf(stderr, "orch-gpu-cost: %s wants a value\n", a);
			return usage();
		}
		i++;
		bool ok = true;
		if (strcmp(a, "--set") == 0) {
			ok = pick_set(o, v);
		} else if (strcmp(a, "--skip") == 0) {
			o->skip = v;
		} else if (strcmp(a, "--tsv") == 0) {
			o->tsv = v;
		} else if (strcmp(a, "--check") == 0) {
			o->check = v;
		} else if (strcmp(a, "--write-baseline") == 0) {
			o->write_base = v;
		} else if (strcmp(a, "--context") == 0) {
			unsigned long c = strtoul(v, &end, 10);
			ok = *end == '\0' && c > 0 && c <= 1u << 20;
			o->min_ctx = (uint32_t)c;
		} else {
			ok = false;
		}
		if (!ok) {
			fprintf(stderr, "orch-gpu-cost: bad argument '%s %s'\n", a, v);
			return usage();
		}
	}
	return o->n_models == 0 ? usage() : -1;
}

/* Whether the comma-separated @list names @name. */
static bool
listed(const char *list, const char *name)
{
	size_t len = strlen(name);

	for (const char *p = list; p != NULL && *p;) {
		size_t k = strcspn(p, ",");
		if (k == len && strncmp(p, name, k) == 0)
			return true;
		p += k + (p[k] == ',');
	}
	return false;
}

/* --skip: the set less the steps it names; 0, or 2 for a name no step has or no step left. */
static int
skip_steps(struct opts *o)
{
	size_t n = 0;

	for (const char *p = o->skip; p != NULL && *p;) { /* a name no step has: a typo */
		size_t k = strcspn(p, ","), hit = 0;
		for (size_t i = 0; i < o->n_set; i++)
			hit += strlen(o->set[i].name) == k && strncmp(p, o->set[i].name, k) == 0;
		if (hit == 0) {
			fprintf(stderr, "orch-gpu-cost: --skip: no step '%.*s' in this set\n",
			        (int)k, p);
			return 2;
		}
		p += k + (p[k] == ',');
	}
	for (size_t i = 0; i < o->n_set; i++)
		if (!listed(o->skip, o->set[i].name))
			o->kept[n++] = o->set[i];
	if (n == 0) {
		fprintf(stderr, "orch-gpu-cost: --skip leaves no step\n");
		return 2;
	}
	o->set = o->kept;
	o->n_set = n;
	return 0;
}

/* ---- a model's rows ---- */
/* The layer counts of @m's two files make sense; 0, else main's exit status (said why). */
static int
check_layers(const struct model_arg *m, const struct file_info *a, const struct file_info *b)
{
	uint32_t la = a->layers, lb = b->layers, period = a->period;

	if (m->b == NULL && la != m->layers) {
		fprintf(stderr,
		        "orch-gpu-cost: %s has %u layers, not %u: give a second file with more layers "
		        "to scale from\n",
		        m->a, la, m->layers);
		return 2;
	}
	if (m->b == NULL)
		return 0;
	if (la % period || lb % period || m->layers % period) {
		fprintf(stderr,
		        "orch-gpu-cost: %s repeats every %u layers: give files and LAYERS in whole "
		        "periods\n",
		        m->name, period);
		return 2;
	}
	if (lb <= la || m->layers < la) {
		fprintf(stderr,
		        "orch-gpu-cost: %s must have more layers than %s, and %s's LAYERS at least "
		        "as many\n",
		        m->b, m->a, m->name);
		return 2;
	}
	return 0;
}

/* Step @s of @m, its totals @t: the table's row, the TSV's and the baseline's. */
static void
report_step(const struct model_arg *m, const struct step *s, const struct totals *t, FILE *tsv,
            struct base_row *row)
{
	double tok = (double)s->nseq * s->len;

	print_row(m->name, s, t);
	if (tsv != NULL)
		fprintf(tsv, "%s\t%s\t%u\t%u\t%u\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.4f\t%.4f\n",
		        m->name, s->name, s->nseq, s->ctx, s->len, t->launches + t->graphs,
		        t->nodes, t->dram_rd, t->dram_wr, t->floor, 1e3 * t->t[0], 1e3 * t->t[1]);
	snprintf(row->model, sizeof(row->model), "%.63s", m->name);
	snprintf(row->step, sizeof(row->step), "%.63s", s->name);
	row->nodes = (t->launches + t->graphs + t->nodes) / tok;
	row->bytes = (t->dram_rd + t->dram_wr) / tok;
}

/* Count @m's files and report its steps (rows[0 .. o->n_set)); 0, else the exit status. */
static int
count_model(const struct opts *o, const struct model_arg *m, FILE *tsv, struct base_row *rows)
{
	struct run ra[16] = {0}, rb[16] = {0};
	struct file_info fa = {0}, fb = {0};
	int rc = 0;

	if (!count_file(m->a, o->set, o->n_set, o->min_ctx, ra, &fa))
		rc = 1;
	else if (m->b != NULL && !count_file(m->b, o->set, o->n_set, o->min_ctx, rb, &fb))
		rc = 1;
	else if ((rc = check_layers(m, &fa, &fb)) == 0) {
		double f = m->b ? (double)(m->layers - fa.layers) / (double)(fb.layers - fa.layers)
		                : 0;
		for (size_t i = 0; i < o->n_set; i++) {
			struct totals t = ra[i].tot;
			if (m->b != NULL)
				extrapolate(&t, &ra[i].tot, &rb[i].tot, f);
			report_step(m, &o->set[i], &t, tsv, &rows[i]);
			if (o->kernels)
				print_kernels(&ra[i], m->b ? &rb[i] : NULL, f);
		}
	}
	for (size_t i = 0; i < o->n_set; i++) {
		free(ra[i].k);
		free(rb[i].k);
	}
	return rc;
}

int
main(int argc, char **argv)
{
	struct opts o;
	int rc = parse_args(argc, argv, &o);

	if (rc >= 0 || (rc = skip_steps(&o)) != 0)
		return rc;
	/* counting on, the checks off (the tests make them), room for a large KV pool */
	setenv("ORCH_CUDA_SIM_COST", "1", 0);
	setenv("ORCH_CUDA_SIM_CHECKS", "0", 0);
	setenv("ORCH_CUDA_SIM_VRAM", "48G", 0);
	if (!cusim_cost_enabled()) {
		fprintf(stderr, "orch-gpu-cost: ORCH_CUDA_SIM_COST is 0: nothing to count\n");
		return 2;
	}
	FILE *tsv = NULL;
	if (o.tsv != NULL && (tsv = fopen(o.tsv, "w")) == NULL) {
		fprintf(stderr, "orch-gpu-cost: %s: %s\n", o.tsv, strerror(errno));
		return 1;
	}
	if (tsv != NULL)
		fprintf(tsv,
		        "# model\tstep\tnseq\tctx\tlen\tlaunches\tnodes\tdram_rd\tdram_wr\tfloor"
		        "\tpred_h100_ms\tpred_h200_ms\n");
	printf("%-14s %-20s %6s %6s %9s %8s %9s %6s %8s %8s %6s %6s\n", "model", "step", "launch",
	       "nodes", "MB read", "MB write", "MB floor", "×floor", "H100 ms", "H200 ms", "H100bw",
	       "H200bw");
	static struct base_row rows[16 * 16];
	for (size_t mi = 0; mi < o.n_models && rc == 0; mi++)
		rc = count_model(&o, &o.models[mi], tsv, rows + mi * o.n_set);
	if (tsv != NULL)
		fclose(tsv);
	size_t n_rows = o.n_models * o.n_set;
	if (rc == 0 && o.write_base != NULL)
		rc = write_baseline(o.write_base, rows, n_rows);
	if (rc == 0 && o.check != NULL)
		rc = check_baseline(o.check, rows, n_rows);
	return rc;
}
