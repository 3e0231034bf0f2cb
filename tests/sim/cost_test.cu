/*
 * cost_test.cu - the simulated device's cost counters (cuda/sim/cost.cc,
 * cusim/cost.h) on a kernel whose traffic is known: sectors per launch and per
 * block, bytes requested, atomics, fmaf and __dp4a; a copy; a graph's launch and
 * its node; a launch left unrun by cusim_cost_skip. ORCH_CUDA=SIM only; ctest
 * runs it with ORCH_CUDA_SIM_COST=1 (read before main, at the first CUDA call).
 */
#include <cusim/cost.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <vector>

#include <cuda_runtime.h>

template <typename T>
static T *
dalloc(size_t n)
{
	T *p = nullptr;
	if (cudaMalloc(&p, n * sizeof(T)) != cudaSuccess)
		return nullptr;
	return p;
}

static __global__ void
cost_kernel(const float *x, float *y, const int *a, int *out, int *cnt)
{
	uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
	y[i] = fmaf(x[i], 2.0f, x[0]); /* x[0]: re-read by every block */
	out[i] = __dp4a(a[i], a[i], 0);
	atomicAdd(cnt, 1);
}

int
main(void)
{
	const int n = 1024;
	float *x = dalloc<float>(n), *y = dalloc<float>(n);
	int *a = dalloc<int>(n), *out = dalloc<int>(n), *cnt = dalloc<int>(1);
	std::vector<float> hx(n, 1.0f);
	cusim_cost_rec *r = nullptr;
	int bad = 0;
#define COST_EQ(v, want)                                                              \
	do {                                                                          \
		if ((unsigned long long)(v) != (unsigned long long)(want)) {          \
			fprintf(stderr, "cost: %s = %llu, want %llu\n", #v,           \
			        (unsigned long long)(v), (unsigned long long)(want)); \
			bad = 1;                                                      \
		}                                                                     \
	} while (0)

	if (!cusim_cost_enabled()) {
		fprintf(stderr, "cost: counting is off: run with ORCH_CUDA_SIM_COST=1\n");
		return 1;
	}
	cudaMemset(cnt, 0, 4);
	cudaMemset(a, 1, n * 4);
	cudaMemcpy(x, hx.data(), n * 4, cudaMemcpyHostToDevice);
	free(r);
	size_t k = cusim_cost_take(&r);
	COST_EQ(k, 3);
	if (k == 3) {
		COST_EQ(r[2].kind, CUSIM_COST_MEMCPY);
		COST_EQ(r[2].host_rd, 4096);
		COST_EQ(r[2].dram_wr, 128);
	}
	free(r);
	cost_kernel<<<4, 256>>>(x, y, a, out, cnt);
	cudaDeviceSynchronize();
	k = cusim_cost_take(&r);
	COST_EQ(k, 1);
	if (k == 1) {
		COST_EQ(r[0].kind, CUSIM_COST_KERNEL);
		COST_EQ(r[0].in_graph, 0);
		COST_EQ(r[0].blocks, 4);
		COST_EQ(r[0].threads, 1024);
#if !defined(__SANITIZE_ADDRESS__) /* there the kernels' accesses are ASan's, not counted */
		COST_EQ(r[0].dram_rd, 128 + 128 + 1);      /* x, a, the counter */
		COST_EQ(r[0].dram_wr, 128 + 128 + 1);      /* y, out, the counter */
		COST_EQ(r[0].l2_rd, 4 * 32 + 3 + 128 + 4); /* x[0]'s sector again in 3 blocks */
		COST_EQ(r[0].l2_wr, 128 + 128 + 4);
		COST_EQ(r[0].req_rd, 1024 * (4 + 4 + 4 + 4)); /* x[i], x[0], a[i], the atomic */
		COST_EQ(r[0].req_wr, 1024 * (4 + 4 + 4));
#endif
		COST_EQ(r[0].atomics, 1024);
		COST_EQ(r[0].fma32, 1024);
		COST_EQ(r[0].dp4a, 1024);
	}
	free(r);
	/* a graph: its launch, then its node */
	cudaStream_t st;
	cudaGraph_t g;
	cudaGraphExec_t ge;
	cudaStreamCreate(&st);
	cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal);
	cost_kernel<<<4, 256, 0, st>>>(x, y, a, out, cnt);
	cudaStreamEndCapture(st, &g);
	cudaGraphInstantiate(&ge, g, 0);
	cudaGraphLaunch(ge, st);
	cudaStreamSynchronize(st);
	k = cusim_cost_take(&r);
	COST_EQ(k, 2);
	if (k == 2) {
		COST_EQ(r[0].kind, CUSIM_COST_GRAPH);
		COST_EQ(r[1].in_graph, 1);
#if !defined(__SANITIZE_ADDRESS__)
		COST_EQ(r[1].dram_rd, 257);
#endif
	}
	free(r);
	/* skipped: not run, not counted */
	int before = 0, after = 0;
	cudaMemcpy(&before, cnt, 4, cudaMemcpyDeviceToHost);
	cusim_cost_skip(1);
	cost_kernel<<<4, 256>>>(x, y, a, out, cnt);
	cudaDeviceSynchronize();
	cusim_cost_skip(0);
	cudaMemcpy(&after, cnt, 4, cudaMemcpyDeviceToHost);
	COST_EQ(after, before);
	k = cusim_cost_take(&r);
	COST_EQ(k, 2); /* the two copies of the counter */
	free(r);
	printf("cost counters: %s\n", bad ? "FAILED" : "ok");
	return bad;
#undef COST_EQ
}
