/*
 * gguf_open_bench - time gguf_open() (map + full validation) + gguf_close()
 * of each file, after one warm-up open so the page cache is warm and the
 * numbers are the parser's, not the disk's.
 *
 *   gguf_open_bench [-n ITERATIONS] FILE.gguf...
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "gguf/gguf.h"

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int
main(int argc, char **argv)
{
	int iters = 20, first = 1;
	double *t;

	if (argc > 2 && strcmp(argv[1], "-n") == 0) {
		iters = atoi(argv[2]);
		first = 3;
	}
	if (iters < 1 || first >= argc) {
		fprintf(stderr, "usage: gguf_open_bench [-n ITERATIONS] FILE.gguf...\n");
		return 2;
	}
	t = calloc((size_t)iters, sizeof(*t));
	if (t == NULL)
		return 1;
	printf("%-40s %10s %10s %10s %8s %8s\n", "file", "bytes", "min ms", "median ms", "keys",
	       "tensors");
	for (int a = first; a < argc; a++) {
		struct gguf_file *f = NULL;
		struct orch_errinfo e = {0};
		size_t keys, tensors;
		uint64_t bytes;
		if (gguf_open(argv[a], &f, &e) != ORCH_OK) {
			fprintf(stderr, "gguf_open_bench: %s\n", e.msg);
			free(t);
			return 1;
		}
		keys = gguf_kv_count(f);
		tensors = gguf_tensor_count(f);
		bytes = gguf_size(f);
		gguf_close(f);
		for (int i = 0; i < iters; i++) {
			double t0 = (double)orch_mono_ns() / 1e6;
			gguf_open(argv[a], &f, NULL);
			gguf_close(f);
			t[i] = (double)orch_mono_ns() / 1e6 - t0;
		}
		qsort(t, (size_t)iters, sizeof(*t), cmp_double);
		const char *base = strrchr(argv[a], '/');
		printf("%-40s %10llu %10.3f %10.3f %8zu %8zu\n", base ? base + 1 : argv[a],
		       (unsigned long long)bytes, t[0], t[iters / 2], keys, tensors);
	}
	free(t);
	return 0;
}
