/*
 * schema_sample_test.c - the real-world JSON Schema sample (tests/data/schemas,
 * SOURCE.md there) through json_schema_gbnf, by split: how many compile (the
 * coverage issue 56 measures), each accepted grammar compiled by gram_compile too
 * (a grammar orch makes must compile), and nothing taking more than the bounded
 * compile's limit would allow to go unnoticed (printed, not asserted: a slow
 * machine must not fail a unit test).
 *
 * usage: schema_sample_test [-v] [--times] [SPLIT=MIN ...]
 *   SPLIT=MIN  fail when fewer than MIN schemas of SPLIT are accepted (a ratchet)
 *   -v         print each refusal's message
 *   --times    print compile-time percentiles over the accepted and refused schemas,
 *              and each schema over 5 ms of CPU
 */
#include <dirent.h>

#include <cjson/cJSON.h>

#include "base/clock.h"
#include "base/readfile.h"
#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "t.h"

#define SPLITS_MAX  16
#define SCHEMAS_MAX 4096

/* One split's counts and its ratchet. */
struct split {
	char name[64];
	unsigned n, ok;
	long min; /* -1: none given */
};

static struct split splits[SPLITS_MAX];
static size_t nsplits;
static bool verbose, times;
static uint64_t took_ns[SCHEMAS_MAX], cpu_ns[SCHEMAS_MAX]; /* wall, this thread's CPU */
static size_t ntook;

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* The sorted names of @dir's entries that end in @ext (not "." ones); free each and the list. */
static size_t
list_dir(const char *dir, const char *ext, char ***ret)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **v = NULL, **nv;
	size_t n = 0;

	*ret = NULL;
	if (d == NULL)
		return 0;
	while ((e = readdir(d)) != NULL) {
		size_t len = strlen(e->d_name), k = strlen(ext);
		if (e->d_name[0] == '.' || len < k || strcmp(e->d_name + len - k, ext) != 0)
			continue;
		if ((nv = realloc(v, (n + 1) * sizeof(*v))) == NULL)
			break;
		v = nv;
		if ((v[n] = strdup(e->d_name)) != NULL)
			n++;
	}
	closedir(d);
	qsort(v, n, sizeof(*v), cmp_str);
	*ret = v;
	return n;
}

/* One schema file: compile it, count it, check an accepted grammar compiles. */
static void
one(struct split *sp, const char *path, const char *name)
{
	char *text = NULL, *gbnf = NULL, msg[4096];
	struct gram *g = NULL;
	struct gram_err ge;
	cJSON *s = NULL;
	size_t n = 0;
	uint64_t t0, c0;
	orch_err rv;

	T_OK(orch_read_regular(path, 64u << 20, &text, &n, NULL));
	s = cJSON_ParseWithLength(text, n);
	free(text);
	if (s == NULL)
		fprintf(stderr, "%s: not JSON\n", path);
	T_TRUE(s != NULL);
	sp->n++;
	t0 = orch_mono_ns();
	c0 = orch_thread_cpu_ns();
	rv = json_schema_gbnf(s, &gbnf, msg, sizeof(msg));
	if (rv == ORCH_OK && gram_compile(gbnf, strlen(gbnf), NULL, &g, &ge) != ORCH_OK) {
		fprintf(stderr, "%s/%s: its grammar does not compile: %u:%u %s\n", sp->name, name,
		        ge.line, ge.col, ge.msg);
		t_failed_checks++;
	}
	if (ntook < SCHEMAS_MAX) {
		cpu_ns[ntook] = orch_thread_cpu_ns() - c0;
		took_ns[ntook++] = orch_mono_ns() - t0;
	}
	if (times && ntook > 0 && cpu_ns[ntook - 1] > 5000000) /* the slow ones, named */
		printf("slow: %s/%s %.2f ms of CPU (%s)\n", sp->name, name,
		       (double)cpu_ns[ntook - 1] / 1e6, rv == ORCH_OK ? "accepted" : "refused");
	cJSON_Delete(s);
	gram_free(g);
	free(gbnf);
	if (rv != ORCH_OK && rv != ORCH_EINVAL)
		fprintf(stderr, "%s/%s: %s\n", sp->name, name, orch_err_name(rv));
	T_TRUE(rv == ORCH_OK || rv == ORCH_EINVAL);
	sp->ok += rv == ORCH_OK;
	if (rv != ORCH_OK && verbose)
		printf("refused %s/%s: %s\n", sp->name, name, msg);
}

