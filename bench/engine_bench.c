/*
 * engine_bench - CPU engine speed on a model file, through the backend
 * interface (no scheduler, no sampling cost: greedy argmax).
 *
 *   engine_bench [-p PROMPT] [-n STEPS] [--no-batch] MODEL.gguf [THREADS...]
 *
 * Per thread count: prefill tokens/s (one PROMPT-token prompt in one step,
 * 128 unless -p), decode tokens/s (STEPS steps of one token, 128 unless
 * -n), and batched decode tokens/s with 1, 4 and 16 sequences stepping
 * together (32 steps each; not with --no-batch). bench/peer runs it beside
 * llama.cpp's llama-bench with -p 512 / -n 128, as its pp512 / tg128.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "engine/backend.h"
#include "engine/engine.h"
#include "engine/model/model.h"

static int32_t
argmax(const float *v, uint32_t n)
{
	uint32_t best = 0;

	for (uint32_t i = 1; i < n; i++)
		if (v[i] > v[best])
			best = i;
	return (int32_t)best;
}

#define PROMPT_MAX 4096

static uint32_t n_prompt = 128, n_steps = 128;
static int batches = 1;

static int
bench(const char *path, uint32_t threads, const char *name)
{
	struct engine_config cfg = {.model_path = path,
	                            .ops = &be_cpu_ops,
	                            .slots = 16,
	                            .n_ctx = n_prompt + n_steps < 512 ? 512 : n_prompt + n_steps,
	                            .chunk = n_prompt +
	                                     16, /* the prompt in one step, with the slots */
	                            .threads = threads,
	                            .kv_slots = true}; /* forward is called without block tables */
	struct engine *eng = NULL;
	struct orch_errinfo e = {0};
	const float *lg;
	static int32_t prompt[PROMPT_MAX];
	int32_t toks[16];

	if (engine_open(&cfg, &eng, &e) != ORCH_OK) {
		fprintf(stderr, "engine_bench: %s\n", e.msg);
		return 1;
	}
	const struct model *m = &eng->m;
	struct be_model *b = eng->b;
	for (uint32_t i = 0; i < n_prompt; i++)
		prompt[i] = i == 0 ? 1 : (int32_t)(100 + i * 7 % (m->hp.n_vocab - 100));
	struct be_seq s = {
	        .slot = 0, .pos = 0, .tokens = prompt, .n_tokens = n_prompt, .want_logits = true};
	double t0 = (double)orch_mono_ns() / 1e9;
	be_cpu_ops.forward(b, &s, 1, &lg, &e);
	double prefill = (double)orch_mono_ns() / 1e9 - t0;
	int32_t tok = argmax(lg, m->hp.n_vocab);
	t0 = (double)orch_mono_ns() / 1e9;
	for (uint32_t i = 0; i < n_steps; i++) {
		s = (struct be_seq){.slot = 0,
		                    .pos = n_prompt + i,
		                    .tokens = &tok,
		                    .n_tokens = 1,
		                    .want_logits = true};
		be_cpu_ops.forward(b, &s, 1, &lg, &e);
		tok = argmax(lg, m->hp.n_vocab);
	}
	double decode = ((double)orch_mono_ns() / 1e9 - t0) / n_steps;
	printf("%-28s threads %u: prefill %8.1f tok/s  decode %7.2f tok/s (%.1f ms/token)", name,
	       threads, n_prompt / prefill, 1 / decode, decode * 1e3);
	for (uint32_t B = 1; B <= 16 && batches; B *= 4) {
		struct be_seq seqs[16];
		for (uint32_t k = 0; k < B; k++) { /* 8-token prompts, not timed */
			seqs[k] = (struct be_seq){.slot = k + 1 < 16 ? k + 1 : 15,
			                          .pos = 0,
			                          .tokens = prompt + k,
			                          .n_tokens = 8,
			                          .want_logits = true};
			if (k == 15)
				seqs[k].slot = 0;
		}
		be_cpu_ops.forward(b, seqs, B, &lg, &e);
		for (uint32_t k = 0; k < B; k++)
			toks[k] = argmax(lg + (uint64_t)k * m->hp.n_vocab, m->hp.n_vocab);
		t0 = (double)orch_mono_ns() / 1e9;
		for (uint32_t step = 0; step < 32; step++) {
			for (uint32_t k = 0; k < B; k++)
				seqs[k] = (struct be_seq){.slot = seqs[k].slot,
				                          .pos = 8 + step,
				                          .tokens = &toks[k],
				                          .n_tokens = 1,
				                          .want_logits = true};
			be_cpu_ops.forward(b, seqs, B, &lg, &e);
			for (uint32_t k = 0; k < B; k++)
				toks[k] = argmax(lg + (uint64_t)k * m->hp.n_vocab, m->hp.n_vocab);
		}
		printf("  batch %2u: %7.1f tok/s", B, B * 32 / ((double)orch_mono_ns() / 1e9 - t0));
	}
	printf("\n");
	engine_close(eng);
	return 0;
}

int
main(int argc, char **argv)
{
	int rc = 0;

	for (; argc > 2 && argv[1][0] == '-'; argc--, argv++) {
		if (strcmp(argv[1], "--no-batch") == 0) {
			batches = 0;
		} else if (strcmp(argv[1], "-p") == 0 || strcmp(argv[1], "-n") == 0) {
			long v = strtol(argv[2], NULL, 10);
			if (v < 1 || v > PROMPT_MAX) {
				fprintf(stderr, "engine_bench: %s takes 1..%d\n", argv[1],
				        PROMPT_MAX);
				return 2;
			}
			*(argv[1][1] == 'p' ? &n_prompt : &n_steps) = (uint32_t)v;
			argc--, argv++;
		} else {
			break;
		}
	}
	if (argc < 2 || argv[1][0] == '-') {
		fprintf(stderr,
		        "usage: engine_bench [-p PROMPT] [-n STEPS] [--no-batch] MODEL.gguf "
		        "[THREADS...]\n");
		return 2;
	}
	const char *name = strrchr(argv[1], '/') ? strrchr(argv[1], '/') + 1 : argv[1];
	for (int a = 2; a < argc || a == 2; a++)
		rc |= bench(argv[1], argc > a ? (uint32_t)atoi(argv[a]) : 1, name);
	return rc;
}
