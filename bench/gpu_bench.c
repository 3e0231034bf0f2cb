/*
 * gpu_bench.c - orch-gpu-bench: the CUDA backend's numbers on cuda:0, for
 * bench/RESULTS.md. First the device's copy bandwidth (a 2 GiB
 * device-to-device copy, bytes read + written, median of 10); then per
 * model (GGUF paths on the command line, e.g. orch-synth's qwen2.5-0.5b and
 * phi3-mini-4k Q4_K_M):
 *   load time and GB/s (weights / load, warm-up and graph capture included);
 *   decode tok/s at batch 1 (128-token prompt, 256 greedy tokens, sampled
 *   on the device) and the fraction of the copy bandwidth it reaches
 *   (weight bytes read per token / time per token / copy bandwidth);
 *   prefill tok/s for a 512-token prompt; batched decode tok/s at 8 and
 *   64 sequences; batch-1 decode again with a busy thread on every core.
 * Prints one table row per model. Exits 77 without a CUDA device.
 * The engine's KV cache is paged, as orch-worker runs it: slot s owns blocks
 * s·nb .. (s+1)·nb - 1 of the pool (nb = n_ctx / block tokens), and of a
 * sliding-window pool a ring of its share (bench_tables.h).
 *
 * With --predicted FILE (orch-gpu-cost --set bench --tsv: the counts of these
 * same steps on the simulated device, docs/gpu-cost.md), each measured step is
 * printed beside the time the roofline model predicted for this GPU (H100 or
 * H200 by its name), and their ratio: the model checked in the same run.
 *
 * orch-gpu-bench --profile MODEL: only the steps a profiler should see,
 * bracketed by cudaProfilerStart/Stop (ncu --profile-from-start off): 4
 * decode steps at batch 1, 4 at batch 8 and one 512-token prefill, each
 * after warm-up steps; prints each one's wall time.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>

#include "base/clock.h"
#include "bench_tables.h"
#include "engine/backend.h"
#include "engine/engine.h"
#include "engine/model/model.h"
#include "engine/sampler.h"
#include "gguf/ggml_type.h"
#include "gguf/gguf.h"
#include "gguf/model_info.h"

extern const struct be_ops be_cuda_ops;

/* ---- predictions (orch-gpu-cost --set bench --tsv) ---- */
static const char *predicted_path;

/* The predicted ms of @step for the model of file @path on this GPU; 0 if none. */
static double
predicted_ms(const char *path, const char *step)
{
	struct cudaDeviceProp p;
	char line[512], model[64], st[64];
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	size_t n;
	double h100, h200, ms = 0;
	bool is_h200;
	FILE *f;

	if (predicted_path == NULL || (f = fopen(predicted_path, "r")) == NULL)
		return 0;
	if (strstr(base, ".gguf")) /* the model's name: the file's less ".gguf" */
		n = (size_t)(strstr(base, ".gguf") - base);
	else
		n = strlen(base);
	is_h200 = cudaGetDeviceProperties(&p, 0) == cudaSuccess && strstr(p.name, "H200");
	while (fgets(line, sizeof(line), f))
		if (line[0] != '#' &&
		    sscanf(line,
		           "%63[^\t]\t%63[^\t]\t%*u\t%*u\t%*u\t%*f\t%*f\t%*f\t%*f\t%*f\t%lf\t%lf",
		           model, st, &h100, &h200) == 4 &&
		    strlen(model) == n && strncmp(model, base, n) == 0 && strcmp(st, step) == 0)
			ms = is_h200 ? h200 : h100;
	fclose(f);
	return ms;
}

/* "STEP predicted X ms a step, measured Y ms: measured / predicted Y/X" */
static void
print_prediction(const char *path, const char *step, double measured_ms)
{
	double ms = predicted_ms(path, step);

	if (ms > 0)
		printf("  %-12s predicted %8.3f ms a step, measured %8.3f ms: measured / "
		       "predicted %.2f\n",
		       step, ms, measured_ms, measured_ms / ms);
	else if (predicted_path != NULL)
		printf("  %-12s no prediction in %s\n", step, predicted_path);
}

