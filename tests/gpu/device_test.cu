/*
 * device_test.cu - the GPU toolchain end to end: the binary's kernels run on
 * the device present, and their results match a CPU computation bit for
 * bit. Prints the device, driver and runtime; exits 77 ("SKIP: ...") where
 * no CUDA device or driver exists, so the suite passes on machines without a GPU.
 */
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>

/* y[i] = a·x[i] + i, one thread per element; n may be any size. */
static __global__ void
axpy_index(float a, const float *x /* [n] */, float *y /* [n] */, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		y[i] = __fmaf_rn(a, x[i], (float)i);
}

static int
check(cudaError_t e, const char *what)
{
	if (e == cudaSuccess)
		return 0;
	fprintf(stderr, "FAIL: %s: %s (%s)\n", what, cudaGetErrorString(e), cudaGetErrorName(e));
	return 1;
}

int
main(void)
{
	int count = 0, driver = 0, runtime = 0, dev = 0;
	cudaError_t e = cudaGetDeviceCount(&count);
	const int n = 1000003; /* not a multiple of the block size */
	float *x = NULL, *y = NULL, *dx = NULL, *dy = NULL;
	cudaDeviceProp p;
	int bad = 0;

	if (e != cudaSuccess || count == 0) {
		printf("SKIP: no CUDA device (%s)\n",
		       e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
		return 77;
	}
	cudaDriverGetVersion(&driver);
	cudaRuntimeGetVersion(&runtime);
	if (check(cudaGetDeviceProperties(&p, dev), "cudaGetDeviceProperties"))
		return 1;
	printf("device 0: %s, compute %d.%d, %d SMs, %.1f GiB, driver %d, runtime %d\n", p.name,
	       p.major, p.minor, p.multiProcessorCount, (double)p.totalGlobalMem / (1 << 30),
	       driver, runtime);
	x = (float *)malloc(n * sizeof(float));
	y = (float *)malloc(n * sizeof(float));
	if (x == NULL || y == NULL)
		return 1;
	for (int i = 0; i < n; i++)
		x[i] = (float)(i % 1000) * 0.001f;
	if (check(cudaMalloc(&dx, n * sizeof(float)), "cudaMalloc") ||
	    check(cudaMalloc(&dy, n * sizeof(float)), "cudaMalloc") ||
	    check(cudaMemcpy(dx, x, n * sizeof(float), cudaMemcpyHostToDevice), "copy in"))
		return 1;
	axpy_index<<<(n + 255) / 256, 256>>>(2.5f, dx, dy, n);
	if (check(cudaGetLastError(), "launch") ||
	    check(cudaMemcpy(y, dy, n * sizeof(float), cudaMemcpyDeviceToHost), "copy out"))
		return 1;
	for (int i = 0; i < n && bad < 5; i++) {
		float want = fmaf(2.5f, x[i], (float)i);
		if (y[i] != want) {
			fprintf(stderr, "FAIL: y[%d] = %.9g, want %.9g\n", i, y[i], want);
			bad++;
		}
	}
	cudaFree(dx);
	cudaFree(dy);
	free(x);
	free(y);
	printf("%s: %d elements\n", bad ? "FAIL" : "ok", n);
	return bad ? 1 : 0;
}
