/*
 * quant_test.c - fp16/bf16 conversions, hand-built known-answer blocks,
 * quantize/dequantize round trips per type, and byte identity with
 * ggml's reference quantizer on the stories260K Q8_0 and Q4_0 files.
 */
#include "base/rng.h"
#include "gguf/fp16.h"
#include "gguf/ggml_type.h"
#include "gguf/gguf.h"
#include "gguf/quant.h"
#include "t.h"

static void
test_fp16(void)
{
	T_EQ(fp16_from_f32(1.0f), 0x3c00);
	T_EQ(fp16_from_f32(-2.0f), 0xc000);
	T_EQ(fp16_from_f32(65504.0f), 0x7bff);
	T_EQ(fp16_from_f32(65520.0f), 0x7c00);          /* rounds to inf */
	T_EQ(fp16_from_f32(0x1p-24f), 0x0001);          /* smallest subnormal */
	T_EQ(fp16_from_f32(0x1p-25f), 0x0000);          /* tie to even: zero */
	T_EQ(fp16_from_f32(0x1.8p-24f), 0x0002);        /* 1.5 ulp ties up to even 2 */
	T_EQ(fp16_from_f32(1.0f + 0x1p-11f), 0x3c00);   /* tie to even */
	T_EQ(fp16_from_f32(1.0f + 0x1.8p-10f), 0x3c02); /* 1.5 ulp: tie to even 2 */
	T_EQ(fp16_from_f32(NAN) & 0x7e00, 0x7e00);
	T_NEAR(fp16_to_f32(0x3555), 0.333251953125, 0);
	T_NEAR(fp16_to_f32(0x0001), 0x1p-24, 0);
	T_TRUE(isinf(fp16_to_f32(0xfc00)) && fp16_to_f32(0xfc00) < 0);
	for (uint32_t h = 0; h < 0x10000; h++) { /* every finite half survives a round trip */
		if ((h & 0x7c00) == 0x7c00)
			continue;
		if (fp16_from_f32(fp16_to_f32((uint16_t)h)) != h)
			T_FAIL_("half 0x%04x does not round-trip", h);
	}
	T_EQ(bf16_from_f32(1.0f), 0x3f80);
	T_EQ(bf16_from_f32(1.0f + 0x1p-8f), 0x3f80); /* tie to even */
	T_NEAR(bf16_to_f32(0x4049), 3.140625, 0);
}

static void
test_known_q4_0_q8_0(void)
{
	uint8_t b[34] = {0};
	float y[32];

	b[0] = 0x00; /* d = 0.5 (0x3800) */
	b[1] = 0x38;
	b[2] = 0x9f; /* element 0: 15 - 8 = 7; element 16: 9 - 8 = 1 */
	T_OK(dequant_row(GGML_TYPE_Q4_0, b, y, 32));
	T_NEAR(y[0], 3.5, 0);
	T_NEAR(y[16], 0.5, 0);
	T_NEAR(y[1], -4.0, 0); /* qs[1] = 0: (0 - 8) * 0.5 */
	memset(b, 0, sizeof(b));
	b[1] = 0x3c; /* d = 1.0 */
	b[2] = (uint8_t)(int8_t)-5;
	b[33] = 127;
	T_OK(dequant_row(GGML_TYPE_Q8_0, b, y, 32));
	T_NEAR(y[0], -5, 0);
	T_NEAR(y[31], 127, 0);
}

