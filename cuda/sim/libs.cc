/*
 * libs.cc - cuBLAS's cublasGemmEx and CUB's segmented sort on the CPU, as
 * stream operations with those libraries' contracts.
 *
 * Design notes
 * - Both check every device range they will touch when called (a range
 *   outside its allocation is a fault: on a GPU the library's kernel would
 *   read or write out of bounds) and again when they run (cudaFree does not
 *   wait for them).
 * - The GEMM sums in F32 in eight interleaved partial sums (products of
 *   F16 and BF16 inputs are exact in F32), not in k order: cuBLAS promises
 *   no order either, so a test that needs the CPU's bits from a GEMM is
 *   wrong on both. (Vectorized: a prompt's products are most of the
 *   simulated device's time otherwise.)
 * - CUB's radix sort orders keys by their bits; so does this one.
 */
#include <algorithm>
#include <cub/device/device_segmented_sort.cuh>
#include <numeric>
#include <stdio.h>
#include <string.h>
#include <vector>

#include <cublas_v2.h>

#include "cusim/cost.h"
#include "exec.h"

struct cublasContext {
	cudaStream_t st;
	void *ws;
	size_t ws_bytes;
};

namespace cusim
{
namespace
{

/* Whether [p, p + n) lies in one live device allocation; a fault naming @who if not. */
bool
device_range(const void *p, size_t n, const char *who, const char *what)
{
	if (n == 0 || classify(p, n) == MEM_DEVICE)
		return true;
	fault(cudaErrorIllegalAddress, "%s: %s [%p, +%zu) is not inside one live device allocation",
	      who, what, p, n);
	return false;
}

float
load(const void *p, cudaDataType_t t, size_t i)
{
	switch (t) {
	case CUDA_R_32F: {
		float f;
		memcpy(&f, (const uint8_t *)p + 4 * i, 4);
		return f;
	}
	case CUDA_R_16F: {
		uint16_t h;
		memcpy(&h, (const uint8_t *)p + 2 * i, 2);
		return f16_to_f32(h);
	}
	case CUDA_R_16BF: {
		uint16_t h;
		memcpy(&h, (const uint8_t *)p + 2 * i, 2);
		return bits_f32((uint32_t)h << 16);
	}
	default:
		return 0.0f;
	}
}

size_t
elem_bytes(cudaDataType_t t)
{
	return t == CUDA_R_32F ? 4 : t == CUDA_R_16F || t == CUDA_R_16BF ? 2 : 0;
}

typedef float v8sf __attribute__((vector_size(32)));

/*
 * @a (@k8 floats) dotted with four columns of @b (@k8 floats apart) into
 * @out: eight interleaved float sums, added in a fixed order at the end.
 */
__attribute__((target_clones("avx2", "default"))) void
dot4(const float *a, const float *b, size_t k8, float *out)
{
	v8sf acc[4] = {};

	for (size_t l = 0; l < k8; l += 8) {
		v8sf va;
		memcpy(&va, a + l, sizeof(va));
		for (int q = 0; q < 4; q++) {
			v8sf vb;
			memcpy(&vb, b + (size_t)q * k8 + l, sizeof(vb));
			acc[q] += va * vb;
		}
	}
	for (int q = 0; q < 4; q++)
		out[q] = ((acc[q][0] + acc[q][1]) + (acc[q][2] + acc[q][3])) +
		         ((acc[q][4] + acc[q][5]) + (acc[q][6] + acc[q][7]));
}

struct gemm_op final : op {
	cublasOperation_t ta, tb;
	int m, n, k, lda, ldb, ldc;
	float alpha, beta;
	const void *A, *B;
	void *C;
	cudaDataType_t at, bt, ct;
	size_t a_bytes, b_bytes, c_bytes;

