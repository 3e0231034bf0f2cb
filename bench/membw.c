/*
 * membw - this machine's memory read bandwidth: threads sum a buffer much
 * larger than the caches with 32-byte loads; the best of 5 passes, in GB/s.
 *
 *   membw [MiB] [THREADS...]
 */
#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"

struct part {
	const float *p;
	size_t n;
	float sum;
};

__attribute__((target("avx2"))) static void *
reader(void *arg)
{
	struct part *pt = arg;
	__m256 a = _mm256_setzero_ps(), b = _mm256_setzero_ps();

	for (size_t i = 0; i + 16 <= pt->n; i += 16) {
		a = _mm256_add_ps(a, _mm256_load_ps(pt->p + i));
		b = _mm256_add_ps(b, _mm256_load_ps(pt->p + i + 8));
	}
	float v[8];
	_mm256_storeu_ps(v, _mm256_add_ps(a, b));
	pt->sum = v[0] + v[7];
	return NULL;
}

int
main(int argc, char **argv)
{
	size_t mib = argc > 1 ? (size_t)atoi(argv[1]) : 1024, n = mib << 18;
	float *buf = aligned_alloc(64, n * sizeof(float));

	if (buf == NULL)
		return 1;
	memset(buf, 1, n * sizeof(float));
	for (int a = 2; a < argc || a == 2; a++) {
		int threads = argc > a ? atoi(argv[a]) : 1;
		double best = 1e9;
		for (int rep = 0; rep < 5; rep++) {
			pthread_t th[64];
			struct part parts[64];
			double t0 = (double)orch_mono_ns() / 1e9;
			for (int t = 0; t < threads; t++) {
				parts[t] = (struct part){buf + n / (size_t)threads * (size_t)t,
				                         n / (size_t)threads, 0};
				pthread_create(&th[t], NULL, reader, &parts[t]);
			}
			for (int t = 0; t < threads; t++)
				pthread_join(th[t], NULL);
			double dt = (double)orch_mono_ns() / 1e9 - t0;
			best = dt < best ? dt : best;
		}
		printf("membw: %zu MiB, %d thread%s: %.2f GB/s\n", mib, threads,
		       threads > 1 ? "s" : "", (double)(n * sizeof(float)) / best / 1e9);
	}
	free(buf);
	return 0;
}
