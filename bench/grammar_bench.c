/*
 * grammar_bench - the cost of constrained decoding's token masks.
 *
 *   grammar_bench [--no-share | --verify] TESTDATA_DIR [VOCAB.gguf ...]
 *
 * For the qwen2 (151,936 tokens) and gpt-oss o200k (201,088) vocabularies
 * (or those named) and three JSON schemas of increasing size, made grammars
 * by json_schema_gbnf: the trie's build time, then 20 generations per
 * schema that take a uniformly random allowed token at each step (a
 * random-weight model, the worst case for the mask cache: it wanders into
 * every state), and per token the mask's cost: mean over all steps, over
 * the first generation alone (a cold cache), and over the last five (warm),
 * with the cache's hits and misses and the mean cost of a miss (a walk of
 * the trie, or a mask made from the walk a bounded repetition's counts
 * share; --no-share walks every count, as before that existed; --verify
 * checks every mask against one made with --no-share, and exits 1 at the
 * first that differs).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/clock.h"
#include "base/rng.h"
#include "gguf/gguf.h"
#include "grammar/gram_mask.h"
#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "text/tokenizer.h"

static const char *const schemas[][2] = {
        {"small", "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},"
                  "\"age\":{\"type\":\"integer\"}},\"required\":[\"name\",\"age\"],"
                  "\"additionalProperties\":false}"},
        {"medium",
         "{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"string\",\"format\":\"uuid\"},"
         "\"title\":{\"type\":\"string\",\"maxLength\":80},\"tags\":{\"type\":\"array\","
         "\"items\":{\"type\":\"string\",\"enum\":[\"red\",\"green\",\"blue\"]},\"maxItems\":5},"
         "\"score\":{\"type\":\"number\"},\"done\":{\"type\":\"boolean\"},\"when\":{\"type\":"
         "\"string\",\"format\":\"date\"},\"count\":{\"type\":\"integer\",\"minimum\":0,"
         "\"maximum\":1000}},\"required\":[\"id\",\"title\",\"tags\",\"score\",\"done\"],"
         "\"additionalProperties\":false}"},
        {"large",
         "{\"$defs\":{\"addr\":{\"type\":\"object\",\"properties\":{\"street\":{\"type\":"
         "\"string\"},\"city\":{\"type\":\"string\"},\"zip\":{\"type\":\"string\",\"pattern\":"
         "\"^[0-9]{5}$\"}},\"required\":[\"street\",\"city\",\"zip\"]},\"person\":{\"type\":"
         "\"object\",\"properties\":{\"name\":{\"type\":\"string\"},\"email\":{\"type\":"
         "\"string\",\"format\":\"email\"},\"home\":{\"$ref\":\"#/$defs/addr\"},\"work\":{"
         "\"anyOf\":[{\"$ref\":\"#/$defs/addr\"},{\"type\":\"null\"}]},\"kids\":{\"type\":"
         "\"array\",\"items\":{\"$ref\":\"#/$defs/person\"},\"maxItems\":3}},\"required\":["
         "\"name\",\"home\"]}},\"type\":\"object\",\"properties\":{\"people\":{\"type\":"
         "\"array\",\"items\":{\"$ref\":\"#/$defs/person\"},\"minItems\":1,\"maxItems\":4},"
         "\"created\":{\"type\":\"string\",\"format\":\"date-time\"},\"kind\":{\"enum\":["
         "\"census\",\"survey\",null,3]},\"meta\":{\"type\":\"object\",\"properties\":{"
         "\"source\":{\"type\":\"string\"},\"version\":{\"type\":\"integer\",\"minimum\":1}},"
         "\"required\":[\"source\"]}},\"required\":[\"people\",\"created\",\"kind\"]}"},
        {"long", "{\"type\":\"object\",\"properties\":{\"summary\":{\"type\":\"string\","
                 "\"minLength\":1,\"maxLength\":2000},\"notes\":{\"type\":\"array\",\"items\":"
                 "{\"type\":\"string\",\"maxLength\":200},\"maxItems\":4}},\"required\":["
                 "\"summary\",\"notes\"],\"additionalProperties\":false}"},
};

static int share = 1, verify;

/* Exit when @bits is not the mask @m's state has without sharing (--verify). */
static void
check(struct gram_match *m, struct gram_masks *plain, const uint32_t *bits, uint32_t n,
      const char *name, int gen, int step)
{
	const uint32_t *want;

	if (gram_match_mask(m, plain, &want) != ORCH_OK) {
		fprintf(stderr, "grammar_bench: %s: no plain mask\n", name);
		exit(1);
	}
	for (uint32_t w = 0; w < (n + 31) / 32; w++)
		if (bits[w] != want[w]) {
			fprintf(stderr,
			        "grammar_bench: %s generation %d step %d: masks differ at word %u\n",
			        name, gen, step, w);
			exit(1);
		}
}

