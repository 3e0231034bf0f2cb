/*
 * tok_bench - tokenizer and chat-template speed.
 *
 *   tok_bench TESTDATA_DIR
 *
 * Encode throughput (MB/s, best of 3) on ~4 MB of mixed text (the
 * conformance inputs — scripts, numbers, whitespace runs, emoji — repeated)
 * for the qwen2 (byte-level BPE) and llama-spm (SentencePiece) vocabularies,
 * and the time to render each shared chat template for a 3-message conversation.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/clock.h"
#include "gguf/gguf.h"
#include "text/jinja/jinja.h"
#include "text/tokenizer.h"

static char *
slurp(const char *path, size_t *n)
{
	FILE *fp = fopen(path, "rb");
	char *p = NULL;
	long k;

	if (fp && fseek(fp, 0, SEEK_END) == 0 && (k = ftell(fp)) >= 0 &&
	    fseek(fp, 0, SEEK_SET) == 0 && (p = malloc((size_t)k + 1)) != NULL &&
	    fread(p, 1, (size_t)k, fp) == (size_t)k) {
		p[k] = '\0';
		*n = (size_t)k;
	}
	if (fp)
		fclose(fp);
	return p;
}

static void
bench_encode(const char *dir, const char *vocab, const char *text, size_t n)
{
	char path[1024];
	struct gguf_file *f = NULL;
	struct tok *t = NULL;
	double best = 1e9;
	size_t ntok = 0;

	snprintf(path, sizeof(path), "%s/vocab/%s", dir, vocab);
	if (gguf_open(path, &f, NULL) != ORCH_OK || tok_load_gguf(f, &t, NULL) != ORCH_OK) {
		fprintf(stderr, "tok_bench: cannot load %s\n", path);
		exit(1);
	}
	for (int rep = 0; rep < 3; rep++) {
		struct tok_ids ids = {0};
		double t0 = (double)orch_mono_ns() / 1e9;
		tok_encode(t, text, n, 0, &ids);
		double dt = (double)orch_mono_ns() / 1e9 - t0;
		best = dt < best ? dt : best;
		ntok = ids.n;
		tok_ids_fini(&ids);
	}
	printf("encode %-26s %6.2f MB/s  %8.0f tokens/s  (%zu bytes -> %zu tokens)\n", vocab,
	       (double)n / best / 1e6, (double)ntok / best, n, ntok);
	tok_free(t);
	gguf_close(f);
}

static void
bench_templates(const char *dir)
{
	const char *names[] = {
	        "Qwen-Qwen2.5-7B-Instruct",         "meta-llama-Llama-3.1-8B-Instruct",
	        "meta-llama-Llama-3.2-3B-Instruct", "mistralai-Mistral-Nemo-Instruct-2407",
	        "microsoft-Phi-3-mini-4k-instruct", "google-gemma-2-2b-it"};
	cJSON *vars = cJSON_Parse(
	        "{\"messages\": [{\"role\": \"user\", \"content\": \"Hello\"}, "
	        "{\"role\": \"assistant\", \"content\": \"Hi! How can I help?\"}, "
	        "{\"role\": \"user\", \"content\": \"What is 2+2?\"}], \"bos_token\": \"<s>\", "
	        "\"eos_token\": \"</s>\", \"add_generation_prompt\": true, \"tools\": null}");
	struct jinja_opts o = {.now = 1721952000};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char path[1024];
		size_t n;
		struct jinja_tmpl *t = NULL;
		snprintf(path, sizeof(path), "%s/templates/%s.jinja", dir, names[i]);
		char *src = slurp(path, &n);
		double t0 = (double)orch_mono_ns() / 1e9;
		for (int k = 0; k < 100; k++) {
			jinja_free(t);
			t = NULL;
			jinja_compile(names[i], src, n, &t, NULL);
		}
		double compile = ((double)orch_mono_ns() / 1e9 - t0) / 100;
		int reps = 2000;
		t0 = (double)orch_mono_ns() / 1e9;
		for (int k = 0; k < reps; k++) {
			struct sbuf out = {0};
			jinja_render(t, vars, &o, &out, NULL);
			sbuf_fini(&out);
		}
		printf("template %-38s compile %6.1f us  render %6.1f us\n", names[i],
		       compile * 1e6, ((double)orch_mono_ns() / 1e9 - t0) / reps * 1e6);
		jinja_free(t);
		free(src);
	}
	cJSON_Delete(vars);
}

int
main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "../shared/testdata";
	char path[1024];
	size_t n, total = 0;

	snprintf(path, sizeof(path), "%s/vocab/ggml-vocab-qwen2.gguf.inp", dir);
	char *inp = slurp(path, &n);
	if (inp == NULL) {
		fprintf(stderr, "tok_bench: cannot read %s\n", path);
		return 1;
	}
	size_t reps = (4u << 20) / n;
	char *text = malloc(reps * n);
	for (size_t i = 0; i < reps; i++, total += n)
		memcpy(text + total, inp, n);
	bench_encode(dir, "ggml-vocab-qwen2.gguf", text, total);
	bench_encode(dir, "ggml-vocab-llama-spm.gguf", text, total);
	bench_templates(dir);
	free(text);
	free(inp);
	return 0;
}