static void
test_known_q4_k(void)
{
	uint8_t b[144] = {0};
	float y[256];

	b[1] = 0x3c;       /* d = 1.0 */
	b[3] = 0x38;       /* dmin = 0.5 */
	b[4] = 2;          /* sub-block 0: scale 2 */
	b[8] = 4;          /*              min 4 */
	b[12] = 0x21;      /* sub-block 4: scale 1, min 2 (low nibbles in scales[8]) */
	b[16] = 0x03;      /* element 0: q = 3 */
	b[16 + 64] = 0x05; /* element 128: q = 5 */
	T_OK(dequant_row(GGML_TYPE_Q4_K, b, y, 256));
	T_NEAR(y[0], 1.0 * 2 * 3 - 0.5 * 4, 0);
	T_NEAR(y[128], 1.0 * 1 * 5 - 0.5 * 2, 0);
	T_NEAR(y[32], 0, 0); /* sub-block 1: scale 0, min 0 */
	b[4] |= 0x40;        /* top bits of sub-block 4's scale: 1 → scale 17 */
	T_OK(dequant_row(GGML_TYPE_Q4_K, b, y, 256));
	T_NEAR(y[0], 1.0 * 2 * 3 - 0.5 * 4, 0); /* low 6 bits unchanged */
	T_NEAR(y[128], 1.0 * 17 * 5 - 0.5 * 2, 0);
}

static void
test_known_q6_k_q3_k(void)
{
	uint8_t b[210] = {0};
	float y[256];

	b[209] = 0x3c;      /* d = 1.0 */
	b[192 + 0] = 2;     /* scale of sub-block 0 */
	b[192 + 15] = 0xfe; /* scale of sub-block 15: -2 */
	b[0] = 0x0f;        /* element 0 low nibble 15, high bits 0 → 15 - 32 = -17 */
	b[128] = 0x03;      /* element 0 high bits 3 → 63 - 32 = 31 */
	T_OK(dequant_row(GGML_TYPE_Q6_K, b, y, 256));
	T_NEAR(y[0], 2 * 31, 0);
	T_NEAR(y[255], -2 * -32, 0); /* all-zero codes are -32 */
	uint8_t c[110] = {0};
	c[109] = 0x3c; /* d = 1.0 */
	c[96] = 0x01;  /* scale 0 low nibble 1 */
	c[104] = 0x02; /* scale 0 top bits 2 → 33 - 32 = 1 */
	c[0] = 0x01;   /* element 0: high bit set → q = low2 */
	c[32] = 0x03;  /* element 0: low2 = 3 */
	T_OK(dequant_row(GGML_TYPE_Q3_K, c, y, 256));
	T_NEAR(y[0], 3, 0);
	T_NEAR(y[1], -4 * 1, 0); /* high bit clear, low2 0 → -4 */
}

static void
test_known_mxfp4_q4_1_q5(void)
{
	uint8_t m[17] = {0}, q41[20] = {0}, q50[22] = {0}, q51[24] = {0};
	float y[32];

	m[0] = 128;  /* d = 2^0 */
	m[1] = 0x97; /* element 0: code 7 → 12; element 16: code 9 → -1 */
	T_OK(dequant_row(GGML_TYPE_MXFP4, m, y, 32));
	T_NEAR(y[0], 12, 0);
	T_NEAR(y[16], -1, 0);
	m[0] = 126; /* d = 2^-2 */
	T_OK(dequant_row(GGML_TYPE_MXFP4, m, y, 32));
	T_NEAR(y[0], 3, 0);
	q41[1] = 0x3c; /* d = 1 */
	q41[3] = 0xbc; /* m = -1 */
	q41[4] = 0x2f; /* element 0: 15, element 16: 2 */
	T_OK(dequant_row(GGML_TYPE_Q4_1, q41, y, 32));
	T_NEAR(y[0], 14, 0);
	T_NEAR(y[16], 1, 0);
	q50[1] = 0x3c; /* d = 1 */
	q50[2] = 0x01; /* bit 4 of element 0 */
	q50[6] = 0x03; /* element 0 low nibble 3 → (16 + 3) - 16 = 3; element 16 → 0 - 16 */
	T_OK(dequant_row(GGML_TYPE_Q5_0, q50, y, 32));
	T_NEAR(y[0], 3, 0);
	T_NEAR(y[16], -16, 0);
	q51[1] = 0x3c;      /* d = 1 */
	q51[3] = 0x3c;      /* m = 1 */
	q51[7] = 0x80;      /* bit 31 of qh: bit 4 of element 31 */
	q51[8 + 15] = 0x10; /* element 31 low bits 1 → 17, + m */
	T_OK(dequant_row(GGML_TYPE_Q5_1, q51, y, 32));
	T_NEAR(y[31], 18, 0);
	T_NEAR(y[0], 1, 0);
}

