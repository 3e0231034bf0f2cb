/*
 * sim_test.cu - the simulated CUDA device itself (cuda/sim): the device
 * language, the runtime's stream, graph and memory contracts, cuBLAS and CUB,
 * and that each check it adds over a GPU reports what it should. Built only
 * with ORCH_CUDA=SIM (on a GPU the fault cases would be undefined behaviour).
 *
 * A fault case runs in a child process: it must die (the simulator aborts
 * on a fault) with the diagnosis on stderr naming the kernel, block and
 * thread. The simulated VRAM is 256 MiB here (ORCH_CUDA_SIM_VRAM, set
 * before the first CUDA call).
 */
#include <algorithm>
#include <cmath>
#include <cub/device/device_segmented_sort.cuh>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

static int failed, passed;

#define CHECK(cond, ...)                                                                         \
	do {                                                                                     \
		if (!(cond)) {                                                                   \
			fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                                            \
			fputc('\n', stderr);                                                     \
			failed++;                                                                \
			return;                                                                  \
		}                                                                                \
	} while (0)
#define CK(e) CHECK((e) == cudaSuccess, "%s", cudaGetErrorName(e))

template <typename T>
static T *
dalloc(size_t n)
{
	T *p = nullptr;
	if (cudaMalloc(&p, n * sizeof(T)) != cudaSuccess)
		return nullptr;
	return p;
}

/* ---- the device language ---- */

static __global__ void
ids_kernel(uint32_t *out)
{
	uint32_t b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
	uint32_t t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
	uint32_t n = blockDim.x * blockDim.y * blockDim.z;
	out[b * n + t] = b * 1000 + t;
}

static __global__ void
reduce_kernel(const float *x, float *out, int *counts)
{
	__shared__ float part[256];
	uint32_t t = threadIdx.x;

	part[t] = x[blockIdx.x * 256 + t];
	__syncthreads();
	for (uint32_t s = 128; s > 0; s >>= 1) {
		if (t < s)
			part[t] += part[t + s];
		__syncthreads();
	}
	int c = __syncthreads_count(x[blockIdx.x * 256 + t] > 0.0f);
	int all = __syncthreads_and(t < 1000);
	int any = __syncthreads_or(t == 17);
	if (t == 0) {
		out[blockIdx.x] = part[0];
		counts[3 * blockIdx.x] = c;
		counts[3 * blockIdx.x + 1] = all;
		counts[3 * blockIdx.x + 2] = any;
	}
}

static __global__ void
warp_kernel(int *out)
{
	int lane = (int)(threadIdx.x % 32), w = (int)(threadIdx.x / 32);
	int *o = out + (size_t)w * 32 * 12 + (size_t)lane * 12;

	o[0] = __shfl_sync(0xffffffffu, lane * 10, 3);
	o[1] = __shfl_up_sync(0xffffffffu, lane, 2);
	o[2] = __shfl_down_sync(0xffffffffu, lane, 5);
	o[3] = __shfl_xor_sync(0xffffffffu, lane, 7);
	o[4] = __shfl_xor_sync(0xffffffffu, lane, 1, 8);
	o[5] = (int)__ballot_sync(0xffffffffu, lane % 3 == 0);
	o[6] = __any_sync(0xffffffffu, lane == 31);
	o[7] = __all_sync(0xffffffffu, lane < 31);
	o[8] = (int)__reduce_add_sync(0xffffffffu, (unsigned)lane);
	o[9] = (int)__match_any_sync(0xffffffffu, lane / 4);
	if (lane < 16) /* a collective of half the warp */
		o[10] = __shfl_down_sync(0x0000ffffu, lane, 1, 16);
	else
		o[10] = -1;
	double d = __shfl_sync(0xffffffffu, (double)lane + 0.5, 31 - lane);
	o[11] = (int)(d * 2);
	__syncwarp();
}

static __global__ void
dyn_kernel(float *out)
{
	extern __shared__ float dyn[];
	dyn[threadIdx.x] = (float)threadIdx.x;
	__syncthreads();
	out[threadIdx.x] = dyn[blockDim.x - 1 - threadIdx.x];
}

static __global__ void
partial_warp_kernel(int *out, int n)
{
	/* 40 threads: warp 1 has 8 lanes, its full mask names lanes that do not exist */
	unsigned m = __activemask();
	int v = __shfl_xor_sync(m, (int)threadIdx.x, 1);
	if ((int)threadIdx.x < n)
		out[threadIdx.x] = v;
}