static double
copy_bandwidth(void)
{
	const size_t n = 1ull << 30;
	void *a = NULL, *b = NULL;
	cudaEvent_t e0, e1;
	float ms[10];

	if (cudaMalloc(&a, n) != cudaSuccess || cudaMalloc(&b, n) != cudaSuccess)
		return 0;
	cudaMemset(a, 1, n);
	cudaEventCreate(&e0);
	cudaEventCreate(&e1);
	cudaMemcpy(b, a, n, cudaMemcpyDeviceToDevice);
	for (int i = 0; i < 10; i++) {
		cudaEventRecord(e0, 0);
		cudaMemcpy(i % 2 ? a : b, i % 2 ? b : a, n, cudaMemcpyDeviceToDevice);
		cudaEventRecord(e1, 0);
		cudaEventSynchronize(e1);
		cudaEventElapsedTime(&ms[i], e0, e1);
	}
	for (int i = 0; i < 10; i++) /* median */
		for (int k = i + 1; k < 10; k++)
			if (ms[k] < ms[i]) {
				float t = ms[i];
				ms[i] = ms[k];
				ms[k] = t;
			}
	cudaFree(a);
	cudaFree(b);
	return 2.0 * (double)n / ((double)(ms[4] + ms[5]) / 2 / 1e3) / 1e9;
}

struct seq_state {
	int32_t hist[2048];
	uint32_t n_hist;
	struct samp_params sp;
};

/* Paged: every slot's block tables (bench_tables.h); the engine measured now's. */
static struct bench_tables tabs;

static void
make_tables(const struct engine *e)
{
	struct orch_errinfo err = {0};

	bench_tables_free(&tabs);
	if (bench_tables_make(e, &tabs, &err) != ORCH_OK) {
		fprintf(stderr, "orch-gpu-bench: %s\n", err.msg);
		exit(1);
	}
}

/* One step of @n sequences (slots slot0..) of @len tokens each from their histories; greedy. */
static double
step(const struct be_ops *ops, struct be_model *b, struct seq_state *ss, uint32_t slot0, uint32_t n,
     uint32_t len)
{
	struct be_seq seqs[64];
	struct be_sample smp[64];
	int32_t ids[64];
	struct orch_errinfo e = {0};
	uint64_t t0 = orch_mono_ns();

	for (uint32_t i = 0; i < n; i++) {
		seqs[i] = (struct be_seq){.slot = slot0 + i,
		                          .pos = ss[i].n_hist - len,
		                          .tokens = ss[i].hist + ss[i].n_hist - len,
		                          .n_tokens = len,
		                          .want_logits = true};
		bench_tables_seq(&tabs, slot0 + i, &seqs[i]);
		smp[i] = (struct be_sample){&ss[i].sp, ss[i].hist, ss[i].n_hist, 0, NULL};
	}
	if (ops->forward_sample(b, seqs, n, smp, ids, &e) != ORCH_OK) {
		fprintf(stderr, "orch-gpu-bench: %s\n", e.msg);
		exit(1);
	}
	for (uint32_t i = 0; i < n; i++)
		ss[i].hist[ss[i].n_hist++] = ids[i];
	return (double)(orch_mono_ns() - t0) / 1e9;
}

static atomic_bool stop_busy;

static void *
busy(void *arg)
{
	volatile uint64_t x = 0;

	(void)arg;
	while (!atomic_load(&stop_busy))
		x++;
	return NULL;
}

static double
decode_b1(struct be_model *b, struct seq_state *ss)
{
	double t = 0;

	ss[0].n_hist = 128;
	step(&be_cuda_ops, b, ss, 0, 1, 128);
	for (int i = 0; i < 256; i++)
		t += step(&be_cuda_ops, b, ss, 0, 1, 1);
	return 256 / t;
}