	/* row @i of op(A), or column @j of op(B) (@b), as floats */
	void fetch(bool b, int idx, float *out) const
	{
		const void *base = b ? B : A;
		cudaDataType_t t = b ? bt : at;
		bool contiguous = b ? tb == CUBLAS_OP_N : ta == CUBLAS_OP_T;
		int ld = b ? ldb : lda;
		for (int l = 0; l < k; l++)
			out[l] = load(base, t,
			              contiguous ? (size_t)l + (size_t)idx * ld
			                         : (size_t)idx + (size_t)l * ld);
	}
	void run() override
	{
		if (cost_skip)
			return;
		if (!device_range(A, a_bytes, "cublasGemmEx", "A") ||
		    !device_range(B, b_bytes, "cublasGemmEx", "B") ||
		    !device_range(C, c_bytes, "cublasGemmEx", "C"))
			return;
		size_t k8 = ((size_t)k + 7) / 8 * 8; /* rows padded with zeros to whole vectors */
		std::vector<float> bcols(((size_t)n + 3) * k8, 0.0f), arow(k8, 0.0f);
		for (int j = 0; j < n; j++)
			fetch(true, j, &bcols[(size_t)j * k8]);
		for (int i = 0; i < m; i++) {
			fetch(false, i, arow.data());
			for (int j = 0; j < n; j += 4) {
				float acc[4];
				dot4(arow.data(), &bcols[(size_t)j * k8], k8, acc);
				for (int q = 0; q < 4 && j + q < n; q++)
					store(i, j + q, acc[q]);
			}
		}
		uint64_t flops = 2ull * (uint64_t)m * (uint64_t)n * (uint64_t)k;
		bool f32 = at == CUDA_R_32F || bt == CUDA_R_32F;
		cost_op("cublasGemmEx", CUSIM_COST_LIBRARY, a_bytes + b_bytes + (beta != 0.0f ? c_bytes : 0),
		        c_bytes, 0, 0, f32 ? 0 : flops, f32 ? flops : 0);
	}
	void store(int i, int j, float acc)
	{
		size_t ci = (size_t)i + (size_t)j * ldc;
		float c = beta != 0.0f ? load(C, ct, ci) : 0.0f;
		float v = alpha * acc + (beta != 0.0f ? beta * c : 0.0f);
		if (ct == CUDA_R_32F) {
			memcpy((uint8_t *)C + 4 * ci, &v, 4);
			return;
		}
		uint16_t h =
		        ct == CUDA_R_16F
		                ? f32_to_f16(v)
		                : (uint16_t)((f32_bits(v) + 0x7fffu + ((f32_bits(v) >> 16) & 1u)) >>
		                             16);
		memcpy((uint8_t *)C + 2 * ci, &h, 2);
	}
	op *clone() const override
	{
		return new gemm_op(*this);
	}
	const char *what() const override
	{
		return "cublasGemmEx";
	}
};

struct sort_op final : op {
	const void *keys_in, *vals_in, *begin, *end;
	void *keys_out, *vals_out;
	sort_key kind;
	size_t val_bytes, off_bytes;
	int num_items, num_segments;
	bool descending;