static void
test_known_q2_k_q5_k(void)
{
	uint8_t b[84] = {0}, c[176] = {0};
	float y[256];

	b[81] = 0x3c; /* d = 1.0 */
	b[83] = 0x38; /* dmin = 0.5 */
	b[0] = 0x23;  /* group 0 (elements 0-15): scale 3, min 2 */
	b[2] = 0x11;  /* group 2 (elements 32-47): scale 1, min 1 */
	b[8] = 0x05;  /* group 8 (elements 128-143): scale 5, min 0 */
	b[16] = 0x0e; /* qs[0]: element 0 → 2 (bits 0-1), element 32 → 3 (bits 2-3) */
	b[48] = 0x01; /* qs[32]: element 128 → 1 */
	T_OK(dequant_row(GGML_TYPE_Q2_K, b, y, 256));
	T_NEAR(y[0], 1.0 * 3 * 2 - 0.5 * 2, 0);
	T_NEAR(y[32], 1.0 * 1 * 3 - 0.5 * 1, 0);
	T_NEAR(y[128], 5 * 1, 0);
	T_NEAR(y[1], -0.5 * 2, 0); /* code 0: just the min */

	c[1] = 0x3c;        /* d = 1.0 */
	c[3] = 0x3c;        /* dmin = 1.0 */
	c[4] = 2;           /* sub-block 0: scale 2 */
	c[8] = 1;           /*              min 1 */
	c[5] = 1;           /* sub-block 1: scale 1, min 0 */
	c[15] = 0x21;       /* sub-block 7: scale 1, min 2 */
	c[16] = 0x03;       /* qh[0]: 5th bit of element 0 (bit 0) and 32 (bit 1) */
	c[16 + 31] = 0x80;  /* qh[31] bit 7: 5th bit of element 255 */
	c[48] = 0x07;       /* qs[0]: element 0 low 7, element 32 low 0 */
	c[48 + 127] = 0xf0; /* qs[127]: element 255 low 15 */
	T_OK(dequant_row(GGML_TYPE_Q5_K, c, y, 256));
	T_NEAR(y[0], 2 * (16 + 7) - 1, 0);
	T_NEAR(y[32], 1 * 16 - 0, 0);
	T_NEAR(y[255], 1 * 31 - 2, 0);
}

static void
test_known_float_types(void)
{
	static const uint16_t h[4] = {0x3c00, 0xc000, 0x7bff, 0x0001};
	static const uint16_t bf[3] = {0x3f80, 0xc0a0, 0x0000};
	float f[2] = {1.5f, -0.25f}, y[4];

	T_OK(dequant_row(GGML_TYPE_F16, h, y, 4));
	T_NEAR(y[0], 1, 0);
	T_NEAR(y[1], -2, 0);
	T_NEAR(y[2], 65504, 0);
	T_NEAR(y[3], ldexp(1, -24), 0); /* smallest subnormal */
	T_OK(dequant_row(GGML_TYPE_BF16, bf, y, 3));
	T_NEAR(y[0], 1, 0);
	T_NEAR(y[1], -5, 0);
	T_NEAR(y[2], 0, 0);
	T_OK(dequant_row(GGML_TYPE_F32, f, y, 2));
	T_NEAR(y[0], 1.5, 0);
	T_NEAR(y[1], -0.25, 0);
}

/* Round trip: relative RMS error below @tol and every value finite. */
static void
round_trip(uint32_t type, double tol)
{
	enum { N = 4096 };
	static float x[N], y[N];
	static uint8_t b[N * 4];
	struct rng r;
	double err = 0, ref = 0;

	rng_seed(&r, 42 + type);
	for (int i = 0; i < N; i++)
		x[i] = 0.02f * rng_normalish(&r) + (i % 512 == 0 ? 0.1f : 0.0f);
	T_OK(quant_row(type, x, b, N));
	T_OK(dequant_row(type, b, y, N));
	for (int i = 0; i < N; i++) {
		T_TRUE(isfinite(y[i]));
		err += (double)(x[i] - y[i]) * (double)(x[i] - y[i]);
		ref += (double)x[i] * (double)x[i];
	}
	if (!(sqrt(err / ref) < tol))
		T_FAIL_("%s: relative RMS error %.4f ≥ %.4f", ggml_type_name(type), sqrt(err / ref),
		        tol);
}

