/*
 * cpu_ops.c - element-wise ops of the forward step, with ggml's arithmetic
 * where it matters for matching llama.cpp's logits: RMSNorm sums squares in
 * double, RoPE advances theta by repeated multiplication in float, SiLU is
 * x / (1 + e^-x), GELU is tanh's approximation looked up for x rounded to F16.
 */
#include <math.h>

#include "cpu.h"
#include "engine/model/model.h"
#include "gguf/fp16.h"

void
cpu_rmsnorm(const float *x, const float *w, uint32_t n, float eps, float *out)
{
	double sum = 0.0;

	for (uint32_t i = 0; i < n; i++)
		sum += (double)(x[i] * x[i]);
	float scale = 1.0f / sqrtf((float)(sum / n) + eps);
	for (uint32_t i = 0; i < n; i++)
		out[i] = x[i] * scale * w[i];
}

void
cpu_rope(float *x, uint32_t n_heads, uint32_t head_dim, uint32_t n_rot, uint32_t pos, float base,
         bool neox, const float *factors)
{
	float theta_scale = powf(base, -2.0f / (float)n_rot);

	for (uint32_t h = 0; h < n_heads; h++) {
		float *v = x + (uint64_t)h * head_dim;
		float theta = (float)pos;
		for (uint32_t i = 0; i < n_rot / 2; i++) {
			float t = factors ? theta / factors[i] : theta;
			float c = cosf(t), s = sinf(t);
			uint32_t a = neox ? i : 2 * i, b = neox ? i + n_rot / 2 : 2 * i + 1;
			float x0 = v[a], x1 = v[b];
			v[a] = x0 * c - x1 * s;
			v[b] = x0 * s + x1 * c;
			theta *= theta_scale;
		}
	}
}

/* ggml's ramp: 1 below corr_dims[0], 0 above corr_dims[1], linear between (on i0 / 2). */
static float
yarn_ramp(const float *dims, uint32_t i0)
{
	float y = ((float)(i0 / 2) - dims[0]) / fmaxf(0.001f, dims[1] - dims[0]);

	return 1 - fminf(1, fmaxf(0, y));
}

void
cpu_rope_yarn(float *x, uint32_t n_heads, uint32_t head_dim, uint32_t n_rot, uint32_t pos,
              float base, bool neox, const struct model_yarn *y)
{
	float theta_scale = powf(base, -2.0f / (float)n_rot);
	float cs[CPU_ATTN_MAX_D];

	/* the cos/sin cache of one position, as ggml_rope_cache_init builds it */
	float theta = (float)pos;
	for (uint32_t i = 0; i < n_rot / 2; i++) {
		float interp = y->freq_scale * theta, t = interp, mscale = y->attn_factor;
		if (y->ext_factor != 0.0f) {
			float mix = yarn_ramp(y->corr_dims, 2 * i) * y->ext_factor;
			t = interp * (1 - mix) + theta * mix;
			mscale *= 1.0f + 0.1f * logf(1.0f / y->freq_scale);
		}
		cs[2 * i] = cosf(t) * mscale;
		cs[2 * i + 1] = sinf(t) * mscale;
		theta *= theta_scale;
	}
	for (uint32_t h = 0; h < n_heads; h++) {
		float *v = x + (uint64_t)h * head_dim;
		for (uint32_t i = 0; i < n_rot / 2; i++) {
			uint32_t a = neox ? i : 2 * i, b = neox ? i + n_rot / 2 : 2 * i + 1;
			float x0 = v[a], x1 = v[b], c = cs[2 * i], s = cs[2 * i + 1];
			v[a] = x0 * c - x1 * s;
			v[b] = x0 * s + x1 * c;
		}
	}
}

void
cpu_swiglu_oai(float *g, const float *u, uint32_t n, float alpha, float limit)
{
	for (uint32_t i = 0; i < n; i++) {
		float x = fminf(g[i], limit);
		float y = fminf(fmaxf(u[i], -limit), limit);
		g[i] = x / (1.f + expf(alpha * (-x))) * (y + 1.f);
	}
}

void
cpu_swiglu(float *g, const float *u, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

void
cpu_geglu(float *g, const float *u, uint32_t n, const float *tab)
{
	for (uint32_t i = 0; i < n; i++) {
		float x = g[i];
		if (x <= -10.0f)
			g[i] = 0.0f;
		else if (x >= 10.0f)
			g[i] = x * u[i];
		else
			g[i] = tab[fp16_from_f32(x)] * u[i];
	}
}