static void
test_sample(void)
{
	char dir[1024], path[2048], **names = NULL;
	size_t n;

	for (size_t i = 0; i < nsplits; i++) {
		snprintf(dir, sizeof(dir), "%s", t_repo("schemas/"));
		strncat(dir, splits[i].name, sizeof(dir) - strlen(dir) - 1);
		n = list_dir(dir, ".json", &names);
		if (n == 0)
			fprintf(stderr, "no schemas in %s\n", dir);
		T_TRUE(n > 0);
		for (size_t k = 0; k < n; k++) {
			snprintf(path, sizeof(path), "%s/%s", dir, names[k]);
			one(&splits[i], path, names[k]);
			free(names[k]);
		}
		free(names);
	}
}

/* Print the table; fail a split under its ratchet. */
static void
test_coverage(void)
{
	unsigned n = 0, ok = 0;
	bool under = false;

	for (size_t i = 0; i < nsplits; i++) {
		const struct split *sp = &splits[i];
		printf("coverage %-10s %4u / %4u  %5.1f %%", sp->name, sp->ok, sp->n,
		       sp->n ? 100.0 * sp->ok / sp->n : 0.0);
		if (sp->min >= 0)
			printf("  (at least %ld)", sp->min);
		printf("\n");
		n += sp->n;
		ok += sp->ok;
		if (sp->min >= 0 && sp->ok < (unsigned long)sp->min) {
			fprintf(stderr, "split %s: %u accepted, fewer than its ratchet %ld\n",
			        sp->name, sp->ok, sp->min);
			under = true;
		}
	}
	printf("coverage %-10s %4u / %4u  %5.1f %%\n", "all", ok, n, n ? 100.0 * ok / n : 0.0);
	T_TRUE(!under);
}

/* Percentiles of @v (@what), sorted in place. */
static void
print_pct(const char *what, uint64_t *v)
{
	qsort(v, ntook, sizeof(v[0]), cmp_u64);
	printf("compile %s over %zu schemas: p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f "
	       "ms\n",
	       what, ntook, (double)v[ntook / 2] / 1e6, (double)v[ntook * 9 / 10] / 1e6,
	       (double)v[ntook * 99 / 100] / 1e6, (double)v[ntook - 1] / 1e6);
}

/* Compile-time percentiles (json_schema_gbnf and gram_compile), printed only: the wall
 * clock's, and this thread's CPU time (what a loaded machine does not inflate). */
static void
print_times(void)
{
	if (ntook == 0)
		return;
	print_pct("time", took_ns);
	print_pct("CPU time", cpu_ns);
}

/* The splits: those named on the command line, else every folder of the sample. */
static void
add_split(const char *name, long min)
{
	if (nsplits == SPLITS_MAX)
		return;
	snprintf(splits[nsplits].name, sizeof(splits[nsplits].name), "%s", name);
	splits[nsplits++].min = min;
}

int
main(int argc, char **argv)
{
	static const char *const all[] = {"tooling", "github", "api"};

	for (int i = 1; i < argc; i++) {
		const char *eq = strchr(argv[i], '=');
		if (strcmp(argv[i], "-v") == 0) {
			verbose = true;
		} else if (strcmp(argv[i], "--times") == 0) {
			times = true;
		} else if (eq != NULL && (size_t)(eq - argv[i]) < sizeof(splits[0].name)) {
			char name[64];
			snprintf(name, sizeof(name), "%.*s", (int)(eq - argv[i]), argv[i]);
			add_split(name, strtol(eq + 1, NULL, 10));
		} else {
			fprintf(stderr, "usage: %s [-v] [--times] [SPLIT=MIN ...]\n", argv[0]);
			return 2;
		}
	}
	if (nsplits == 0)
		for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
			add_split(all[i], -1);
	T_RUN(test_sample);
	T_RUN(test_coverage);
	if (times)
		print_times();
	return t_done();
}
