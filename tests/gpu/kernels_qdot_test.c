/*
 * kernels_qdot_test.c - the integer-dot mat-vec (cuk_quant_act, cuk_mmvq)
 * on the device against the same code run on the host (qdot_emul.cu, which
 * cuda_qdot_test checks against the CPU backend without a GPU), on fresh
 * random inputs, outputs poisoned (NaN) before each run:
 * - activations quantized bit for bit as the emulation (and so as
 *   cpu_quant_q8b / cpu_quant_q8k), a zero block included;
 * - mat-vecs at B = 1, 3 and 8 from row 2 with a bias: bit for bit the
 *   emulation's (the same fp32 operations in the same order, the warp's
 *   butterfly sum included), within 1e-5 of cpu_qdot_scalar, and a row's
 *   result the same bits whatever B; 3 rows quantized (a partly used
 *   block of warps) give the 8-row quantization's first 3;
 * - misaligned K-quant rows are refused (cuk_mmvq_ok).
 * The test exits 77 where no CUDA device exists.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "engine/cpu/cpu.h"
#include "gguf/ggml_type.h"
#include "kernels.h"
#include "kernels_util.h"
#include "t.h"
#include "unit/cuda/qdot_emul.h"

static const uint32_t types[] = {GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q5_0, GGML_TYPE_Q5_1,
                                 GGML_TYPE_Q8_0, GGML_TYPE_Q4_K, GGML_TYPE_Q5_K, GGML_TYPE_Q6_K};

/* Whether two quantized rows hold the same scales, sums and codes (padding aside). */
static bool
same_act(enum cuk_act fmt, uint32_t n, const uint8_t *a, const uint8_t *b)
{
	if (fmt == CUK_ACT_Q8)
		return memcmp(a, b, 4ull * (n / 32)) == 0 &&
		       memcmp(a + cuk_q8_codes_off(n), b + cuk_q8_codes_off(n), 36ull * (n / 32)) ==
		               0;
	return memcmp(a, b, 4ull * (n / 256)) == 0 &&
	       memcmp(a + cuk_q8k_bsums_off(n), b + cuk_q8k_bsums_off(n), 288ull * (n / 256)) == 0;
}