#define GENS      20
#define MAX_STEPS 400

struct vocab {
	uint8_t **bytes;
	uint32_t *lens, n;
	struct gram_vocab *v;
};

static int
load_vocab(const char *path, struct vocab *vc)
{
	struct gguf_file *f = NULL;
	struct tok *t = NULL;
	char buf[GRAM_TOKEN_MAX];

	if (gguf_open(path, &f, NULL) != ORCH_OK || tok_load_gguf(f, &t, NULL) != ORCH_OK) {
		fprintf(stderr, "grammar_bench: cannot load %s\n", path);
		return -1;
	}
	vc->n = tok_n_vocab(t);
	vc->bytes = calloc(vc->n, sizeof(*vc->bytes));
	vc->lens = calloc(vc->n, sizeof(*vc->lens));
	for (uint32_t i = 0; vc->bytes && vc->lens && i < vc->n; i++) {
		size_t k = tok_piece(t, (int32_t)i, 0, buf, sizeof(buf));
		if (k > sizeof(buf) || tok_is_eog(t, (int32_t)i))
			k = 0;
		vc->bytes[i] = malloc(k ? k : 1);
		memcpy(vc->bytes[i], buf, k);
		vc->lens[i] = (uint32_t)k;
	}
	tok_free(t);
	gguf_close(f);
	uint64_t t0 = orch_mono_ns();
	if (gram_vocab_new((const uint8_t *const *)vc->bytes, vc->lens, vc->n, &vc->v) != ORCH_OK)
		return -1;
	printf("%s: %u tokens, trie built in %.1f ms\n", path, vc->n,
	       (double)(orch_mono_ns() - t0) / 1e6);
	return 0;
}

/* A uniformly random token of @bits, or -1 when none. */
static int32_t
pick(const uint32_t *bits, uint32_t n, struct rng *r)
{
	uint32_t count = 0, k;

	for (uint32_t w = 0; w < (n + 31) / 32; w++)
		count += (uint32_t)__builtin_popcount(bits[w]);
	if (count == 0)
		return -1;
	k = (uint32_t)(rng_next(r) % count);
	for (uint32_t i = 0; i < n; i++)
		if (((bits[i >> 5] >> (i & 31)) & 1) && k-- == 0)
			return (int32_t)i;
	return -1;
}