static void
test_language(void)
{
	uint32_t *ids = dalloc<uint32_t>(2 * 3 * 2 * 4 * 3 * 2);
	std::vector<uint32_t> h(2 * 3 * 2 * 4 * 3 * 2);

	ids_kernel<<<dim3(2, 3, 2), dim3(4, 3, 2)>>>(ids);
	CK(cudaGetLastError());
	CK(cudaMemcpy(h.data(), ids, h.size() * 4, cudaMemcpyDeviceToHost));
	for (uint32_t b = 0; b < 12; b++)
		for (uint32_t t = 0; t < 24; t++)
			CHECK(h[b * 24 + t] == b * 1000 + t, "block %u thread %u: %u", b, t,
			      h[b * 24 + t]);

	std::vector<float> x(4 * 256);
	for (size_t i = 0; i < x.size(); i++)
		x[i] = (float)((int)(i % 7) - 3);
	float *dx = dalloc<float>(x.size()), *dout = dalloc<float>(4);
	int *dc = dalloc<int>(12);
	CK(cudaMemcpy(dx, x.data(), x.size() * 4, cudaMemcpyHostToDevice));
	reduce_kernel<<<4, 256>>>(dx, dout, dc);
	float out[4];
	int c[12];
	CK(cudaMemcpy(out, dout, sizeof(out), cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(c, dc, sizeof(c), cudaMemcpyDeviceToHost));
	for (int b = 0; b < 4; b++) {
		float want = 0;
		int pos = 0;
		for (int i = 0; i < 256; i++) {
			want += x[(size_t)b * 256 + (size_t)i];
			pos += x[(size_t)b * 256 + (size_t)i] > 0;
		}
		CHECK(out[b] == want, "block %d: %g, want %g", b, out[b], want);
		CHECK(c[3 * b] == pos && c[3 * b + 1] == 1 && c[3 * b + 2] == 1,
		      "__syncthreads_count/and/or: %d %d %d", c[3 * b], c[3 * b + 1], c[3 * b + 2]);
	}

	int *dw = dalloc<int>(2 * 32 * 12);
	std::vector<int> w(2 * 32 * 12);
	warp_kernel<<<1, 64>>>(dw);
	CK(cudaMemcpy(w.data(), dw, w.size() * 4, cudaMemcpyDeviceToHost));
	unsigned ballot = 0;
	for (int l = 0; l < 32; l++)
		ballot |= (l % 3 == 0 ? 1u : 0u) << l;
	for (int l = 0; l < 64; l++) {
		int lane = l % 32, *o = &w[(size_t)l * 12];
		CHECK(o[0] == 30, "shfl idx: %d", o[0]);
		CHECK(o[1] == (lane < 2 ? lane : lane - 2), "shfl up: lane %d got %d", lane, o[1]);
		CHECK(o[2] == (lane + 5 < 32 ? lane + 5 : lane), "shfl down: lane %d got %d", lane,
		      o[2]);
		CHECK(o[3] == (lane ^ 7), "shfl xor: %d", o[3]);
		CHECK(o[4] == (lane ^ 1), "shfl xor width 8: %d", o[4]);
		CHECK((unsigned)o[5] == ballot, "ballot %08x", (unsigned)o[5]);
		CHECK(o[6] == 1 && o[7] == 0, "any %d all %d", o[6], o[7]);
		CHECK(o[8] == 496, "reduce_add %d", o[8]);
		CHECK((unsigned)o[9] == 0xfu << (lane / 4 * 4), "match_any %08x", (unsigned)o[9]);
		CHECK(o[10] == (lane < 16 ? (lane + 1 < 16 ? lane + 1 : lane) : -1), "half warp %d",
		      o[10]);
		CHECK(o[11] == 2 * (31 - lane) + 1, "double shuffle %d", o[11]);
	}

	float *dd = dalloc<float>(96);
	float hd[96];
	dyn_kernel<<<1, 96, 96 * sizeof(float)>>>(dd);
	CK(cudaMemcpy(hd, dd, sizeof(hd), cudaMemcpyDeviceToHost));
	for (int i = 0; i < 96; i++)
		CHECK(hd[i] == (float)(95 - i), "dynamic shared %d: %g", i, hd[i]);

	int *dp = dalloc<int>(40);
	int hp[40];
	partial_warp_kernel<<<1, 40>>>(dp, 40);
	CK(cudaMemcpy(hp, dp, sizeof(hp), cudaMemcpyDeviceToHost));
	for (int i = 0; i < 40; i++)
		CHECK(hp[i] == (i ^ 1), "partial warp, thread %d: %d", i, hp[i]);

	/* an invalid configuration is the launch's error, nothing runs */
	ids_kernel<<<1, 2048>>>(ids);
	CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration, "1024 threads a block at most");
	CHECK(cudaGetLastError() == cudaSuccess, "cudaGetLastError clears the error");
	cudaFree(ids), cudaFree(dx), cudaFree(dout), cudaFree(dc), cudaFree(dw), cudaFree(dd),
	        cudaFree(dp);
	passed++;
}