	uint64_t key_at(int i) const
	{
		uint32_t u;
		memcpy(&u, (const uint8_t *)keys_in + 4 * (size_t)i, 4);
		switch (kind) {
		case SORT_F32:
			return u & 0x80000000u ? ~u & 0xffffffffu : u | 0x80000000u;
		case SORT_I32:
			return u ^ 0x80000000u;
		case SORT_U32:
			return u;
		}
		return u;
	}
	int64_t offset(const void *base, int s) const
	{
		if (off_bytes == 8) {
			int64_t v;
			memcpy(&v, (const uint8_t *)base + 8 * (size_t)s, 8);
			return v;
		}
		int32_t v;
		memcpy(&v, (const uint8_t *)base + 4 * (size_t)s, 4);
		return off_bytes == 4 ? (int64_t)(uint32_t)v : v;
	}
	void run() override
	{
		const char *who = "cub::DeviceSegmentedSort";
		size_t items = (size_t)num_items;
		if (cost_skip)
			return;
		if (!device_range(keys_in, 4 * items, who, "keys in") ||
		    !device_range(keys_out, 4 * items, who, "keys out") ||
		    !device_range(vals_in, val_bytes * items, who, "values in") ||
		    !device_range(vals_out, val_bytes * items, who, "values out") ||
		    !device_range(begin, off_bytes * (size_t)num_segments, who, "begin offsets") ||
		    !device_range(end, off_bytes * (size_t)num_segments, who, "end offsets"))
			return;
		std::vector<int> idx;
		for (int s = 0; s < num_segments; s++) {
			int64_t b = offset(begin, s), e = offset(end, s);
			if (b < 0 || e > num_items || b > e) {
				fault(cudaErrorIllegalAddress,
				      "%s: segment %d is [%lld, %lld) of %d items", who, s,
				      (long long)b, (long long)e, num_items);
				return;
			}
			idx.resize((size_t)(e - b));
			std::iota(idx.begin(), idx.end(), (int)b);
			std::stable_sort(idx.begin(), idx.end(), [this](int x, int y) {
				uint64_t kx = key_at(x), ky = key_at(y);
				return descending ? kx > ky : kx < ky;
			});
			std::vector<uint8_t> ko(4 * idx.size()), vo(val_bytes * idx.size());
			for (size_t i = 0; i < idx.size(); i++) {
				memcpy(&ko[4 * i], (const uint8_t *)keys_in + 4 * (size_t)idx[i],
				       4);
				memcpy(&vo[val_bytes * i],
				       (const uint8_t *)vals_in + val_bytes * (size_t)idx[i],
				       val_bytes);
			}
			memcpy((uint8_t *)keys_out + 4 * (size_t)b, ko.data(), ko.size());
			memcpy((uint8_t *)vals_out + val_bytes * (size_t)b, vo.data(), vo.size());
		}
		uint64_t bytes = (4 + val_bytes) * items, offs = 2 * off_bytes * (size_t)num_segments;
		cost_op(who, CUSIM_COST_LIBRARY, bytes + offs, bytes, 0, 0, 0, 0);
	}
	op *clone() const override
	{
		return new sort_op(*this);
	}
	const char *what() const override
	{
		return "cub::DeviceSegmentedSort";
	}
};

} // namespace

cudaError_t
segmented_sort(void *temp, size_t *temp_bytes, const void *keys_in, void *keys_out, sort_key kind,
               const void *vals_in, void *vals_out, size_t val_bytes, int num_items,
               int num_segments, const void *begin, const void *end, size_t offset_bytes,
               bool descending, cudaStream_t st)
{
	api_lock l;
	size_t need = 256 + (size_t)(num_items > 0 ? num_items : 0) * 8 +
	              (size_t)(num_segments > 0 ? num_segments : 0) * 16;

	if (temp == NULL) {
		*temp_bytes = need;
		return cudaSuccess;
	}
	if (num_items < 0 || num_segments < 0 || *temp_bytes < need || offset_bytes > 8)
		return set_error(cudaErrorInvalidValue);
	if (!device_range(temp, need, "cub::DeviceSegmentedSort", "temporary storage"))
		return set_error(cudaErrorIllegalAddress);
	if (num_items == 0 || num_segments == 0)
		return cudaSuccess;
	sort_op *o = new sort_op();
	o->keys_in = keys_in;
	o->keys_out = keys_out;
	o->vals_in = vals_in;
	o->vals_out = vals_out;
	o->begin = begin;
	o->end = end;
	o->kind = kind;
	o->val_bytes = val_bytes;
	o->off_bytes = offset_bytes;
	o->num_items = num_items;
	o->num_segments = num_segments;
	o->descending = descending;
	cudaError_t e = enqueue(st, o);
	return e != cudaSuccess ? set_error(e) : cudaSuccess;
}

} // namespace cusim

using namespace cusim;

extern "C" cublasStatus_t
cublasCreate(cublasHandle_t *h)
{
	if (h == NULL)
		return CUBLAS_STATUS_INVALID_VALUE;
	*h = new cublasContext();
	return CUBLAS_STATUS_SUCCESS;
}

extern "C" cublasStatus_t
cublasDestroy(cublasHandle_t h)
{
	delete h;
	return CUBLAS_STATUS_SUCCESS;
}