/* One type at one shape; the relative error against cpu_qdot_scalar into *@worst. */
static void
qdot_case(uint32_t type, uint32_t rows, uint32_t ne0, double *worst)
{
	enum cuk_act fmt = cuk_act_of(type);
	uint64_t xq_ld = cuk_act_row_bytes(fmt, ne0), rb = 0;
	uint32_t R = rows - 2;
	uint64_t cpu_row = fmt == CUK_ACT_Q8K ? ne0 / 256 * sizeof(struct cpu_q8k)
	                                      : ne0 / 32 * sizeof(struct cpu_q8b);
	struct cuk_mat w;
	float *deq = malloc((uint64_t)rows * ne0 * 4), *x = malloc(8ull * ne0 * 4);
	float *bias = malloc(rows * 4), *y = malloc(8ull * rows * 4), *em = malloc(8ull * rows * 4);
	float y1[64];
	double *ref = malloc(8ull * rows * 8);
	uint8_t *hq = malloc(8 * xq_ld), *eq = malloc(8 * xq_ld), *cq = malloc(8 * cpu_row);
	void *d = make_mat(type, rows, ne0, &w, deq), *dxq = dev(8 * xq_ld);
	float *dx = dev(8ull * ne0 * 4), *dy = dev(8ull * rows * 4), *db = dev(rows * 4);
	uint8_t *hw = malloc((uint64_t)rows * w.row_bytes);

	ggml_row_bytes(type, ne0, &rb);
	fill(x, 8ull * ne0, 1.0f);
	memset(x + ne0, 0, 256 * 4); /* a zero block and super-block: scale 0, codes 0 */
	x[3 * ne0 + 7] = 60.0f;
	fill(bias, rows, 0.5f);
	CK(cudaMemcpy(dx, x, 8ull * ne0 * 4, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(db, bias, rows * 4, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(hw, w.data, (uint64_t)rows * w.row_bytes, cudaMemcpyDeviceToHost));
	CK(cuk_quant_act(fmt, dx, ne0, ne0, 3, dxq, xq_ld, 0)); /* T = 3 first, then all 8 */
	CK(cudaMemcpy(hq, dxq, 3 * xq_ld, cudaMemcpyDeviceToHost));
	CK(cuk_quant_act(fmt, dx, ne0, ne0, 8, dxq, xq_ld, 0));
	CK(cudaMemcpy(eq, dxq, 3 * xq_ld, cudaMemcpyDeviceToHost));
	for (uint32_t b = 0; b < 3; b++)
		if (!same_act(fmt, ne0, hq + b * xq_ld, eq + b * xq_ld))
			T_FAIL_("%s %ux%u: row %u quantized differently at T = 3 and T = 8",
			        ggml_type_get(type)->name, rows, ne0, b);
	CK(cudaMemcpy(hq, dxq, 8 * xq_ld, cudaMemcpyDeviceToHost));
	for (uint32_t b = 0; b < 8; b++) {
		T_TRUE(qdot_emul_quant(fmt, x + (uint64_t)b * ne0, ne0, eq + b * xq_ld));
		if (!same_act(fmt, ne0, hq + b * xq_ld, eq + b * xq_ld))
			T_FAIL_("%s %ux%u: activation row %u differs from the emulation",
			        ggml_type_get(type)->name, rows, ne0, b);
		if (fmt == CUK_ACT_Q8K)
			cpu_quant_q8k(x + (uint64_t)b * ne0,
			              (struct cpu_q8k *)(void *)cq + b * (ne0 / 256), ne0);
		else
			cpu_quant_q8b(x + (uint64_t)b * ne0,
			              (struct cpu_q8b *)(void *)cq + b * (ne0 / 32), ne0);
	}
	for (uint32_t i = 0; i < R; i++) {
		float e8[8];
		T_TRUE(qdot_emul_row(type, hw + (i + 2) * rb, ne0, eq, xq_ld, 8, e8));
		for (uint32_t b = 0; b < 8; b++) {
			em[b * R + i] = e8[b] + bias[i + 2];
			ref[b * R + i] = (double)(cpu_qdot_scalar(type, hw + (i + 2) * rb,
			                                          cq + b * cpu_row, ne0) +
			                          bias[i + 2]);
		}
	}
	static const uint32_t Bs[] = {1, 3, 8};
	for (uint32_t bi = 0; bi < 3; bi++) {
		uint32_t B = Bs[bi];
		CK(cudaMemset(dy, 0xff, 8ull * rows * 4));
		CK(cuk_mmvq(&w, 2, R, dxq, xq_ld, B, dy, R, db, 0));
		CK(cudaMemcpy(y, dy, (uint64_t)B * R * 4, cudaMemcpyDeviceToHost));
		double e = rel_err(y, ref, (uint64_t)B * R);
		*worst = !(e <= *worst) ? e : *worst;
		if (memcmp(y, em, (uint64_t)B * R * 4) != 0)
			T_FAIL_("%s %ux%u B %u: results differ from the emulation's bits",
			        ggml_type_get(type)->name, rows, ne0, B);
		if (B == 1)
			memcpy(y1, y, (R < 64 ? R : 64) * 4);
		else if (memcmp(y1, y, (R < 64 ? R : 64) * 4) != 0)
			T_FAIL_("%s: row results depend on the batch size",
			        ggml_type_get(type)->name);
	}
	cudaFree(d), cudaFree(dxq), cudaFree(dx), cudaFree(dy), cudaFree(db);
	free(deq), free(x), free(bias), free(y), free(em), free(ref), free(hq), free(eq), free(cq),
	        free(hw);
}

static void
test_mmvq(void)
{
	static const uint32_t shapes[][2] = {{7, 256}, {35, 896}, {5, 4864}, {66, 3072}, {4, 8192}};

	for (size_t ti = 0; ti < sizeof(types) / sizeof(types[0]); ti++) {
		uint32_t type = types[ti];
		double worst = 0;
		for (size_t si = 0; si < sizeof(shapes) / sizeof(shapes[0]); si++) {
			if (shapes[si][1] % ggml_type_get(type)->block_size != 0 ||
			    (kt_quick && si > 1 && si < 4))
				continue;
			qdot_case(type, shapes[si][0], shapes[si][1], &worst);
		}
		printf("%-5s mmvq: activations and sums bit for bit the emulation's, rel err vs "
		       "cpu_qdot_scalar %.2e (bound 1e-5)\n",
		       ggml_type_get(type)->name, worst);
		T_TRUE(worst <= 1e-5);
	}
}

static void
test_refused(void)
{
	struct cuk_mat w;
	float *deq = malloc(4ull * 256 * 4);
	void *d = make_mat(GGML_TYPE_Q4_K, 4, 256, &w, deq), *dxq = dev(4096);
	float *dy = dev(64);

	T_TRUE(cuk_mmvq_ok(&w));
	w.data = (const uint8_t *)w.data + 2; /* rows no longer 16-byte aligned */
	T_TRUE(!cuk_mmvq_ok(&w));
	T_TRUE(cuk_mmvq(&w, 0, 1, dxq, cuk_q8k_row_bytes(256), 1, dy, 1, NULL, 0) ==
	       cudaErrorInvalidValue);
	w.type = GGML_TYPE_Q2_K; /* a type without an integer dot here */
	T_TRUE(!cuk_mmvq_ok(&w));
	cudaGetLastError();
	cudaFree(d), cudaFree(dxq), cudaFree(dy);
	free(deq);
}

int
main(void)
{
	int rc = kt_start();

	if (rc >= 0)
		return rc;
	T_RUN(test_mmvq);
	T_RUN(test_refused);
	return t_done();
}