static void
bench_schema(const struct vocab *vc, const char *name, const char *schema_text)
{
	cJSON *schema = cJSON_Parse(schema_text);
	char msg[256], *text = NULL;
	struct gram *g;
	struct gram_err ge;
	struct gram_masks *c, *plain = NULL;
	struct rng r;
	double all = 0, first = 0, warm = 0;
	uint64_t steps = 0, first_steps = 0, warm_steps = 0;
	int complete = 0;

	if (json_schema_gbnf(schema, &text, msg, sizeof(msg)) != ORCH_OK ||
	    gram_compile(text, strlen(text), NULL, &g, &ge) != ORCH_OK ||
	    gram_masks_new(g, vc->v, 256u << 20, &c) != ORCH_OK) {
		fprintf(stderr, "grammar_bench: schema %s: %s %s\n", name, msg, ge.msg);
		exit(1);
	}
	gram_masks_share(c, share);
	if (verify && gram_masks_new(g, vc->v, 0, &plain) != ORCH_OK)
		exit(1);
	rng_seed(&r, 1);
	for (int gen = 0; gen < GENS; gen++) {
		struct gram_match *m;
		gram_match_new(g, &m);
		int s = 0;
		for (; s < MAX_STEPS && !gram_match_done(m); s++) {
			const uint32_t *bits;
			uint64_t t0 = orch_mono_ns();
			gram_match_mask(m, c, &bits);
			double dt = (double)(orch_mono_ns() - t0) / 1e3;
			all += dt;
			first += gen == 0 ? dt : 0;
			first_steps += gen == 0;
			warm += gen >= GENS - 5 ? dt : 0;
			warm_steps += gen >= GENS - 5;
			if (plain != NULL)
				check(m, plain, bits, vc->n, name, gen, s);
			int32_t id = pick(bits, vc->n, &r);
			if (id < 0 || !gram_match_feed(m, vc->bytes[id], vc->lens[id], NULL))
				break;
		}
		steps += (uint64_t)s;
		complete += gram_match_done(m) || gram_match_accepting(m);
		gram_match_free(m);
	}
	struct gram_masks_stats st;
	gram_masks_stats(c, &st);
	printf("  %-7s grammar %6zu bytes: %5.1f us/token mean over %lu tokens (%d/%d complete); "
	       "cold %7.1f, warm %5.1f us/token; %lu hits, %lu misses at %.2f ms each "
	       "(%lu from %lu shared walks); a walk's work at most %llu\n",
	       name, strlen(text), all / (double)steps, (unsigned long)steps, complete, GENS,
	       first / (double)first_steps, warm / (double)warm_steps, (unsigned long)st.hits,
	       (unsigned long)st.misses,
	       st.misses ? (double)st.walk_ns / 1e6 / (double)st.misses : 0.0,
	       (unsigned long)st.derived, (unsigned long)st.shared_walks,
	       (unsigned long long)st.work_max);
	gram_masks_free(c);
	gram_masks_free(plain);
	gram_free(g);
	free(text);
	cJSON_Delete(schema);
}

int
main(int argc, char **argv)
{
	char path[2][1024];
	const char *paths[16];
	int n = 0;

	if (argc > 1 && (strcmp(argv[1], "--no-share") == 0 || strcmp(argv[1], "--verify") == 0)) {
		share = strcmp(argv[1], "--no-share") != 0;
		verify = strcmp(argv[1], "--verify") == 0;
		argv++;
		argc--;
	}
	if (argc < 2) {
		fprintf(stderr, "usage: grammar_bench [--no-share | --verify] TESTDATA_DIR "
		                "[VOCAB.gguf ...]\n");
		return 2;
	}
	for (int i = 2; i < argc && n < 16; i++)
		paths[n++] = argv[i];
	if (n == 0) {
		snprintf(path[0], sizeof(path[0]), "%s/vocab/ggml-vocab-qwen2.gguf", argv[1]);
		snprintf(path[1], sizeof(path[1]), "%s/vocab/ggml-vocab-gpt-oss.gguf", argv[1]);
		paths[n++] = path[0];
		paths[n++] = path[1];
	}
	for (int i = 0; i < n; i++) {
		struct vocab vc = {0};
		if (load_vocab(paths[i], &vc) != 0)
			return 1;
		for (size_t s = 0; s < sizeof(schemas) / sizeof(schemas[0]); s++)
			bench_schema(&vc, schemas[s][0], schemas[s][1]);
		for (uint32_t k = 0; k < vc.n; k++)
			free(vc.bytes[k]);
		free(vc.bytes);
		free(vc.lens);
		gram_vocab_free(vc.v);
	}
	return 0;
}
