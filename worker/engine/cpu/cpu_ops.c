/*
 * cpu_ops.c - element-wise ops of the forward step, with ggml's arithmetic
 * where it matters for matching llama.cpp's logits: RMSNorm sums squares in
 * double, RoPE advances theta by repeated multiplication in float, SiLU is
 * x / (1 + e^-x).
 */
#include <math.h>

#include "cpu.h"

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

void
cpu_swiglu(float *g, const float *u, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}