/* Bytes of weights one decode step reads: every matrix whole, the embedding one row (not here). */
static uint64_t
weight_bytes(const struct model *m)
{
	uint64_t n = 0;

	for (uint32_t l = 0; l < m->hp.n_layer; l++) {
		const struct gguf_tensor *ts[] = {
		        m->layers[l].wq,   m->layers[l].wk,        m->layers[l].wv,
		        m->layers[l].wqkv, m->layers[l].wo,        m->layers[l].w_gate,
		        m->layers[l].w_up, m->layers[l].w_gate_up, m->layers[l].w_down};
		for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++)
			n += ts[i] ? ts[i]->nbytes : 0;
	}
	return n + m->output->nbytes;
}

static const char *model_path; /* the model --profile measures */

/* One profiled phase: @warm steps unseen, then @n seen by the profiler; prints ms per step
 * and the prediction (@pstep) beside it. */
static void
profiled(struct be_model *b, struct seq_state *ss, uint32_t nseq, uint32_t len, int warm, int n,
         const char *what, const char *pstep)
{
	double t = 0;

	for (int i = 0; i < warm; i++)
		step(&be_cuda_ops, b, ss, 0, nseq, len);
	cudaProfilerStart();
	for (int i = 0; i < n; i++)
		t += step(&be_cuda_ops, b, ss, 0, nseq, len);
	cudaProfilerStop();
	printf("profile %-12s %8.3f ms a step (%d steps)\n", what, 1e3 * t / n, n);
	if (predicted_path != NULL)
		print_prediction(model_path, pstep, 1e3 * t / n);
}

static int
profile(const char *path)
{
	struct engine *eng = NULL;
	struct orch_errinfo e = {0};
	struct engine_config cfg = {.model_path = path,
	                            .device = "cuda:0",
	                            .ops = &be_cuda_ops,
	                            .slots = 8,
	                            .n_ctx = 1024,
	                            .chunk = 512};
	struct seq_state *ss = calloc(8, sizeof(*ss));

	if (ss == NULL || engine_open(&cfg, &eng, &e) != ORCH_OK) {
		fprintf(stderr, "orch-gpu-bench: %s: %s\n", path, e.msg);
		return 1;
	}
	make_tables(eng);
	for (uint32_t i = 0; i < 8; i++) {
		ss[i].sp = samp_defaults();
		ss[i].sp.temperature = 0;
		for (uint32_t k = 0; k < 600; k++)
			ss[i].hist[k] = (int32_t)((k * 7 + i * 13) % 1000 + 3);
		ss[i].n_hist = 128;
		step(&be_cuda_ops, eng->b, ss + i, i, 1, 128);
	}
	profiled(eng->b, ss, 1, 1, 16, 4, "decode b1", "profile b1");
	profiled(eng->b, ss, 8, 1, 8, 4, "decode b8", "profile b8");
	ss[0].n_hist = 512;
	step(&be_cuda_ops, eng->b, ss, 0, 1, 512);
	profiled(eng->b, ss, 1, 512, 0, 1, "prefill 512", "pre512");
	engine_close(eng);
	free(ss);
	return 0;
}

