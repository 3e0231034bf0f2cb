/*
 * kernels_util.c - what the kernel tests share (kernels_util.h).
 */
#include "kernels_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "gguf/ggml_type.h"
#include "gguf/quant.h"

struct rng kt_rng;
bool kt_quick;

void *
dev(size_t bytes)
{
	void *p = NULL;

	if (cudaMalloc(&p, bytes) != cudaSuccess)
		return NULL;
	cudaMemset(p, 0xff, bytes); /* NaN for floats: unwritten outputs show */
	return p;
}

void
fill(float *x, size_t n, float scale)
{
	for (size_t i = 0; i < n; i++)
		x[i] = rng_normalish(&kt_rng) * scale;
}

/* ‖a − b‖ / ‖b‖, NaN when any element of a is not finite. */
double
rel_err(const float *a, const double *b, size_t n)
{
	double num = 0, den = 0;

	for (size_t i = 0; i < n; i++) {
		if (!isfinite(a[i]))
			return NAN;
		num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
		den += b[i] * b[i];
	}
	return sqrt(num / (den > 0 ? den : 1));
}

/* A random @rows × @ne0 matrix of @type on the device, and its exact dequantized values. */
void *
make_mat(uint32_t type, uint32_t rows, uint32_t ne0, struct cuk_mat *w, float *deq)
{
	uint64_t rb = 0;
	float *x = malloc(ne0 * sizeof(float));

	ggml_row_bytes(type, ne0, &rb);
	uint8_t *q = malloc(rb * rows);
	void *d = dev(rb * rows);
	for (uint32_t i = 0; i < rows; i++) {
		fill(x, ne0, 0.5f);
		quant_row(type, x, q + i * rb, ne0);
		dequant_row(type, q + i * rb, deq + (uint64_t)i * ne0, ne0);
	}
	cudaMemcpy(d, q, rb * rows, cudaMemcpyHostToDevice);
	*w = (struct cuk_mat){d, type, ne0, rows, rb};
	free(x);
	free(q);
	return d;
}

int
kt_start(void)
{
	int count = 0;
	char why[256];

	if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
		printf("SKIP: no CUDA device\n");
		return 77;
	}
	if (cuk_limits_check(0, why, sizeof(why)) != cudaSuccess) {
		fprintf(stderr, "FAIL: %s\n", why);
		return 1;
	}
	const char *q = getenv("ORCH_KT_QUICK"), *sd = getenv("ORCH_KT_SEED");
	uint64_t seed = sd != NULL ? strtoull(sd, NULL, 0) : (uint64_t)time(NULL);
#ifdef CUSIM
	kt_quick = q == NULL || strcmp(q, "0") != 0; /* the simulated device: quick unless =0 */
#else
	kt_quick = q != NULL && strcmp(q, "0") != 0;
#endif
	rng_seed(&kt_rng, seed); /* fresh inputs every run */
	printf("inputs: ORCH_KT_SEED=%llu%s\n", (unsigned long long)seed,
	       kt_quick ? " (quick)" : "");
	return -1;
}