extern "C" cublasStatus_t
cublasSetStream(cublasHandle_t h, cudaStream_t st)
{
	if (h == NULL)
		return CUBLAS_STATUS_NOT_INITIALIZED;
	h->st = st;
	return CUBLAS_STATUS_SUCCESS;
}

extern "C" cublasStatus_t
cublasSetWorkspace(cublasHandle_t h, void *ws, size_t bytes)
{
	if (h == NULL)
		return CUBLAS_STATUS_NOT_INITIALIZED;
	if (bytes > 0 && classify(ws, bytes) != MEM_DEVICE)
		return CUBLAS_STATUS_INVALID_VALUE;
	h->ws = ws;
	h->ws_bytes = bytes;
	return CUBLAS_STATUS_SUCCESS;
}

extern "C" cublasStatus_t
cublasSetMathMode(cublasHandle_t h, cublasMath_t)
{
	return h == NULL ? CUBLAS_STATUS_NOT_INITIALIZED : CUBLAS_STATUS_SUCCESS;
}

extern "C" cublasStatus_t
cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
             const void *alpha, const void *A, cudaDataType_t at, int lda, const void *B,
             cudaDataType_t bt, int ldb, const void *beta, void *C, cudaDataType_t ct, int ldc,
             cublasComputeType_t compute, cublasGemmAlgo_t algo)
{
	api_lock l;

	(void)algo;
	if (h == NULL)
		return CUBLAS_STATUS_NOT_INITIALIZED;
	int a_rows = ta == CUBLAS_OP_N ? m : k, a_cols = ta == CUBLAS_OP_N ? k : m;
	int b_rows = tb == CUBLAS_OP_N ? k : n, b_cols = tb == CUBLAS_OP_N ? n : k;
	if (m < 0 || n < 0 || k < 0 || lda < (a_rows > 1 ? a_rows : 1) ||
	    ldb < (b_rows > 1 ? b_rows : 1) || ldc < (m > 1 ? m : 1) || ta == CUBLAS_OP_C ||
	    tb == CUBLAS_OP_C || alpha == NULL || beta == NULL)
		return CUBLAS_STATUS_INVALID_VALUE;
	if (elem_bytes(at) == 0 || at != bt || (ct != CUDA_R_32F && ct != at) ||
	    (compute != CUBLAS_COMPUTE_32F && compute != CUBLAS_COMPUTE_32F_FAST_16F &&
	     compute != CUBLAS_COMPUTE_32F_FAST_16BF && compute != CUBLAS_COMPUTE_32F_PEDANTIC))
		return CUBLAS_STATUS_NOT_SUPPORTED;
	if (m == 0 || n == 0)
		return CUBLAS_STATUS_SUCCESS;
	gemm_op *o = new gemm_op();
	o->ta = ta;
	o->tb = tb;
	o->m = m;
	o->n = n;
	o->k = k;
	o->lda = lda;
	o->ldb = ldb;
	o->ldc = ldc;
	memcpy(&o->alpha, alpha, 4);
	memcpy(&o->beta, beta, 4);
	o->A = A;
	o->B = B;
	o->C = C;
	o->at = at;
	o->bt = bt;
	o->ct = ct;
	o->a_bytes =
	        k == 0 ? 0 : ((size_t)(a_cols - 1) * (size_t)lda + (size_t)a_rows) * elem_bytes(at);
	o->b_bytes =
	        k == 0 ? 0 : ((size_t)(b_cols - 1) * (size_t)ldb + (size_t)b_rows) * elem_bytes(bt);
	o->c_bytes = ((size_t)(n - 1) * (size_t)ldc + (size_t)m) * elem_bytes(ct);
	if (!device_range(A, o->a_bytes, "cublasGemmEx", "A") ||
	    !device_range(B, o->b_bytes, "cublasGemmEx", "B") ||
	    !device_range(C, o->c_bytes, "cublasGemmEx", "C")) {
		delete o;
		return CUBLAS_STATUS_EXECUTION_FAILED;
	}
	cudaError_t e = enqueue(h->st, o);
	return e == cudaSuccess ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_EXECUTION_FAILED;
}