static void
test_round_trips(void)
{
	static const struct {
		uint32_t type;
		double tol;
	} c[] = {
	        {GGML_TYPE_F32, 1e-9},  {GGML_TYPE_F16, 1e-3},  {GGML_TYPE_BF16, 5e-3},
	        {GGML_TYPE_Q8_0, 0.01}, {GGML_TYPE_Q6_K, 0.03}, {GGML_TYPE_Q5_0, 0.06},
	        {GGML_TYPE_Q5_1, 0.06}, {GGML_TYPE_Q5_K, 0.06}, {GGML_TYPE_Q4_0, 0.12},
	        {GGML_TYPE_Q4_1, 0.12}, {GGML_TYPE_Q4_K, 0.12}, {GGML_TYPE_Q3_K, 0.25},
	        {GGML_TYPE_Q2_K, 0.5},
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		T_TRUE(quant_supported(c[i].type));
		round_trip(c[i].type, c[i].tol);
	}
	float x[32] = {0};
	uint8_t b[64];
	T_ERR(quant_row(GGML_TYPE_IQ2_XS, x, b, 256), ORCH_EUNSUPPORTED);
	T_ERR(quant_row(GGML_TYPE_Q4_0, x, b, 31), ORCH_EINVAL);
	T_OK(quant_row(GGML_TYPE_Q4_K, x, b, 0)); /* empty row */
}

/* Our Q8_0/Q4_0 encoders reproduce llama.cpp's files byte for byte. */
static void
test_matches_ggml(void)
{
	static const struct {
		const char *file;
		uint32_t type;
	} c[] = {{"models/stories260K-Q8_0.gguf", GGML_TYPE_Q8_0},
	         {"models/stories260K-Q4_0.gguf", GGML_TYPE_Q4_0}};
	struct gguf_file *ref = NULL;

	T_OK(gguf_open(t_path("models/stories260K.gguf"), &ref, NULL));
	for (size_t k = 0; k < 2; k++) {
		struct gguf_file *q = NULL;
		size_t checked = 0;
		T_OK(gguf_open(t_path(c[k].file), &q, NULL));
		for (size_t i = 0; i < gguf_tensor_count(q); i++) {
			const struct gguf_tensor *tq = gguf_tensor_at(q, i);
			const struct gguf_tensor *tf = gguf_find_tensor(ref, tq->name);
			if (tq->type != c[k].type)
				continue;
			T_TRUE(tf != NULL && tf->n_elements == tq->n_elements);
			uint8_t *mine = malloc((size_t)tq->nbytes);
			float *src = malloc((size_t)tf->nbytes);
			memcpy(src, tf->data,
			       (size_t)tf->nbytes); /* the mapping may be unaligned */
			T_OK(quant_row(c[k].type, src, mine, tf->n_elements));
			int same = memcmp(mine, tq->data, (size_t)tq->nbytes) == 0;
			free(mine);
			free(src);
			if (!same)
				T_FAIL_("%s: %s differs from llama.cpp's bytes", c[k].file,
				        tq->name);
			checked++;
		}
		T_EQ(checked, 32);
		gguf_close(q);
	}
	gguf_close(ref);
}

int
main(void)
{
	T_RUN(test_fp16);
	T_RUN(test_known_q4_0_q8_0);
	T_RUN(test_known_q4_k);
	T_RUN(test_known_q6_k_q3_k);
	T_RUN(test_known_mxfp4_q4_1_q5);
	T_RUN(test_known_q2_k_q5_k);
	T_RUN(test_known_float_types);
	T_RUN(test_round_trips);
	T_RUN(test_matches_ggml);
	return t_done();
}