int
main(int argc, char **argv)
{
	int count = 0;

	if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
		printf("SKIP: no CUDA device\n");
		return 77;
	}
	if (argc >= 3 && strcmp(argv[1], "--predicted") == 0) {
		predicted_path = argv[2];
		argv += 2;
		argc -= 2;
	}
	if (argc == 3 && strcmp(argv[1], "--profile") == 0) {
		model_path = argv[2];
		return profile(argv[2]);
	}
	double bw = copy_bandwidth();
	printf("device copy bandwidth: %.0f GB/s (read + write, 1 GiB D2D, median of 10)\n", bw);
	printf("%-28s %7s %7s %9s %6s %9s %8s %8s %9s\n", "model", "load_s", "load_GBs",
	       "dec1_tok/s", "bw%", "pre512/s", "dec8/s", "dec64/s", "dec1_busy");
	for (int a = 1; a < argc; a++) {
		struct engine *eng = NULL;
		struct orch_errinfo e = {0};
		struct engine_config cfg = {.model_path = argv[a],
		                            .device = "cuda:0",
		                            .ops = &be_cuda_ops,
		                            .slots = 64,
		                            .n_ctx = 1024,
		                            .chunk = 512};
		struct seq_state *ss = calloc(64, sizeof(*ss));

		/* load time: the whole engine_open (mapping, model, text, weights to VRAM) */
		uint64_t t0 = orch_mono_ns();
		if (ss == NULL || engine_open(&cfg, &eng, &e) != ORCH_OK) {
			fprintf(stderr, "orch-gpu-bench: %s: %s\n", argv[a], e.msg);
			return 1;
		}
		make_tables(eng);
		const struct model m = eng->m;
		struct be_model *b = eng->b;
		double load_s = (double)(orch_mono_ns() - t0) / 1e9;
		uint64_t rowb = 0, wbytes = weight_bytes(&m);
		ggml_row_bytes(m.tok_embd->type, m.hp.n_embd, &rowb);
		for (uint32_t i = 0; i < 64; i++) {
			ss[i].sp = samp_defaults();
			ss[i].sp.temperature = 0;
			for (uint32_t k = 0; k < 600; k++)
				ss[i].hist[k] = (int32_t)((k * 7 + i * 13) % 1000 + 3);
		}
		double dec1 = decode_b1(b, ss);
		double per_tok = 1.0 / dec1, frac = (double)(wbytes + rowb) / per_tok / (bw * 1e9);
		ss[0].n_hist = 512;
		double pre = 512 / step(&be_cuda_ops, b, ss, 0, 1, 512);
		double dec[2];
		for (int k = 0; k < 2; k++) {
			uint32_t n = k ? 64 : 8;
			double t = 0;
			for (uint32_t i = 0; i < n; i++) {
				ss[i].n_hist = 16;
				step(&be_cuda_ops, b, ss + i, i, 1, 16);
			}
			for (int s = 0; s < 64; s++)
				t += step(&be_cuda_ops, b, ss, 0, n, 1);
			dec[k] = n * 64 / t;
		}
		long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
		pthread_t th[512];
		atomic_store(&stop_busy, false);
		for (long i = 0; i < ncpu && i < 512; i++)
			pthread_create(&th[i], NULL, busy, NULL);
		double dec1_busy = decode_b1(b, ss);
		atomic_store(&stop_busy, true);
		for (long i = 0; i < ncpu && i < 512; i++)
			pthread_join(th[i], NULL);
		const char *name = strrchr(argv[a], '/') ? strrchr(argv[a], '/') + 1 : argv[a];
		printf("%-28.28s %7.2f %7.2f %9.1f %5.1f%% %9.0f %8.0f %8.0f %8.1f (%+.1f%%)\n",
		       name, load_s,
		       (double)(wbytes + (m.output != m.tok_embd ? m.tok_embd->nbytes : 0)) /
		               load_s / 1e9,
		       dec1, 100 * frac, pre, dec[0], dec[1], dec1_busy,
		       100 * (dec1_busy / dec1 - 1));
		if (predicted_path != NULL) {
			print_prediction(argv[a], "dec1", 1e3 / dec1);
			print_prediction(argv[a], "pre512", 1e3 * 512 / pre);
			print_prediction(argv[a], "dec8", 1e3 * 8 / dec[0]);
			print_prediction(argv[a], "dec64", 1e3 * 64 / dec[1]);
		}
		engine_close(eng);
		free(ss);
	}
	return 0;
}