/* ---- numbers ---- */

static __global__ void
math_kernel(const float *x, float *y, int n)
{
	int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
	if (i < n)
		y[i] = expf(x[i]);
}

static int64_t
ulp_diff(float a, float b)
{
	int32_t ia, ib;
	memcpy(&ia, &a, 4);
	memcpy(&ib, &b, 4);
	if (ia < 0)
		ia = INT32_MIN - ia;
	if (ib < 0)
		ib = INT32_MIN - ib;
	return ia > ib ? (int64_t)ia - ib : (int64_t)ib - ia;
}

static void
test_numbers(void)
{
	/* half: every one of the 65536 values to float and back */
	for (uint32_t u = 0; u < 65536; u++) {
		__half h = __ushort_as_half((unsigned short)u);
		float f = __half2float(h);
		unsigned short back = __half_as_ushort(__float2half_rn(f));
		bool nan = (u & 0x7c00u) == 0x7c00u && (u & 0x3ffu) != 0;
		CHECK(nan ? std::isnan(f) && (back & 0x7e00u) == 0x7e00u : back == u,
		      "half 0x%04x -> %a -> 0x%04x", u, (double)f, back);
	}
	/* rounding: halfway cases go to even, overflow to infinity, below half the smallest
	 * subnormal to zero */
	CHECK(__half_as_ushort(__float2half_rn(1.0f + 0x1p-11f)) == 0x3c00u, "tie to even (down)");
	CHECK(__half_as_ushort(__float2half_rn(1.0f + 3 * 0x1p-11f)) == 0x3c02u,
	      "tie to even (up)");
	CHECK(__half_as_ushort(__float2half_rn(65520.0f)) == 0x7c00u, "65520 rounds to inf");
	CHECK(__half_as_ushort(__float2half_rn(65519.0f)) == 0x7bffu, "65519 to the max");
	CHECK(__half_as_ushort(__float2half_rn(0x1p-25f)) == 0u, "2^-25 ties to zero");
	CHECK(__half_as_ushort(__float2half_rn(0x1.8p-25f)) == 1u, "1.5·2^-25 to the smallest");
	CHECK(__half_as_ushort(__float2half_rn(-0x1.8p-24f)) == 0x8002u, "-1.5·2^-24 ties to even");

	/* expf in a kernel: within the documented 2 ulp, not always exact, deterministic */
	const int n = 20000;
	std::vector<float> x(n), y(n), y2(n);
	for (int i = 0; i < n; i++)
		x[i] = -20.0f + 40.0f * (float)i / n;
	float *dx = dalloc<float>(n), *dy = dalloc<float>(n);
	CK(cudaMemcpy(dx, x.data(), n * 4, cudaMemcpyHostToDevice));
	math_kernel<<<(n + 255) / 256, 256>>>(dx, dy, n);
	CK(cudaMemcpy(y.data(), dy, n * 4, cudaMemcpyDeviceToHost));
	math_kernel<<<(n + 255) / 256, 256>>>(dx, dy, n);
	CK(cudaMemcpy(y2.data(), dy, n * 4, cudaMemcpyDeviceToHost));
	int64_t worst = 0, inexact = 0;
	for (int i = 0; i < n; i++) {
		float exact = (float)exp((double)x[i]); /* the host's, outside a kernel */
		int64_t d = ulp_diff(y[i], exact);
		worst = std::max(worst, d);
		inexact += d != 0;
		CHECK(y[i] == y2[i], "expf(%a) differs between two runs", (double)x[i]);
	}
	CHECK(worst <= 2 && inexact > n / 10, "expf: worst %lld ulp, %lld of %d inexact",
	      (long long)worst, (long long)inexact, n);
	cudaFree(dx), cudaFree(dy);
	passed++;
}

/* ---- streams, events, graphs ---- */

static __global__ void
add_kernel(float *x, float v, int n)
{
	int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
	if (i < n)
		x[i] += v;
}

static void
test_streams(void)
{
	cudaStream_t s;
	float *d = dalloc<float>(4), *pinned = nullptr, h[4] = {1, 2, 3, 4}, r[4];

	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CK(cudaMallocHost(&pinned, 16));
	/* pageable: the source is taken when the call returns */
	CK(cudaMemcpyAsync(d, h, 16, cudaMemcpyHostToDevice, s));
	h[0] = 100;
	CK(cudaStreamSynchronize(s));
	CK(cudaMemcpy(r, d, 16, cudaMemcpyDeviceToHost));
	CHECK(r[0] == 1, "a pageable source is staged at the call: %g", r[0]);
	/* pinned: the copy reads the buffer when it runs, after the host's later write */
	memcpy(pinned, h, 16);
	CK(cudaMemcpyAsync(d, pinned, 16, cudaMemcpyHostToDevice, s));
	pinned[1] = 200;
	CK(cudaStreamSynchronize(s));
	CK(cudaMemcpy(r, d, 16, cudaMemcpyDeviceToHost));
	CHECK(r[1] == 200, "a pinned source is read when the copy runs: %g", r[1]);

	/* in order on a stream; an event after the work */
	cudaEvent_t ev;
	CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
	add_kernel<<<1, 4, 0, s>>>(d, 1.0f, 4);
	add_kernel<<<1, 4, 0, s>>>(d, 10.0f, 4);
	CK(cudaMemcpyAsync(pinned, d, 16, cudaMemcpyDeviceToHost, s));
	CK(cudaEventRecord(ev, s));
	CK(cudaEventSynchronize(ev));
	CHECK(pinned[0] == 111 && pinned[1] == 211, "stream order: %g %g", pinned[0], pinned[1]);

	/* a graph replays its launches with the arguments captured by value */
	cudaGraph_t g, bad;
	cudaGraphExec_t x;
	float v = 1.0f;
	int n = 2;
	CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	add_kernel<<<1, 4, 0, s>>>(d, v, n);
	CK(cudaGetLastError());
	CK(cudaStreamEndCapture(s, &g));
	size_t nodes = 0;
	CK(cudaGraphGetNodes(g, nullptr, &nodes));
	CHECK(nodes == 1, "one node: %zu", nodes);
	CK(cudaGraphInstantiate(&x, g, 0));
	v = 1000.0f, n = 4; /* too late: the graph has 1.0 and 2 */
	CK(cudaGraphLaunch(x, s));
	CK(cudaGraphLaunch(x, s));
	CK(cudaMemcpyAsync(pinned, d, 16, cudaMemcpyDeviceToHost, s));
	CK(cudaStreamSynchronize(s));
	CHECK(pinned[0] == 113 && pinned[1] == 213 && pinned[2] == 14 && pinned[3] == 15,
	      "replays: %g %g %g %g", pinned[0], pinned[1], pinned[2], pinned[3]);

	/* what a capture refuses, and that it invalidates the capture */
	CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	CHECK(cudaStreamSynchronize(s) == cudaErrorStreamCaptureUnsupported, "sync in a capture");
	CHECK(cudaStreamEndCapture(s, &bad) == cudaErrorStreamCaptureInvalidated, "invalidated");
	CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	void *p;
	CHECK(cudaMalloc(&p, 16) == cudaErrorStreamCaptureUnsupported, "cudaMalloc in a capture");
	CHECK(cudaStreamEndCapture(s, &bad) == cudaErrorStreamCaptureInvalidated, "invalidated");
	CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	CHECK(cudaMemcpyAsync(d, h, 16, cudaMemcpyHostToDevice, s) ==
	              cudaErrorStreamCaptureUnsupported,
	      "pageable copy in a capture");
	CHECK(cudaStreamEndCapture(s, &bad) == cudaErrorStreamCaptureInvalidated, "invalidated");
	(void)cudaGetLastError();

	/* the legacy stream waits for a blocking stream's earlier work */
	cudaStream_t b;
	CK(cudaStreamCreate(&b));
	add_kernel<<<1, 4, 0, b>>>(d, 5.0f, 4);
	CK(cudaMemcpy(r, d, 16, cudaMemcpyDeviceToHost));
	CHECK(r[3] == 20, "legacy after blocking: %g", r[3]);

	CK(cudaGraphExecDestroy(x));
	CK(cudaGraphDestroy(g));
	CK(cudaEventDestroy(ev));
	CK(cudaStreamDestroy(s));
	CK(cudaStreamDestroy(b));
	CK(cudaFreeHost(pinned));
	CK(cudaFree(d));
	passed++;
}

/* ---- memory ---- */

static void
test_memory(void)
{
	size_t fr, tot, fr2, tot2;
	void *a = nullptr, *b = nullptr;

	CK(cudaMemGetInfo(&fr, &tot));
	CHECK(tot == 256u << 20 && fr == tot, "ORCH_CUDA_SIM_VRAM=256M: %zu of %zu free", fr, tot);
	CK(cudaMalloc(&a, 100u << 20));
	CK(cudaMemGetInfo(&fr2, &tot2));
	CHECK(fr2 == fr - (100u << 20), "100 MiB taken: %zu free", fr2);
	CHECK(cudaMalloc(&b, 200u << 20) == cudaErrorMemoryAllocation && b == nullptr,
	      "200 MiB more do not fit");
	CHECK(cudaGetLastError() == cudaErrorMemoryAllocation, "the error is the last error");
	CK(cudaMalloc(&b, 150u << 20));
	CK(cudaFree(a));
	CK(cudaFree(b));
	CK(cudaMemGetInfo(&fr2, &tot2));
	CHECK(fr2 == tot, "all free again: %zu", fr2);
	CHECK(cudaFree((char *)b + 256) == cudaErrorInvalidValue, "not an allocation");
	struct cudaPointerAttributes pa;
	CK(cudaMalloc(&a, 64));
	CK(cudaPointerGetAttributes(&pa, a));
	CHECK(pa.type == cudaMemoryTypeDevice && pa.device == 0, "device pointer");
	int host;
	CK(cudaPointerGetAttributes(&pa, &host));
	CHECK(pa.type == cudaMemoryTypeUnregistered, "host pointer");
	/* a copy past an allocation's end is refused */
	char buf[128];
	CHECK(cudaMemcpy(buf, a, 128, cudaMemcpyDeviceToHost) == cudaErrorInvalidValue,
	      "64-byte allocation, 128-byte copy");
	(void)cudaGetLastError();
	CK(cudaFree(a));
	passed++;
}

/* ---- cuBLAS and CUB ---- */

static void
test_libs(void)
{
	const int m = 37, n = 5, k = 70;
	std::vector<float> A((size_t)k * m), B((size_t)k * n), C((size_t)m * n);
	for (size_t i = 0; i < A.size(); i++)
		A[i] = (float)((int)(i * 7919 % 201) - 100) / 64.0f;
	for (size_t i = 0; i < B.size(); i++)
		B[i] = (float)((int)(i * 104729 % 173) - 86) / 32.0f;
	float *dA = dalloc<float>(A.size()), *dB = dalloc<float>(B.size()),
	      *dC = dalloc<float>(C.size());
	CK(cudaMemcpy(dA, A.data(), A.size() * 4, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(dB, B.data(), B.size() * 4, cudaMemcpyHostToDevice));
	cublasHandle_t h;
	CHECK(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS, "cublasCreate");
	const float one = 1.0f, zero = 0.0f;
	/* C (m × n) = Aᵀ · B, A stored k × m, column-major */
	CHECK(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &one, dA, CUDA_R_32F, k, dB,
	                   CUDA_R_32F, k, &zero, dC, CUDA_R_32F, m, CUBLAS_COMPUTE_32F,
	                   CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS,
	      "cublasGemmEx");
	CK(cudaMemcpy(C.data(), dC, C.size() * 4, cudaMemcpyDeviceToHost));
	for (int j = 0; j < n; j++)
		for (int i = 0; i < m; i++) {
			double want = 0;
			for (int l = 0; l < k; l++)
				want += (double)A[(size_t)i * k + l] * B[(size_t)j * k + l];
			CHECK(std::fabs(C[(size_t)j * m + i] - want) <=
			              1e-4 * (1 + std::fabs(want)),
			      "C[%d][%d] %g, want %g", i, j, C[(size_t)j * m + i], want);
		}
	CHECK(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &one, dA, CUDA_R_32F, k - 1, dB,
	                   CUDA_R_32F, k, &zero, dC, CUDA_R_32F, m, CUBLAS_COMPUTE_32F,
	                   CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_INVALID_VALUE,
	      "lda below k");
	cublasDestroy(h);

	/* a stable descending segmented sort, keys ordered by their bits as CUB's radix sort */
	const int items = 12, segs = 2;
	float keys[items] = {0.5f, -0.0f, 0.0f,  3.0f, 0.5f, -1.0f,
	                     2.0f, 2.0f,  -3.0f, 0.0f, 1.0f, -0.0f};
	int vals[items];
	uint32_t off[segs + 1] = {0, 7, 12};
	for (int i = 0; i < items; i++)
		vals[i] = i;
	float *dk = dalloc<float>(2 * items);
	int *dv = dalloc<int>(2 * items);
	uint32_t *doff = dalloc<uint32_t>(segs + 1);
	CK(cudaMemcpy(dk, keys, sizeof(keys), cudaMemcpyHostToDevice));
	CK(cudaMemcpy(dv, vals, sizeof(vals), cudaMemcpyHostToDevice));
	CK(cudaMemcpy(doff, off, sizeof(off), cudaMemcpyHostToDevice));
	size_t tmp_bytes = 0;
	CK(cub::DeviceSegmentedSort::StableSortPairsDescending(
	        nullptr, tmp_bytes, (const float *)nullptr, (float *)nullptr, (const int *)nullptr,
	        (int *)nullptr, items, segs, (const uint32_t *)nullptr, (const uint32_t *)nullptr));
	void *tmp = dalloc<char>(tmp_bytes);
	CK(cub::DeviceSegmentedSort::StableSortPairsDescending(
	        tmp, tmp_bytes, dk, dk + items, dv, dv + items, items, segs, doff, doff + 1));
	float ko[items];
	int vo[items];
	CK(cudaMemcpy(ko, dk + items, sizeof(ko), cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(vo, dv + items, sizeof(vo), cudaMemcpyDeviceToHost));
	const int want[items] = {3, 6, 0, 4, 2, 1, 5, 7, 10, 9, 11, 8};
	for (int i = 0; i < items; i++)
		CHECK(vo[i] == want[i], "sorted %d: value %d (key %g), want %d", i, vo[i], ko[i],
		      want[i]);
	cudaFree(dA), cudaFree(dB), cudaFree(dC), cudaFree(dk), cudaFree(dv), cudaFree(doff),
	        cudaFree(tmp);
	passed++;
}

/* ---- the checks: each fault kills a child with its diagnosis ---- */

static __global__ void
oob_kernel(const float *x, float *y, int n)
{
	int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
	if (i <= n) /* one too many */
		y[i < n ? i : 0] = x[i];
}

static __global__ void
misaligned_kernel(const float *x, float *y)
{
	float4 v = *(const float4 *)(x + 1); /* a 16-byte load 4 bytes off */
	y[0] = v.x + v.y + v.z + v.w;
}

static __global__ void
race_kernel(float *y)
{
	__shared__ float part[64];
	part[threadIdx.x] = (float)threadIdx.x;
	__syncthreads();
	part[threadIdx.x] *= 2.0f;
	/* missing __syncthreads: thread 0 reads what the others are still doubling */
	if (threadIdx.x == 0) {
		float s = 0;
		for (int i = 0; i < 64; i++)
			s += part[i];
		y[0] = s;
	}
}

static __global__ void
uninit_kernel(float *y)
{
	__shared__ float part[64];
	if (threadIdx.x < 32)
		part[threadIdx.x] = 1.0f;
	__syncthreads();
	y[threadIdx.x] = part[threadIdx.x]; /* 32..63 never written */
}

static __global__ void
shared_oob_kernel(float *y)
{
	__shared__ float a[32];
	__shared__ float b[32];
	a[threadIdx.x] = 1.0f;
	b[threadIdx.x] = 2.0f;
	__syncthreads();
	y[threadIdx.x] = a[threadIdx.x + 1]; /* a[32]: past the end */
}

static __global__ void
exited_lane_kernel(float *y)
{
	if (threadIdx.x >= 16)
		return;
	y[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1.0f, 1);
}

static __global__ void
mask_kernel(float *y)
{
	float v = __shfl_xor_sync(0x0000ffffu, (float)threadIdx.x, 16); /* lanes 16-31 read */
	y[threadIdx.x] = v;
}

static __global__ void
deadlock_kernel(float *y)
{
	if (threadIdx.x < 16) /* the other half of the warp never comes */
		y[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1.0f, 1);
	else
		__syncthreads();
}

static __global__ void
divergent_kernel(float *y)
{
	float v;
	if (threadIdx.x % 2)
		v = __shfl_xor_sync(0xffffffffu, 1.0f, 1);
	else
		v = (float)__ballot_sync(0xffffffffu, 1);
	y[threadIdx.x] = v;
}

static __global__ void
host_mem_kernel(float *y)
{
	y[threadIdx.x] = 1.0f;
}

static __global__ void
overflow_kernel(float *y, int n)
{
	int big = n * (int)(threadIdx.x + 1); /* int overflow for n near INT_MAX */
	y[threadIdx.x] = (float)(big > 0);
}

/* Run @f in a child; it must die with @want in its stderr. */
static void
expect_fault(const char *name, void (*f)(void), const char *want, const char *want2)
{
	int pipefd[2];
	fflush(stdout);
	fflush(stderr);
	if (pipe(pipefd) != 0) {
		failed++;
		return;
	}
	pid_t pid = fork();
	if (pid == 0) {
		dup2(pipefd[1], 2);
		close(pipefd[0]);
		f();
		cudaDeviceSynchronize();
		_exit(0);
	}
	close(pipefd[1]);
	std::string err;
	char buf[4096];
	ssize_t got;
	while ((got = read(pipefd[0], buf, sizeof(buf))) > 0)
		err.append(buf, (size_t)got);
	close(pipefd[0]);
	int st = 0;
	waitpid(pid, &st, 0);
	bool died = WIFSIGNALED(st) || (WIFEXITED(st) && WEXITSTATUS(st) != 0);
	bool said = err.find(want) != std::string::npos &&
	            (want2 == nullptr || err.find(want2) != std::string::npos);
	if (!died || !said) {
		fprintf(stderr, "FAIL %s: %s, stderr:\n%s\n", name,
		        !died ? "the child did not fail" : "not the expected diagnosis",
		        err.c_str());
		failed++;
		return;
	}
	const char *line = strstr(err.c_str(), "cusim:");
	printf("%-22s %.*s\n", name, (int)strcspn(line ? line : "", "\n"), line ? line : "");
	passed++;
}

static void
f_oob(void)
{
	float *x = dalloc<float>(100), *y = dalloc<float>(100);
	oob_kernel<<<1, 128>>>(x, y, 100);
}

static void
f_misaligned(void)
{
	float *x = dalloc<float>(16), *y = dalloc<float>(1);
	misaligned_kernel<<<1, 1>>>(x, y);
}

static void
f_race(void)
{
	float *y = dalloc<float>(1);
	race_kernel<<<1, 64>>>(y);
}

static void
f_uninit(void)
{
	float *y = dalloc<float>(64);
	uninit_kernel<<<1, 64>>>(y);
}

static void
f_shared_oob(void)
{
	float *y = dalloc<float>(32);
	shared_oob_kernel<<<1, 32>>>(y);
}

static void
f_exited(void)
{
	float *y = dalloc<float>(32);
	exited_lane_kernel<<<1, 32>>>(y);
}

static void
f_mask(void)
{
	float *y = dalloc<float>(32);
	mask_kernel<<<1, 32>>>(y);
}

static void
f_deadlock(void)
{
	float *y = dalloc<float>(32);
	deadlock_kernel<<<1, 32>>>(y);
}

static void
f_divergent(void)
{
	float *y = dalloc<float>(32);
	divergent_kernel<<<1, 32>>>(y);
}

static void
f_host_mem(void)
{
	float *host = new float[32]; /* pageable host memory */
	host_mem_kernel<<<1, 32>>>(host);
}

static void
f_use_after_free(void)
{
	cudaStream_t s;
	float *y = dalloc<float>(32);
	cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
	host_mem_kernel<<<1, 32, 0, s>>>(y);
	cudaFree(y);              /* does not wait for the launch */
	cudaStreamSynchronize(s); /* which runs now, on freed memory */
}

static void
f_pinned_freed(void)
{
	cudaStream_t s;
	float *d = dalloc<float>(32), *p = nullptr;
	cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
	cudaMallocHost(&p, 128);
	cudaMemcpyAsync(d, p, 128, cudaMemcpyHostToDevice, s);
	cudaFreeHost(p);
	cudaStreamSynchronize(s);
}

static void
f_overflow(void)
{
	float *y = dalloc<float>(32);
	overflow_kernel<<<1, 32>>>(y, 0x7fffff00);
}

/*
 * The checking build instruments every access of the kernels (check.cc); the
 * AddressSanitizer build instruments them for ASan instead, which sees device
 * memory only through the poisoned gaps and freed ranges, and UBSan adds the
 * alignment and overflow checks. The collectives' and the runtime's checks are in both.
 */
static void
test_faults(void)
{
#if defined(__SANITIZE_ADDRESS__)
	expect_fault("out of bounds", f_oob, "AddressSanitizer",
	             "oob_kernel, block (0,0,0) of (1,1,1), thread (100,0,0)");
	expect_fault("misaligned", f_misaligned, "misaligned address", "misaligned_kernel");
	expect_fault("shared out of bounds", f_shared_oob, "out of bounds", "thread (31,0,0)");
	expect_fault("use after free", f_use_after_free, "AddressSanitizer", "host_mem_kernel");
	expect_fault("int overflow", f_overflow, "signed integer overflow", "overflow_kernel");
	(void)f_race, (void)f_uninit, (void)f_host_mem;
#else
	expect_fault("out of bounds", f_oob, "not device memory",
	             "oob_kernel, block (0,0,0) of (1,1,1), thread (100,0,0)");
	expect_fault("misaligned", f_misaligned, "misaligned 16-byte load", "misaligned_kernel");
	expect_fault("race", f_race, "shared-memory race", "__shared__ part");
	expect_fault("uninitialized", f_uninit, "which no thread of this block has written",
	             "__shared__ part");
	expect_fault("shared out of bounds", f_shared_oob, "outside the block's __shared__",
	             "thread (31,0,0)");
	expect_fault("host memory", f_host_mem, "not device memory", "host_mem_kernel");
	expect_fault("use after free", f_use_after_free, "FREED", "use after cudaFree");
	(void)f_overflow;
#endif
	expect_fault("exited lane", f_exited, "exits while lanes of its warp wait", "exited_lane");
	expect_fault("mask", f_mask, "reads a lane its mask does not name", "mask_kernel");
	expect_fault("deadlock", f_deadlock, "wait for this one at a warp collective",
	             "deadlock_kernel");
	expect_fault("divergent collective", f_divergent, "waits for this one at __ballot_sync",
	             "(deadlock)");
	expect_fault("pinned freed", f_pinned_freed, "pinned host buffer was freed", nullptr);
}

/* A fault in sticky mode (ORCH_CUDA_SIM_ON_FAULT=sticky, read at start: a new process) is
 * the context's error, as a GPU's illegal address is; the child's exit status says. */
static int
sticky_child(void)
{
	int rc = 0;
	void *p;

	f_pinned_freed(); /* a fault the runtime finds, in either build */
	rc |= cudaDeviceSynchronize() != cudaErrorIllegalAddress;
	rc |= cudaGetLastError() != cudaErrorIllegalAddress;
	rc |= cudaMalloc(&p, 16) != cudaErrorIllegalAddress;
	return rc;
}

static void
test_sticky(void)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		setenv("ORCH_CUDA_SIM_ON_FAULT", "sticky", 1);
		if (freopen("/dev/null", "w", stderr) == nullptr)
			_exit(2);
		execl("/proc/self/exe", "sim_test", "sticky", (char *)nullptr);
		_exit(3);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "sticky mode: status %d", st);
	passed++;
}

int
main(int argc, char **argv)
{
	setenv("ORCH_CUDA_SIM_VRAM", "256M", 1);
	if (argc > 1 && strcmp(argv[1], "sticky") == 0)
		return sticky_child();
	int count = 0;
	if (cudaGetDeviceCount(&count) != cudaSuccess || count < 1) {
		printf("SKIP: no simulated device\n");
		return 77;
	}
	test_language();
	test_numbers();
	test_streams();
	test_memory();
	test_libs();
	test_sticky();
	test_faults();
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
